"""How a map and a film are shown: the display transforms the viewer, its PNG export and the
browser-side film (:mod:`cxrxai.present.film_view`) share.

The film goes through a window/level; the map becomes display values (``display_heat``: its
positive part min–max, Captum's clipped scale, or signed), optionally only its top-k %, and is
blended over the film with an opacity that grows with its value above a ``floor`` (``blend``).
"""

from __future__ import annotations

import cv2
import numpy as np

from ..errors import DataError, UnknownNameError
from ..postprocess import minmax, positive, upsample
from .overlay import COLORMAPS

__all__ = ["CAPTUM_OUTLIER_PERCENT", "DISPLAY_DEFAULTS", "DISPLAY_MODES", "DIVERGING", "NEGATIVE_RGB",
           "POSITIVE_RGB", "blend", "colorscale", "colour_lut", "display_defaults", "display_heat",
           "top_k_cut", "window"]

#: How a map becomes the 0–1 (or −1–1) values the colour map shows: see ``display_heat``.
DISPLAY_MODES = ("normalized", "captum", "raw")
CAPTUM_OUTLIER_PERCENT = 2
#: The colours of a signed map's negative and positive values (the diverging scale's ends).
NEGATIVE_RGB, POSITIVE_RGB = (33, 102, 172), (178, 24, 43)
DIVERGING = [[0.0, "rgb(33,102,172)"], [0.5, "rgb(247,247,247)"], [1.0, "rgb(178,24,43)"]]
#: How each native map kind (``cxrxai.explain.registry.KINDS``) is shown when its panel opens. A
#: pixel-gradient map (saliency, IG, GradientSHAP…) is sparse: a few pixels hold most of its mass,
#: so min–max leaves nearly every pixel under the floor and the map is invisible. It is smoothed,
#: clipped at its 99th percentile before min–max and shown from 5 %. A CAM is smooth and an
#: occlusion grid coarse: both are shown as they are, transparent below 20 %.
DISPLAY_DEFAULTS = {"cam": {"smooth": False, "clip": None, "floor": 0.2},
                    "pixel": {"smooth": True, "clip": 99.0, "floor": 0.05},
                    "occlusion_grid": {"smooth": False, "clip": None, "floor": 0.2}}


def display_defaults(kind: str) -> dict:
    """The display settings a map of native ``kind`` opens with (see :data:`DISPLAY_DEFAULTS`)."""
    if kind not in DISPLAY_DEFAULTS:
        raise UnknownNameError("map kind", kind, tuple(DISPLAY_DEFAULTS))
    return dict(DISPLAY_DEFAULTS[kind])


def window(image: np.ndarray, center: float = 127.5, width: float = 255.0) -> np.ndarray:
    """Window/level of a uint8 film: grey ``center ± width / 2`` stretched to 0…255.

    >>> window(np.array([[0, 100, 150, 255]], np.uint8), center=125, width=50).tolist()
    [[0, 0, 255, 255]]
    """
    if width <= 0:
        raise DataError(f"window width must be positive, got {width}")
    lo = center - width / 2
    return np.clip((image.astype(np.float32) - lo) * (255.0 / width), 0, 255).round().astype(np.uint8)


