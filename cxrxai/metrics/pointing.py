"""Pointing metrics: does the map's peak (or a reader's point) fall inside the ground truth?

Part of :mod:`cxrxai.metrics.localization` (which re-exports these); conventions there.
"""

from __future__ import annotations

import numpy as np

from ._maps import _map, _mask, _prepare, _same
from .registry import SAPORTA, THESIS, Metric, register

__all__ = ["centre_hit", "coarse_pointing_game", "peak_hit", "pointing_game", "points_hit"]


def pointing_game(saliency, truth, *, size: tuple[int, int] | None = None) -> float:
    """Pointing-game hit: whether the map's maximum lies inside the ground-truth mask.

    Parameters
    ----------
    saliency : (h, w) array_like
        Finite saliency map, at any resolution.
    truth : (H, W) array_like of bool or 0/1
        Ground-truth mask.
    size : (int, int), optional
        Evaluation resolution; the mask's shape by default (and it must equal it).

    Returns
    -------
    hit : float
        1.0 (hit), 0.0 (miss) or NaN (empty mask).

    Notes
    -----
    hit = T[argmax m'], m' the map upsampled (bilinear, ``align_corners=False``) to the mask's
    resolution first, as CheXlocalize's ``get_hitrates`` (Saporta et al.'s hit rate; the pointing game
    of Zhang et al.). Ties go to the *first* maximum in row-major order (``np.argmax``), so a constant
    map points at the top-left pixel. An empty mask gives NaN (a float, never a bool). The thesis's
    point localization on the map's native grid is :func:`coarse_pointing_game`.

    References
    ----------
    .. [1] Saporta A. et al. (2022) Benchmarking saliency methods for chest X-ray interpretation. Nat. Mach.
           Intell. doi:10.1038/s42256-022-00536-x
    .. [2] Zhang J. et al. (2018) Top-down neural attention by excitation backprop. Int. J. Comput.
           Vis. doi:10.1007/s11263-017-1059-x

    Examples
    --------
    >>> t = np.array([[0, 0, 0, 1]])
    >>> pointing_game(np.array([[0.0, 1.0]]), t)  # upsampled to [0, .25, .75, 1]
    1.0
    >>> pointing_game(np.ones((1, 4)), t), pointing_game(np.ones((1, 4)), np.zeros((1, 4)))
    (0.0, nan)
    """
    t = _mask(truth, "ground-truth mask")
    m = _prepare(saliency, size or t.shape)
    _same(m, t)
    if not t.any():
        return float("nan")
    return peak_hit(m, t)


def peak_hit(m: np.ndarray, t: np.ndarray) -> float:
    """:func:`pointing_game` of a checked map ``m`` and a non-empty mask ``t`` of its shape: 1.0 when
    the first maximum of ``m`` (row-major) lies in ``t``, else 0.0."""
    r, c = np.unravel_index(int(np.argmax(m)), m.shape)
    return float(t[r, c])


def coarse_pointing_game(saliency, truth) -> float:
    """The thesis's point localization (PLA) for coarse maps, on the map's native grid.

    Parameters
    ----------
    saliency : (h, w) array_like
        Finite saliency map at its native resolution (e.g. a Grad-CAM or occlusion grid).
    truth : (H, W) array_like of bool or 0/1
        Ground-truth mask, at image resolution.

    Returns
    -------
    hit : float
        1.0, 0.0, or NaN for an empty mask.

    Notes
    -----
    The most important region is the first maximal cell (i, j) of the *native* map (row-major order).
    Cell (i, j) of an (h, w) map covers mask rows [i·H/h, (i+1)·H/h); its centre pixel is
    r = floor((i + ½)·H/h), c = floor((j + ½)·W/w) (clipped to the mask), and hit = T[r, c]: only that
    centre pixel counts, not any lesion pixel of the cell. Bel Bordes (2023) uses the centre of the most
    important region for low-resolution maps; :func:`pointing_game` is Saporta et al.'s upsampled argmax.

    References
    ----------
    .. [1] Bel Bordes G. (2023) Fairness and Explainability in Chest X-ray Image Classifiers. MSc
           thesis, Utrecht University.
    .. [2] Preechakul K. et al. (2022) Improved image classification explainability with high-accuracy
           heatmaps. iScience. doi:10.1016/j.isci.2022.103933

    Examples
    --------
    >>> sal = np.array([[0.0, 0.0], [1.0, 0.0]])  # maximal cell (1, 0): centre pixel (3, 1) of 4 × 4
    >>> t = np.zeros((4, 4)); t[3, 1] = 1
    >>> coarse_pointing_game(sal, t)
    1.0
    >>> t = np.zeros((4, 4)); t[2, 0] = 1  # inside that cell, but not its centre
    >>> coarse_pointing_game(sal, t)
    0.0
    """
    m = _map(saliency)
    t = _mask(truth, "ground-truth mask")
    if not t.any():
        return float("nan")
    return centre_hit(m, t)


def centre_hit(m: np.ndarray, t: np.ndarray) -> float:
    """:func:`coarse_pointing_game` of a checked map ``m`` and a non-empty bool mask ``t`` (any
    size): 1.0 when the centre pixel of the map's first maximal cell lies in ``t``, else 0.0."""
    i, j = np.unravel_index(int(np.argmax(m)), m.shape)
    r = min(int(np.floor((i + 0.5) * t.shape[0] / m.shape[0])), t.shape[0] - 1)
    c = min(int(np.floor((j + 0.5) * t.shape[1] / m.shape[1])), t.shape[1] - 1)
    return float(t[r, c])


def points_hit(points, truth) -> float:
    """Human-benchmark hit: whether any reader point falls inside the mask.

    Parameters
    ----------
    points : iterable of (x, y)
        A reader's most representative points in pixel coordinates (x = column, y = row).
    truth : (H, W) array_like of bool or 0/1
        Ground-truth mask.

    Returns
    -------
    hit : float
        1.0 if any point is inside, 0.0 if none is (or there is none), NaN for an empty mask.

    Notes
    -----
    hit = max_k T[int(y_k), int(x_k)], indexed as CheXlocalize's ``get_hb_hitrates`` (Saporta et al.'s
    human benchmark); ``int`` truncates toward zero. Points outside the mask's bounds count as misses.

    References
    ----------
    .. [1] Saporta A. et al. (2022) Benchmarking saliency methods for chest X-ray interpretation. Nat. Mach.
           Intell. doi:10.1038/s42256-022-00536-x

    Examples
    --------
    >>> t = np.array([[0, 1], [0, 0]])
    >>> points_hit([(1.7, 0.2), (9, 9)], t), points_hit([(0, 0)], t), points_hit([], np.zeros((2, 2)))
    (1.0, 0.0, nan)
    """
    t = _mask(truth, "ground-truth mask")
    if not t.any():
        return float("nan")
    for x, y in points:
        r, c = int(y), int(x)
        if 0 <= r < t.shape[0] and 0 <= c < t.shape[1] and t[r, c]:
            return 1.0
    return 0.0


register(Metric(
    "hit", "Hit", lambda s: peak_hit(s.upsampled, s.truth), "pointing",
    "pointing game: 1 when the map's maximum lies inside the ground truth",
    SAPORTA, views=("table1", "ranking", "localization", "subgroups", "geometry", "confidence", "cases"),
))
register(Metric(
    "pla", "PLA", lambda s: centre_hit(s.positive, s.truth), "pointing",
    "the thesis's point localization: the centre pixel of the map's most important cell lies in the lesion",
    THESIS, views=("table1", "sweep"),
))
