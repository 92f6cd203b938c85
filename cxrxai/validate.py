"""Input checks shared by maps, metrics and overlays: one wording for one mistake.

Each check returns the array it accepted (as a new array: the caller's input is never altered)
and raises the caller's typed error (``error=``) saying what was received and what is allowed.

>>> as_map([[0.0, 1.0]]).shape
(1, 2)
>>> as_map([0.0, 1.0])
Traceback (most recent call last):
...
cxrxai.errors.MetricError: saliency map must be 2-D, got shape (2,)
>>> as_mask([[0, 1]]).dtype
dtype('bool')
"""

from __future__ import annotations

import numpy as np

from .errors import CxrxaiError, MetricError

__all__ = ["as_map", "as_mask", "same_shape"]


def as_map(m, name: str = "saliency map", *, error: type[CxrxaiError] = MetricError, dtype=np.float64,
           finite: bool = True) -> np.ndarray:
    """``m`` as a 2-D float array; NaN or infinite values are refused unless ``finite=False``."""
    arr = np.array(m, dtype=dtype)
    if arr.ndim != 2:
        raise error(f"{name} must be 2-D, got shape {arr.shape}")
    if finite and not np.isfinite(arr).all():
        raise error(f"{name} contains NaN or infinite values")
    return arr


def as_mask(m, name: str = "mask", *, error: type[CxrxaiError] = MetricError) -> np.ndarray:
    """``m`` as a 2-D boolean array; only bool or 0/1 values are accepted."""
    arr = np.asarray(m)
    if arr.ndim != 2:
        raise error(f"{name} must be 2-D, got shape {arr.shape}")
    if arr.dtype != bool and not np.isin(arr, (0, 1)).all():
        raise error(f"{name} must be binary (0/1 or bool)")
    return arr.astype(bool)


def same_shape(a: np.ndarray, b: np.ndarray, *, hint: str = "upsample the map to the mask first",
               error: type[CxrxaiError] = MetricError) -> None:
    """Refuse two arrays of different shapes, saying how to make them agree."""
    if a.shape != b.shape:
        raise error(f"shape mismatch: {a.shape} vs {b.shape}; {hint}")
