"""Input checks shared by the localization metrics (see :mod:`cxrxai.validate`)."""

from __future__ import annotations

import numpy as np

from ..postprocess import upsample
from ..validate import as_map, as_mask, same_shape

_map, _mask, _same = as_map, as_mask, same_shape


def _prepare(saliency, size: tuple[int, int] | None) -> np.ndarray:
    """The map upsampled bilinearly to ``size`` first when given (CheXlocalize's order), as float64 —
    or float32 when it comes as float32 (an upsampled map: its values, and so its ranking, unchanged)."""
    m = _map(saliency, dtype=np.float32 if getattr(saliency, "dtype", None) == np.float32 else np.float64)
    return upsample(m, size).astype(np.float64) if size is not None and m.shape != tuple(size) else m
