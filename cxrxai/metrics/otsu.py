"""Otsu segmentation of a saliency map, as CheXlocalize's ``heatmap_to_segmentation.py`` draws it.

Part of :mod:`cxrxai.metrics.localization` (which re-exports :func:`otsu_mask`); conventions there.
The segmentation is computed from the map's values sorted once (:func:`otsu_from_sorted`), the sort
the ranking metrics share (:mod:`cxrxai.metrics.ranking`): the uint8 level CheXlocalize thresholds
is a non-decreasing function of the value, so its 256-bin histogram is found by bisecting the sorted
values, never by converting every pixel, and Otsu's level becomes a cut on the float values.
"""

from __future__ import annotations

import cv2
import numpy as np
from PIL import Image, ImageDraw

from ..errors import UnknownNameError
from ..postprocess import upsample
from ._maps import _map
from .labelled_sort import LabelledSort

__all__ = ["OTSU_VARIANTS", "otsu_from_sorted", "otsu_level", "otsu_mask"]

OTSU_VARIANTS = ("chexlocalize", "plain")
_FLT_EPSILON = float(np.finfo(np.float32).eps)


def otsu_mask(saliency, size: tuple[int, int] | None = None, *, variant: str = "chexlocalize") -> np.ndarray:
    """Binary segmentation of a saliency map by Otsu's threshold.

    Parameters
    ----------
    saliency : (h, w) array_like
        Finite saliency map, at any resolution.
    size : (int, int), optional
        ``(height, width)`` to upsample to first; the image's original size for CheXlocalize parity.
    variant : {"chexlocalize", "plain"}
        Whether the thresholded map's contours are filled (see Notes).

    Returns
    -------
    mask : ndarray of bool, the map's (upsampled) shape

    Notes
    -----
    u = uint8(255 · (m − min m) / max(m − min m)) (float32, truncation); Otsu's t maximises the
    between-class variance ω₀ω₁(μ₀ − μ₁)² of u's histogram (:func:`otsu_level`); pixels with u > t are
    foreground. ``"chexlocalize"`` (default) reproduces Saporta et al.'s ``heatmap_to_segmentation.py``:
    upsample (bilinear, align_corners=False) → min–max → uint8 → OpenCV Otsu → fill every contour
    polygon (RETR_TREE, CHAIN_APPROX_SIMPLE; contours of ≤ 1 point dropped; holes filled, single pixels
    vanish), drawn with PIL as the original does. ``"plain"`` stops after Otsu (u > t). A constant map
    gives an empty mask (CheXlocalize's division by zero: NaN).

    References
    ----------
    .. [1] Otsu N. (1979) A threshold selection method from gray-level histograms. IEEE Trans. Syst.
           Man Cybern. doi:10.1109/TSMC.1979.4310076
    .. [2] Saporta A. et al. (2022) Benchmarking saliency methods for chest X-ray interpretation. Nat.
           Mach. Intell. doi:10.1038/s42256-022-00536-x

    Examples
    --------
    >>> m = np.zeros((9, 9)); m[1:6, 1:6] = 1.0; m[3, 3] = 0.0; m[8, 8] = 1.0  # a ring and a dot
    >>> plain, filled = otsu_mask(m, variant="plain"), otsu_mask(m)
    >>> bool(plain[3, 3]), bool(plain[8, 8]), bool(filled[3, 3]), bool(filled[8, 8])
    (False, True, True, False)
    >>> bool(otsu_mask(np.ones((4, 4))).any())
    False
    """
    if variant not in OTSU_VARIANTS:
        raise UnknownNameError("Otsu variant", variant, OTSU_VARIANTS)
    m = _map(saliency, dtype=np.float32)  # float32 throughout, as CheXlocalize's torch code
    if size is not None and m.shape != tuple(size):
        m = upsample(m, size)
    return otsu_from_sorted(m, np.sort(m, axis=None), variant=variant)


