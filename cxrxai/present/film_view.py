"""What the browser needs to apply the display settings to a film figure itself, with no server.

The explorer's film is drawn in the browser by a small component (``pages/_film_view.py``): the
figure is :func:`cxrxai.present.film.film_figure`'s, and a display click (map on/off, Otsu
contour, opacity, floor, top-k, colour map, window/level) re-blends the film there and redraws
it in place, so the zoom stays. The component gets the film's grey levels on the display grid
(not yet windowed), the display values of the map (:func:`cxrxai.present.film_display.display_heat`,
float32), the top-k cuts and colour maps computed here by the very functions the server's blend
uses, and which traces are the map's layers. What the browser computes from them is
:func:`~cxrxai.present.film_display.blend` over :func:`~cxrxai.present.film_display.window`,
in float32 like NumPy, so the browser shows what ``film_figure`` draws for the same settings.
A figure of several films (:func:`cxrxai.present.film.film_grid`: compare, grid) is drawn the same
way, one film per image trace (:func:`browser_films`), all under one set of display settings.
"""

from __future__ import annotations

import base64

import numpy as np
import plotly.graph_objects as go

from ..errors import DataError
from .film import SEGMENTATION_NAME, display_grey
from .film_display import (
    DIVERGING,
    NEGATIVE_RGB,
    POSITIVE_RGB,
    colorscale,
    colour_lut,
    display_heat,
    top_k_cut,
)
from .overlay import COLORMAPS

__all__ = ["TOP_K", "browser_film", "browser_films", "layer_traces"]

#: The "Top %" choices (100: every value).
TOP_K = (100, 25, 10, 5, 1)
#: What :func:`browser_film` gives that is the same for every film of a figure (one display mode)
SHARED = ("signed", "luts", "bars")


def _b64(array: np.ndarray) -> str:
    """Little-endian bytes of an array, base64 (a Uint8Array or Float32Array in the browser)."""
    little = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"))
    return base64.b64encode(little.tobytes()).decode()


def layer_traces(fig: go.Figure) -> dict[str, list[int]]:
    """Indices of the map's layers in a film figure: the colour bar, the scored contour and the
    note shown instead of a bar when nothing is coloured (all hidden with the map)."""
    layers: dict[str, list[int]] = {"bar": [], "contour": [], "note": []}
    for k, trace in enumerate(fig.data):
        if trace.type != "scatter":
            continue
        if trace.name == SEGMENTATION_NAME:
            layers["contour"].append(k)
        elif trace.mode == "text":
            layers["note"].append(k)
        elif trace.marker is not None and trace.marker.showscale:
            layers["bar"].append(k)
    return layers


def browser_film(image: np.ndarray, saliency: np.ndarray | None, *, mode: str = "normalized",
                 smooth: bool = False, clip: float | None = None, dim: float = 1.0) -> dict:
    """The component's data for one film: grey levels (uint8) and map values (float32, absent
    without a map) on the display grid, ``cuts`` (the ``|value|`` each top-k choice keeps from,
    :func:`top_k_cut`), each colour map as 256 RGB rows (:func:`colour_lut`) and the colour bar's
    scale for it, a signed map's two colours, and ``dim`` (a factor on the opacity: the previous
    map while a new one computes)."""
    grey, (h, w), _ = display_grey(image)
    out = {"height": h, "width": w, "film": _b64(grey), "heat": None, "cuts": {}, "dim": float(dim),
           "signed": {"negative": NEGATIVE_RGB, "positive": POSITIVE_RGB},
           "luts": {name: colour_lut(name).tolist() for name in COLORMAPS},
           "bars": {name: DIVERGING if mode == "raw" else colorscale(name) for name in COLORMAPS}}
    if saliency is not None:
        heat, _ = display_heat(saliency, (h, w), mode=mode, smooth=smooth, clip=clip)
        out["heat"] = _b64(heat.astype(np.float32))
        out["cuts"] = {str(k): top_k_cut(heat, k) for k in TOP_K if k != 100}
    return out


def browser_films(fig: go.Figure, films: list[dict]) -> dict:
    """The component's data for a figure of one or more films: ``films`` is :func:`browser_film`
    of each film, in the order of the figure's image traces (``film_figure``: one; ``film_grid``:
    one per panel), all in one display mode. Each film is told its image trace and that trace's
    axes (the browser paints it under that subplot); the colour maps and the map's layers
    (:func:`layer_traces`) are given once, for the whole figure."""
    images = [k for k, trace in enumerate(fig.data) if trace.type == "image"]
    if not films or len(films) != len(images):
        raise DataError(f"a figure with {len(images)} film(s) needs as many films' data, got {len(films)}: "
                        "one browser_film per image trace, in the figure's order")
    own = [{name: value for name, value in data.items() if name not in SHARED} for data in films]
    placed = [{**data, "trace": k, "xaxis": fig.data[k].xaxis or "x", "yaxis": fig.data[k].yaxis or "y"}
              for data, k in zip(own, images)]
    return {**{name: films[0][name] for name in SHARED}, "films": placed, "layers": layer_traces(fig)}
