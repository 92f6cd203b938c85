"""The explorer's film as a small Streamlit component that applies display clicks in the browser.

``st.plotly_chart`` mounts a new chart whenever its figure changes (zoom lost) and every display
click went through the server (0.5–1 s). The component (``pages/_film_component/``: a static
``index.html`` and its scripts, no build step) draws :func:`cxrxai.present.film.film_figure`'s
figure with Plotly and has its own controls for map on/off, Otsu contour, opacity, floor, top-k,
colour map and window/level: it re-blends the film from
:func:`cxrxai.present.film_view.browser_film`'s data (only what a click changes) and paints it on
a canvas kept under Plotly's plot area, in line with its axes (``canvas.js``), so the zoom stays;
the map's colour bar and contour are hidden or recoloured where Plotly drew them (``layers.js``),
so Plotly draws nothing for a display click and the film does not move. The toolbar's camera
exports the figure with the film as shown. Its settings come back to Python 0.6 s after the last
click (the PNG export is what is on screen; the next case opens with them); that rerun sends the
same figure, which the browser does not draw again. A new map or case (a data click) goes through
the server as before. The last zoom is kept in the tab (``zoom.js``, under the component's key):
another map of the same case opens at it, even in a new frame (Streamlit mounts one when the
explainer's controls change), and with "Keep zoom" (PACS' linked views) another case opens on the
same film-relative region.

Plotly.js is the installed ``plotly`` package's own ``plotly.min.js`` (no CDN, no copy in the
repository): the component's directory is assembled once under the home's cache
(``components/film-<digest>/``), from the shipped files (:data:`FILES`) and that one,
since Streamlit serves a component only from one directory.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import plotly
import streamlit as st
import streamlit.components.v1 as components

from cxrxai.present.film_view import TOP_K, browser_films
from pages._component_dir import assembled

SOURCE = Path(__file__).parent / "_film_component"
FILES = ("index.html", "blend.js", "canvas.js", "layers.js", "zoom.js", "film.js")
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
#: What Plotly's toolbar does in the component (as ``ui.chart``: PNG export offline, no logo).
CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def component_dir() -> Path:
    """The component's directory under the home's cache (:func:`pages._component_dir.assembled`):
    the shipped files and Plotly's, under a digest of the files and the Plotly version."""
    return assembled("film", SOURCE, FILES, extra={"plotly.min.js": PLOTLY_JS}, version=plotly.__version__)


@st.cache_resource
def _component():
    return components.declare_component("cxrxai_film", path=str(component_dir()))


def browser_settings(value: dict | None, kind: str, floor: float) -> dict:
    """The settings the component shows: its last value, else the opening ones; the floor starts
    at the map kind's default (``floor``) whenever the kind changes."""
    start = {"kind": kind, "show_map": True, "otsu": True, "alpha": 0.6, "floor": floor, "top_k": TOP_K[0],
             "colormap": "jet", "lo": 0, "hi": 255, "keep_zoom": False}
    if not value:
        return start
    if value.get("kind") != kind:
        return {**start, **value, "kind": kind, "floor": floor}
    return {**start, **value}


def as_display(settings: dict) -> dict:
    """The component's settings as ``film_figure`` / ``film_png`` keywords."""
    lo, hi = settings["lo"], settings["hi"]
    return {"show_map": bool(settings["show_map"]), "otsu": bool(settings["otsu"]),
            "alpha": float(settings["alpha"]), "floor": float(settings["floor"]),
            "top_k": None if settings["top_k"] == 100 else settings["top_k"],
            "colormap": settings["colormap"], "level": ((lo + hi) / 2, max(1, hi - lo))}


def component_args(fig, payload: dict | list[dict], settings: dict) -> dict:
    """What the component is given for ``fig`` (``payload``: :func:`browser_film` of the same film,
    or a list of them for a figure of several films, as :func:`browser_films` takes them): the
    figure, its films' data with the map's layers, the settings and the figure's revision (the
    browser opens the films afresh only when it changes)."""
    spec = fig.to_json()
    films = payload if isinstance(payload, list) else [payload]
    data = browser_films(fig, films)
    # the films' own data too: two maps that differ only under the opening floor draw the same figure
    digest = hashlib.blake2b(spec.encode(), digest_size=16)
    for one in data["films"]:
        digest.update(f"{one['film']}|{one['heat']}|{one['dim']}|{one['trace']}".encode())
    return {"figure": spec, "payload": data, "settings": settings, "rev": digest.hexdigest(),
            "config": CONFIG}


def film_view(fig, payload: dict | list[dict], settings: dict, *, key: str) -> None:
    """Draw ``fig`` in the component (``payload``: :func:`browser_film` of the same film, or of
    each of its films) with ``settings`` (:func:`browser_settings` of ``st.session_state[key]``,
    the component's value: its last settings are already there when its own rerun starts); one set
    of display controls acts on every film of the figure."""
    _component()(**component_args(fig, payload, settings), zoom_key=key, key=key, default=None)