def display_heat(
    saliency: np.ndarray,
    size: tuple[int, int],
    *,
    mode: str = "normalized",
    smooth: bool = False,
    top_k: float | None = None,
    clip: float | None = None,
) -> tuple[np.ndarray, tuple[float, float]]:
    """The map on the display grid and its scale in map units.

    ``normalized``: the positive part, upsampled bilinearly, min–max to [0, 1] (the scoring
    pipeline's view); ``captum``: the positive part divided by the value where its sorted
    cumulative sum reaches 98 %, clipped to [0, 1] (Captum's ``visualize_image_attr`` with
    ``outlier_perc=2``: a few extreme pixels cannot wash the rest out); ``raw``: the signed map
    divided by its largest magnitude, in [−1, 1].
    ``smooth`` blurs a pixel-level map (σ = 1 % of its side) so fine attributions are visible;
    ``top_k`` (percent) keeps only the largest values, the rest NaN (transparent); ``clip``
    (a percentile, ``normalized`` and ``raw``) makes that percentile of the map (of its magnitude
    for ``raw``) the top of the scale, everything above it full colour: a sparse map's few extreme
    pixels cannot leave the rest invisible (the colour bar says where the scale ends).
    """
    m = np.asarray(saliency, np.float32)
    if smooth and min(m.shape) >= 32:
        m = cv2.GaussianBlur(m, (0, 0), sigmaX=max(1.0, max(m.shape) / 100))
    if mode == "normalized":
        up = upsample(positive(m), size)
        lo, hi = float(up.min()), float(up.max())
        top = float(np.percentile(up, clip)) if clip is not None else hi
        if lo < top < hi:  # the clip is below the maximum: everything above it is full colour
            heat, scale = np.clip((up - lo) / (top - lo), 0, 1), (lo, top)
        else:
            heat, scale = minmax(up), (lo, hi)
    elif mode == "captum":
        from captum.attr._utils.visualization import _cumulative_sum_threshold  # Captum: this mode only

        up = upsample(positive(m), size)
        top = float(_cumulative_sum_threshold(up, 100 - CAPTUM_OUTLIER_PERCENT)) if up.max() > 0 else 0.0
        heat, scale = (np.clip(up / top, 0, 1) if top > 0 else np.zeros_like(up)), (0.0, top)
    elif mode == "raw":
        up = upsample(m, size)
        top = float(np.percentile(np.abs(up), clip)) if clip is not None else 0.0
        peak = top or float(np.abs(up).max()) or 1.0
        heat, scale = np.clip(up / peak, -1, 1), (-peak, peak)
    else:
        raise UnknownNameError("display mode", mode, DISPLAY_MODES)
    heat = heat.astype(np.float32)
    if top_k is not None:
        heat = np.where(np.abs(heat) >= top_k_cut(heat, top_k), heat, np.nan).astype(np.float32)
    return heat, scale


def top_k_cut(heat: np.ndarray, top_k: float) -> float:
    """The magnitude at and above which ``heat`` keeps its ``top_k`` % largest values (the rest
    transparent): one function for the server's figure and the browser's (which gets the cut).

    >>> top_k_cut(np.array([0.1, -0.9, 0.5, 0.3], np.float32), 50)
    0.4000000059604645
    """
    return float(np.percentile(np.abs(heat), 100 - top_k))


def blend(film_rgb: np.ndarray, heat: np.ndarray, *, colormap: str = "jet", alpha: float = 0.6,
          floor: float = 0.2) -> np.ndarray:
    """The map over the film with per-pixel opacity ``alpha · (|v| − floor) / (1 − floor)``: values
    at or under ``floor`` (and NaN) leave the film untouched. Signed heat uses the diverging scale."""
    h = np.asarray(heat, np.float32)
    signed = bool(np.nanmin(h) < 0) if np.isfinite(h).any() else False
    mag = np.nan_to_num(np.abs(h), nan=0.0)
    weight = alpha * np.clip((mag - floor) / max(1e-6, 1 - floor), 0, 1)
    weight[mag <= floor] = 0.0
    if signed:
        color = np.zeros((*h.shape, 3), np.float32)
        v = np.nan_to_num(h)
        for c in range(3):
            color[..., c] = np.where(v > 0, POSITIVE_RGB[c], NEGATIVE_RGB[c])
    else:
        color = colour_lut(colormap)[np.uint8(255 * np.clip(mag, 0, 1))].astype(np.float32)
    out = film_rgb.astype(np.float32) * (1 - weight[..., None]) + color * weight[..., None]
    return out.round().astype(np.uint8)


def colour_lut(colormap: str) -> np.ndarray:
    """The OpenCV colour map the overlay uses as 256 RGB rows (row ``k``: the colour of 255 · v = k):
    the server's blend indexes it, the browser gets it."""
    ramp = np.arange(256, dtype=np.uint8)[None, :]
    return cv2.applyColorMap(ramp, COLORMAPS.get(colormap, cv2.COLORMAP_JET))[0, :, ::-1].copy()


def colorscale(colormap: str, *, stops: int = 11) -> list:
    """A Plotly colour scale sampled from the OpenCV colour map the overlay uses."""
    rgb = colour_lut(colormap)[np.linspace(0, 255, stops).astype(np.uint8)]
    return [[i / (stops - 1), f"rgb({r},{g},{b})"] for i, (r, g, b) in enumerate(rgb.tolist())]
