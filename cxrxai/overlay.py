"""Raster overlays for export (PNG) and display: masks, boxes and saliency on a radiograph.

Pure OpenCV/numpy — no browser, no kaleido — so overlays export offline.
"""

from __future__ import annotations

from collections.abc import Iterable

import cv2
import numpy as np

from .errors import DataError, UnknownNameError
from .explain.postprocess import minmax, positive, upsample
from .labels import FINDINGS
from .metrics.localization import otsu_mask

__all__ = [
    "COLORMAPS",
    "DISPLAY_MODES",
    "LABEL_COLORS",
    "draw_boxes",
    "draw_masks",
    "heatmap_overlay",
    "render_case",
    "tile",
    "to_rgb",
]

#: One colour (RGB) per finding, from the Okabe–Ito colour-blind-safe palette plus two.
LABEL_COLORS: dict[str, tuple[int, int, int]] = dict(zip(FINDINGS, [
    (230, 159, 0), (86, 180, 233), (0, 158, 115), (240, 228, 66),
    (0, 114, 178), (213, 94, 0), (204, 121, 167), (255, 255, 255),
]))


def to_rgb(image: np.ndarray) -> np.ndarray:
    """A grey (H, W) uint8 radiograph as (H, W, 3) RGB."""
    img = np.asarray(image)
    if img.ndim != 2 or img.dtype != np.uint8:
        raise DataError(f"expected a (H, W) uint8 image, got {img.shape} {img.dtype}")
    return np.repeat(img[..., None], 3, axis=2)


def draw_masks(rgb: np.ndarray, masks: Iterable[tuple[str, np.ndarray]], *, thickness: int = 1,
               fill_alpha: float = 0.0) -> np.ndarray:
    """Outline (and optionally tint) each ``(label, mask)`` in the label's colour."""
    out = rgb.copy()
    for label, mask in masks:
        color = LABEL_COLORS.get(label, (255, 0, 0))
        m = np.asarray(mask, np.uint8)
        if fill_alpha > 0:
            tint = np.zeros_like(out)
            tint[m.astype(bool)] = color
            out = np.where(m[..., None].astype(bool), (out * (1 - fill_alpha) + tint * fill_alpha).astype(np.uint8), out)
        contours, _ = cv2.findContours(m, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
        cv2.drawContours(out, contours, -1, color, thickness, cv2.LINE_AA)
    return out


def draw_boxes(rgb: np.ndarray, boxes: Iterable[tuple[str, tuple[float, float, float, float]]], *,
               thickness: int = 1) -> np.ndarray:
    """Rectangle per ``(label, (x, y, w, h))`` in the label's colour."""
    out = rgb.copy()
    for label, (x, y, w, h) in boxes:
        p0 = (int(round(x)), int(round(y)))
        p1 = (int(round(x + w - 1)), int(round(y + h - 1)))
        cv2.rectangle(out, p0, p1, LABEL_COLORS.get(label, (255, 0, 0)), thickness)
    return out


def heatmap_overlay(rgb: np.ndarray, heat: np.ndarray, *, alpha: float = 0.45,
                    colormap: int = cv2.COLORMAP_JET) -> np.ndarray:
    """Blend a [0, 1] heat map (already at image size) over an RGB image; NaN shows nothing."""
    h = np.asarray(heat, np.float32)
    if h.shape != rgb.shape[:2]:
        raise DataError(f"heat map {h.shape} does not match the image {rgb.shape[:2]}")
    valid = np.isfinite(h)
    colored = cv2.applyColorMap(np.uint8(255 * np.clip(np.nan_to_num(h), 0, 1)), colormap)[..., ::-1]
    blend = (rgb * (1 - alpha) + colored * alpha).astype(np.uint8)
    return np.where(valid[..., None], blend, rgb)


COLORMAPS = {"jet": cv2.COLORMAP_JET, "inferno": cv2.COLORMAP_INFERNO, "viridis": cv2.COLORMAP_VIRIDIS,
             "turbo": cv2.COLORMAP_TURBO, "hot": cv2.COLORMAP_HOT}
DISPLAY_MODES = ("normalized", "raw", "otsu")


def render_case(image: np.ndarray, saliency: np.ndarray | None = None, *, mode: str = "normalized",
                alpha: float = 0.45, colormap: str = "jet", masks=(), boxes=(), scale: int = 2) -> np.ndarray:
    """The radiograph (upscaled ``scale``×) with a saliency overlay and ground truth outlines.

    ``mode``: ``normalized`` — positive part, upsampled bilinearly, min–max; ``raw`` — signed map
    on a diverging scale (blue negative, red positive, 0 transparent-grey); ``otsu`` — only the
    contour of the CheXlocalize Otsu segmentation.
    """
    if mode not in DISPLAY_MODES:
        raise UnknownNameError("display mode", mode, DISPLAY_MODES)
    h, w = image.shape
    size = (h * scale, w * scale)
    big = cv2.resize(image, (size[1], size[0]), interpolation=cv2.INTER_LINEAR)
    rgb = to_rgb(big)
    if saliency is not None:
        if mode == "normalized":
            rgb = heatmap_overlay(rgb, minmax(upsample(positive(saliency), size)), alpha=alpha,
                                  colormap=COLORMAPS.get(colormap, cv2.COLORMAP_JET))
        elif mode == "raw":
            up = upsample(saliency, size)
            peak = float(np.abs(up).max()) or 1.0
            signed = np.clip(up / peak, -1, 1)
            color = np.zeros((*size, 3), np.float32)
            color[..., 0] = np.clip(signed, 0, 1) * 255  # red: positive
            color[..., 2] = np.clip(-signed, 0, 1) * 255  # blue: negative
            weight = np.abs(signed)[..., None] * alpha
            rgb = (rgb * (1 - weight) + color * weight).astype(np.uint8)
        else:
            rgb = draw_masks(rgb, [("", otsu_mask(saliency, size))], thickness=2)
    rgb = draw_masks(rgb, [(lab, cv2.resize(m.astype(np.uint8), (size[1], size[0]), interpolation=cv2.INTER_NEAREST))
                           for lab, m in masks], thickness=max(1, scale))
    return draw_boxes(rgb, [(lab, tuple(v * scale for v in b)) for lab, b in boxes], thickness=max(1, scale))


def tile(images: list[np.ndarray], columns: int, *, gap: int = 4) -> np.ndarray:
    """Arrange equally sized RGB images in a grid (white gaps)."""
    h, w = images[0].shape[:2]
    rows = -(-len(images) // columns)
    out = np.full((rows * h + (rows - 1) * gap, columns * w + (columns - 1) * gap, 3), 255, np.uint8)
    for k, img in enumerate(images):
        r, c = divmod(k, columns)
        out[r * (h + gap):r * (h + gap) + h, c * (w + gap):c * (w + gap) + w] = img
    return out
