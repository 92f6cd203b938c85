"""The display controls of a film (how a map is shown, never what is computed).

``map_controls``: the settings that change the map's display values (scale, smoothing, clip),
which the server computes; the explorer's films (one film, compare and grid) apply the others in
the browser (``pages/_film_view.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from cxrxai.present import film
from pages import _common as ui
from pages import _film_view

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


@dataclass(frozen=True)
class FilmControls:
    """A film's display: ``values`` (what the server computes the map's display values with),
    ``shown`` (the browser's own settings as the component holds them), ``display`` (both, as the
    scores and downloads take them) and ``opening`` (the settings the figure is drawn at; the
    browser applies its own at once)."""

    values: dict
    shown: dict
    display: dict
    opening: dict


def film_controls(key, kind: str) -> FilmControls:
    """The controls of a film (or a layout's films) showing maps of ``kind``, the browser's part
    read from the component's value (``key("film")``), each starting at the kind's defaults."""
    values = map_controls(key, kind)
    floor = film.display_defaults(kind)["floor"]
    shown = _film_view.browser_settings(st.session_state.get(key("film")), kind, floor)
    return FilmControls(values, shown, {**values, **_film_view.as_display(shown)},
                        _film_view.as_display(_film_view.browser_settings(None, kind, floor)))
