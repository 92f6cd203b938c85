"""A stored map back at its native resolution (what pages, exports and scoring read)."""

from __future__ import annotations

import numpy as np

from .occlusion import rebuild_map

__all__ = ["native_map"]


def native_map(stored) -> np.ndarray:
    """``stored`` (a :class:`~cxrxai.store.StoredMap`: ``kind``, ``values``, ``params``) as a 2-D map;
    occlusion window grids are rebuilt per pixel exactly (Captum's mean over covering windows)."""
    if stored.kind == "occlusion_grid":
        p = stored.params
        return rebuild_map(
            stored.values, int(p["patch"]), int(p["stride"]), int(p["height"]), int(p["width"])
        )
    return stored.values
