"""What a page or the CLI shows: the film and its overlays (:mod:`film`, :mod:`overlay`, the PNG
export :mod:`film_png`), charts (:mod:`viz`), number display (:mod:`display`), the explorer's
panel state (:mod:`panel`), exports of maps and tables (:mod:`exports`) and their provenance
headers (:mod:`provenance`). Above the compute layers; never imports Streamlit."""
