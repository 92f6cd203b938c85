"""Named steps applied *after* an explainer; the raw map itself is never altered in place.

The papers differ on these steps, so each is a separate function a caller chooses:

* :func:`upsample` — bilinear, ``align_corners=False`` (CheXlocalize's ``F.interpolate``);
* :func:`minmax` — (m − min) / (max − min); a constant map becomes all zeros (never NaN);
* :func:`positive` (ReLU, "only positive attributions", the thesis) and :func:`absolute`;
* :func:`percentile_clip` — Arun et al.'s greyscale: clip at the 99th percentile, then scale
  (the PAIR saliency library's ``VisualizeImageGrayscale``);
* :func:`ensemble` — the mean of member maps (Saporta et al.).
"""

from __future__ import annotations

import numpy as np

from .errors import ExplainerError
from .validate import as_map

__all__ = ["absolute", "ensemble", "minmax", "percentile_clip", "positive", "to_image", "upsample"]


def _check(m) -> np.ndarray:
    return as_map(m, error=ExplainerError, dtype=np.float32)


def upsample(m, size: tuple[int, int]) -> np.ndarray:
    """Bilinear resize to ``size = (height, width)`` with ``align_corners=False``.

    >>> upsample(np.array([[0.0, 1.0]]), (1, 4)).round(2).tolist()
    [[0.0, 0.25, 0.75, 1.0]]
    """
    arr = _check(m)
    if arr.shape == tuple(size):
        return arr.copy()
    import torch  # here: scoring a stored map (the store, the reports) needs no torch until a resize
    import torch.nn.functional as F

    t = torch.from_numpy(arr)[None, None]
    return F.interpolate(t, size=tuple(int(s) for s in size), mode="bilinear", align_corners=False)[
        0, 0
    ].numpy()


def minmax(m) -> np.ndarray:
    """Scale to [0, 1]; a constant map becomes all zeros (CheXlocalize would give NaN).

    >>> minmax(np.array([[2.0, 4.0], [3.0, 2.0]])).tolist()
    [[0.0, 1.0], [0.5, 0.0]]
    """
    arr = _check(m)
    lo, hi = float(arr.min()), float(arr.max())
    if hi - lo <= 0:
        return np.zeros_like(arr)
    return (arr - lo) / (hi - lo)


def positive(m) -> np.ndarray:
    """ReLU: keep positive attributions, zero the rest."""
    return np.maximum(_check(m), 0.0)


def absolute(m) -> np.ndarray:
    return np.abs(_check(m))


def percentile_clip(m, q: float = 99.0) -> np.ndarray:
    """Arun et al. / PAIR greyscale: (m − min) / (P_q − min), clipped to [0, 1].

    Apply to the channel-reduced absolute map (``reduce="abs_sum"``), as the PAIR library does.
    """
    arr = _check(m)
    vmax, vmin = float(np.percentile(arr, q)), float(arr.min())
    if vmax - vmin <= 0:
        return np.zeros_like(arr)
    return np.clip((arr - vmin) / (vmax - vmin), 0.0, 1.0)


def ensemble(maps) -> np.ndarray:
    """Mean of member maps of equal shape (Saporta et al.'s ensemble of checkpoints)."""
    arrs = [_check(m) for m in maps]
    if not arrs:
        raise ExplainerError("an ensemble needs at least one map")
    if len({a.shape for a in arrs}) != 1:
        raise ExplainerError(f"ensemble members differ in shape: {sorted({a.shape for a in arrs})}")
    return np.mean(arrs, axis=0)


def to_image(m, size: tuple[int, int]) -> np.ndarray:
    """The usual display pipeline: upsample bilinearly to image size, then min–max to [0, 1]."""
    return minmax(upsample(m, size))
