"""Small rasterisation helpers for the phantom (pixel grids, polygons, smooth noise)."""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["Frame", "ellipse_mask", "fill_polygon", "grid", "polyline", "smooth_noise", "soften"]


class Frame:
    """Maps the phantom's thorax frame to pixels.

    Thorax units: ``u`` runs from -1 (patient's right lateral rib wall, image left) to +1
    (patient's left wall); ``v`` runs from 0 at the lung apices to 1 at the costophrenic
    angles. ``x = cx + u * half_width``, ``y = apex_y + v * height``.
    """

    def __init__(self, size: int, cx: float, half_width: float, apex_y: float, height: float):
        self.size, self.cx, self.half_width, self.apex_y, self.height = size, cx, half_width, apex_y, height

    def px(self, u, v) -> np.ndarray:
        """Pixel (x, y) coordinates of thorax points, as an (N, 2) float array."""
        u, v = np.broadcast_arrays(np.atleast_1d(np.asarray(u, float)), np.atleast_1d(np.asarray(v, float)))
        return np.stack([self.cx + u * self.half_width, self.apex_y + v * self.height], axis=-1)

    def uv(self) -> tuple[np.ndarray, np.ndarray]:
        """Thorax coordinates of every pixel centre, each (size, size)."""
        ys, xs = grid(self.size)
        return (xs - self.cx) / self.half_width, (ys - self.apex_y) / self.height

    def lengths(self, du: float = 0.0, dv: float = 0.0) -> float:
        """Length in pixels of a thorax-unit extent along u (or v)."""
        return abs(du) * self.half_width + abs(dv) * self.height


def grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column coordinate grids (float32) of a square image."""
    r = np.arange(size, dtype=np.float32)
    return np.meshgrid(r, r, indexing="ij")


def fill_polygon(points: np.ndarray, size: int) -> np.ndarray:
    """Binary mask (bool) of a polygon given in pixel (x, y) coordinates.

    Vertices are rounded at 1/16 pixel (cv2 ``shift=4``) so the raster is deterministic.
    """
    canvas = np.zeros((size, size), np.uint8)
    pts = np.round(np.asarray(points, float) * 16).astype(np.int32).reshape(-1, 1, 2)
    cv2.fillPoly(canvas, [pts], 1, lineType=cv2.LINE_8, shift=4)
    return canvas.astype(bool)


def polyline(layer: np.ndarray, points: np.ndarray, thickness: float, value: float) -> None:
    """Draw an open polyline of ``value`` onto a float32 layer, in place (overwrites)."""
    pts = np.round(np.asarray(points, float) * 16).astype(np.int32).reshape(-1, 1, 2)
    cv2.polylines(layer, [pts], False, float(value), max(1, int(round(thickness))), cv2.LINE_8, shift=4)


def ellipse_mask(size: int, center, axes, angle_deg: float = 0.0) -> np.ndarray:
    """Binary mask of a filled, rotated ellipse (``axes`` are semi-axes in pixels)."""
    canvas = np.zeros((size, size), np.uint8)
    c = tuple(int(round(float(v) * 16)) for v in center)
    ax = tuple(max(1, int(round(float(v) * 16))) for v in axes)
    cv2.ellipse(canvas, c, ax, float(angle_deg), 0, 360, 1, -1, cv2.LINE_8, shift=4)
    return canvas.astype(bool)


def soften(mask: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian-blurred float32 copy of a mask (sigma in pixels; 0 returns a float copy)."""
    out = mask.astype(np.float32)
    if sigma > 0:
        out = cv2.GaussianBlur(out, (0, 0), sigma, borderType=cv2.BORDER_REFLECT)
    return out


def smooth_noise(rng: np.random.Generator, size: int, sigma: float) -> np.ndarray:
    """Zero-mean, unit-variance Gaussian noise smoothed with a Gaussian of ``sigma`` pixels."""
    noise = rng.standard_normal((size, size)).astype(np.float32)
    if sigma > 0:
        noise = cv2.GaussianBlur(noise, (0, 0), sigma, borderType=cv2.BORDER_REFLECT)
    std = float(noise.std())
    return noise / std if std > 0 else noise
