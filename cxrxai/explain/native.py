"""A stored map back at its native resolution (what pages, exports and scoring read), and the
occlusion window grid it is stored as (no torch until a grid is rebuilt per pixel)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["OcclusionGrid", "native_map"]


@dataclass(frozen=True)
class OcclusionGrid:
    """Window scores plus the geometry that rebuilds Captum's per-pixel map exactly."""

    scores: np.ndarray  # (rows, cols) float32: S(x) − S(x occluded at window (r, c))
    patch: int
    stride: int
    height: int
    width: int
    baseline: str = "black"
    output: str = "logit"
    seconds: float = 0.0

    def to_map(self) -> np.ndarray:
        """(height, width) map: per pixel, the mean score of the windows covering it."""
        from .occlusion import rebuild_map  # torch: only where a grid is rebuilt

        return rebuild_map(self.scores, self.patch, self.stride, self.height, self.width)

    def params(self) -> dict:
        d = asdict(self)
        for k in ("scores", "seconds"):
            d.pop(k)
        return d


def native_map(stored) -> np.ndarray:
    """``stored`` (a :class:`~cxrxai.store.StoredMap`: ``kind``, ``values``, ``params``) as a 2-D map;
    occlusion window grids are rebuilt per pixel exactly (Captum's mean over covering windows)."""
    if stored.kind == "occlusion_grid":
        p = stored.params
        return OcclusionGrid(stored.values, int(p["patch"]), int(p["stride"]), int(p["height"]),
                             int(p["width"])).to_map()
    return stored.values