def _levels(values: np.ndarray, low: np.float32, top: np.float32) -> np.ndarray:
    """CheXlocalize's uint8 level of float32 values: uint8(255 · ((v − low) / top)), truncated."""
    return np.uint8(255 * ((values - low) / top))


def _level_starts(ordered: np.ndarray, low: np.float32, top: np.float32) -> np.ndarray:
    """For each level k = 0 … 256, the first index of ``ordered`` whose level is ≥ k (its size if none):
    a bisection of all 257 levels at once, exact because the level never decreases along ``ordered``."""
    wanted = np.arange(257)
    lo, hi = np.zeros(257, np.int64), np.full(257, ordered.size, np.int64)
    while (lo < hi).any():
        mid = (lo + hi) // 2
        reached = _levels(ordered[np.minimum(mid, ordered.size - 1)], low, top).astype(np.int64) >= wanted
        searching = lo < hi
        hi = np.where(searching & reached, mid, hi)
        lo = np.where(searching & ~reached, mid + 1, lo)
    return lo


def otsu_level(histogram) -> int:
    """Otsu's level of a 256-bin histogram, computed as OpenCV's ``getThreshVal_Otsu_8u`` does (the
    same double-precision steps in the same order, the first maximum kept), so it equals
    ``cv2.threshold(..., cv2.THRESH_OTSU)``'s.

    >>> otsu_level([4] + [0] * 254 + [4])
    0
    """
    h = [int(c) for c in histogram]
    scale = 1.0 / sum(h)
    mu = 0.0
    for i, c in enumerate(h):
        mu += i * float(c)
    mu *= scale
    mu1 = q1 = max_sigma = 0.0
    best = 0
    for i, c in enumerate(h):
        p_i = c * scale
        mu1 *= q1
        q1 += p_i
        q2 = 1.0 - q1
        if min(q1, q2) < _FLT_EPSILON or max(q1, q2) > 1.0 - _FLT_EPSILON:
            continue
        mu1 = (mu1 + i * p_i) / q1
        mu2 = (mu - q1 * mu1) / q2
        sigma = q1 * q2 * (mu1 - mu2) * (mu1 - mu2)
        if sigma > max_sigma:
            max_sigma, best = sigma, i
    return best


def otsu_from_sorted(m: np.ndarray, ordered: np.ndarray | LabelledSort, *, variant: str = "chexlocalize"
                     ) -> np.ndarray:
    """:func:`otsu_mask` of a float32 map at its own size, given its values sorted ascending
    (``np.sort(m, axis=None)``, or its :func:`~cxrxai.metrics.labelled_sort.labelled_sort`): the
    level histogram from ``ordered``, then one comparison of ``m``."""
    low = ordered[0]
    top = ordered[-1] - low  # the maximum of m − min m: subtraction keeps the order
    if not top > 0:
        return np.zeros(m.shape, bool)
    starts = _level_starts(ordered, low, top)
    t = otsu_level(np.diff(starts)[:256])
    if starts[t + 1] >= ordered.size:  # no level above t
        return np.zeros(m.shape, bool)
    binary = m >= ordered[starts[t + 1]]  # level > t, i.e. value ≥ the smallest value at such a level
    return binary if variant == "plain" else _fill_contours(binary)


def _fill_contours(binary: np.ndarray) -> np.ndarray:
    """CheXlocalize's contour filling: every contour (RETR_TREE, CHAIN_APPROX_SIMPLE) of more than
    one point drawn as a filled polygon with PIL, outline included."""
    contours, _ = cv2.findContours(binary.view(np.uint8), cv2.RETR_TREE, cv2.CHAIN_APPROX_SIMPLE)
    canvas = Image.new("L", (binary.shape[1], binary.shape[0]), 0)
    draw = ImageDraw.Draw(canvas)
    for c in contours:
        if len(c) > 1:
            draw.polygon(c.ravel().tolist(), outline=1, fill=1)
    return np.asarray(canvas, dtype=bool)
