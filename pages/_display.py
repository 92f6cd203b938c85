"""The display controls of a film (how a map is shown, never what is computed).

``map_controls``: the settings that change the map's display values (scale, smoothing, clip),
which the server computes; the explorer's films (one film, compare and grid) apply the others in
the browser (``pages/_film_view.py``). ``display_controls``: all of them as Streamlit widgets, for
a film drawn through the server (no page draws one so since the compare and grid layouts moved to
the component; tests/app/test_page_settings.py still pins its "Top %").
"""

from __future__ import annotations

import streamlit as st

from cxrxai.present import film, overlay
from cxrxai.present.film_view import TOP_K
from pages import _common as ui

MODES = film.DISPLAY_MODES
CLIPS = (None, 99.5, 99.0, 98.0, 95.0)


def _scale(key, where) -> str:
    return where.radio(
        "Scale",
        MODES,
        horizontal=True,
        key=ui.kept(key("mode"), MODES[0], allowed=MODES),
        help="normalized: positive part, min–max (how maps are scored); captum: positive part over its "
        "98 % cumulative value, clipped (Captum's convention: outliers cannot wash the map out); "
        "raw: signed, diverging around 0",
    )


def _values(key, kind: str, e1, e2) -> dict:
    """Smoothing and the scale's top, starting at the map kind's defaults (``film.display_defaults``)."""
    start = film.display_defaults(kind)
    smooth = e2.toggle(
        "Smooth",
        key=ui.kept(key(f"smooth_{kind}"), start["smooth"]),
        help="blur pixel-level maps (IG, saliency, GradientSHAP) so they are visible; display only",
    )
    clip = e1.selectbox("Top of the scale", CLIPS,
                        key=ui.kept(key(f"clip_{kind}"), start["clip"], allowed=CLIPS),
                        format_func=lambda v: "map's maximum" if v is None else f"{v:g}th percentile",
                        help="a sparse pixel map (IG, saliency) has a few extreme pixels: with its 99th "
                             "percentile as the scale's top the rest is visible (normalized, raw)")
    return {"smooth": smooth, "clip": clip}


def map_controls(key, kind: str) -> dict:
    """The scale up front, smoothing and the scale's top folded: what the server computes the
    map's display values with (the film's other settings are the browser's)."""
    mode = _scale(key, st)
    with st.expander("Map values"):
        e1, e2 = st.columns(2)
        return {"mode": mode, **_values(key, kind, e1, e2)}


def display_controls(key, kind: str) -> dict:
    """Every display setting as a widget: map on/off and scale up front, the rest folded.
    Smoothing, clipping and the floor start at the map kind's defaults (``film.display_defaults``)."""
    start = film.display_defaults(kind)
    d1, d2 = st.columns([1, 2])
    show_map = d1.toggle(
        "Map", key=ui.kept(key("show_map"), True), help="flick between the film and the overlay"
    )
    mode = _scale(key, d2)
    with st.expander("Display"):
        e1, e2 = st.columns(2)
        otsu = e1.toggle("Otsu contour", key=ui.kept(key("otsu"), True),
                         help="the segmentation the IoU below was scored on (positive part, min–max, Otsu's "
                              "threshold, as CheXlocalize); none for a partial map")
        values = _values(key, kind, e1, e2)
        alpha = e1.slider("Opacity", 0.0, 1.0, step=0.05, key=ui.kept(key("alpha"), 0.6))
        floor = e2.slider("Transparent below", 0.0, 0.95, step=0.05,
                          key=ui.kept(key(f"floor_{kind}"), start["floor"]),
                          help="map values (on the colour bar's 0–1 scale) under this show the film only")
        top_k = e2.selectbox("Top %", TOP_K, key=ui.kept(key("top_k"), TOP_K[0], allowed=TOP_K),
                             format_func=lambda v: "all" if v == 100 else f"top {v} %")
        cmap = e1.selectbox("Colour map", list(overlay.COLORMAPS),
                            key=ui.kept(key("cmap"), "jet", allowed=list(overlay.COLORMAPS)))
        lo, hi = st.slider("Film window (grey levels)", 0, 255, key=ui.kept(key("level"), (0, 255)))
    return {
        "show_map": show_map,
        "mode": mode,
        "otsu": otsu,
        **values,
        "alpha": alpha,
        "floor": floor,
        "top_k": None if top_k == 100 else top_k,
        "colormap": cmap,
        "level": ((lo + hi) / 2, max(1, hi - lo)),
    }
