"""Raster overlays for export (PNG) and display: masks, boxes and saliency on a radiograph.

Pure OpenCV/numpy — no browser, no kaleido — so overlays export offline.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import cv2
import numpy as np

from ..errors import DataError, UnknownNameError
from ..labels import FINDINGS
from ..postprocess import minmax, positive, upsample

__all__ = [
    "COLORMAPS",
    "DISPLAY_MODES",
    "LABEL_COLORS",
    "label_color",
    "MAX_DISPLAY_SIDE",
    "display_scale",
    "draw_boxes",
    "draw_masks",
    "heatmap_overlay",
    "render_case",
    "tile",
    "to_rgb",
    "with_legend",
]

#: One colour (RGB) per finding, from the Okabe–Ito colour-blind-safe palette plus two.
LABEL_COLORS: dict[str, tuple[int, int, int]] = dict(zip(FINDINGS, [
    (230, 159, 0), (86, 180, 233), (0, 158, 115), (240, 228, 66),
    (0, 114, 178), (213, 94, 0), (204, 121, 167), (255, 255, 255),
]))


def label_color(label: str) -> tuple[int, int, int]:
    """RGB of a label's outline: the NIH findings' fixed colours, any other label (CheXpert,
    VinDr, a folder's own) a stable pick from the same colour-blind-safe palette."""
    if label in LABEL_COLORS:
        return LABEL_COLORS[label]
    palette = list(LABEL_COLORS.values())
    return palette[zlib.crc32(label.encode()) % len(palette)]


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
        color = label_color(label)
        m = np.asarray(mask, np.uint8)
        if fill_alpha > 0:
            tint = np.zeros_like(out)
            tint[m.astype(bool)] = color
            out = np.where(
                m[..., None].astype(bool), (out * (1 - fill_alpha) + tint * fill_alpha).astype(np.uint8), out
            )
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
        cv2.rectangle(out, p0, p1, label_color(label), thickness)
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


#: Longest side of a rendered overlay: a 2828 px film is drawn at display size, not upscaled.
MAX_DISPLAY_SIDE = 1400


def display_scale(shape: tuple[int, int], scale: float = 2, max_side: int = MAX_DISPLAY_SIDE) -> float:
    """The factor an image of ``shape`` is drawn at: ``scale``, or less so the longest side stays
    within ``max_side`` (a large film is shrunk, a small phantom enlarged).

    >>> display_scale((224, 224)), display_scale((2320, 2828))
    (2, 0.4950495049504951)
    """
    return min(scale, max_side / max(shape))


def render_case(image: np.ndarray, saliency: np.ndarray | None = None, *, mode: str = "normalized",
                alpha: float = 0.45, colormap: str = "jet", masks=(), boxes=(), scale: float = 2,
                max_side: int = MAX_DISPLAY_SIDE, segmentation: np.ndarray | None = None) -> np.ndarray:
    """The radiograph at :func:`display_scale` with a saliency overlay and ground truth outlines.

    Map, masks and boxes are resampled to the same display grid as the film, so they stay where
    they are on the film whatever its size and aspect. ``mode``: ``normalized`` — positive part,
    upsampled bilinearly, min–max; ``raw`` — signed map on a diverging scale (blue negative, red
    positive, 0 transparent-grey); ``otsu`` — no colour, only the ``segmentation`` contour.
    ``segmentation`` (the scored Otsu mask at the image's size, :func:`cxrxai.present.panel.score_panel`)
    is outlined in every mode; nothing here segments a map itself.
    """
    if mode not in DISPLAY_MODES:
        raise UnknownNameError("display mode", mode, DISPLAY_MODES)
    if mode == "otsu" and segmentation is None:
        raise DataError("display mode otsu outlines a scored segmentation: pass segmentation= "
                        "(cxrxai.present.panel.score_panel gives the one the IoU was computed from)")
    if segmentation is not None and np.shape(segmentation) != image.shape:
        raise DataError(f"a segmentation of shape {np.shape(segmentation)} cannot outline an image of "
                        f"{image.shape}")
    h, w = image.shape
    f = display_scale((h, w), scale, max_side)
    size = (max(1, round(h * f)), max(1, round(w * f)))
    big = cv2.resize(image, (size[1], size[0]), interpolation=cv2.INTER_AREA if f < 1 else cv2.INTER_LINEAR)
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
    if segmentation is not None:
        seg = cv2.resize(np.asarray(segmentation, np.uint8), (size[1], size[0]),
                         interpolation=cv2.INTER_NEAREST)
        rgb = draw_masks(rgb, [("", seg)], thickness=2)
    thick = max(1, round(f))
    rgb = draw_masks(
        rgb,
        [
            (lab, cv2.resize(m.astype(np.uint8), (size[1], size[0]), interpolation=cv2.INTER_NEAREST))
            for lab, m in masks
        ],
        thickness=thick,
    )
    return draw_boxes(rgb, [(lab, tuple(v * f for v in b)) for lab, b in boxes], thickness=thick)


def tile(images: list[np.ndarray], columns: int, *, gap: int = 4) -> np.ndarray:
    """Arrange equally sized RGB images in a grid (white gaps)."""
    h, w = images[0].shape[:2]
    rows = -(-len(images) // columns)
    out = np.full((rows * h + (rows - 1) * gap, columns * w + (columns - 1) * gap, 3), 255, np.uint8)
    for k, img in enumerate(images):
        r, c = divmod(k, columns)
        out[r * (h + gap):r * (h + gap) + h, c * (w + gap):c * (w + gap) + w] = img
    return out


def with_legend(rgb: np.ndarray, lines: list[str], *, scale: float = 0.5) -> np.ndarray:
    """``rgb`` with a white strip underneath holding ``lines`` of text (what an exported overlay shows)."""
    h = int(22 * scale / 0.5)
    strip = np.full((h * len(lines) + 6, rgb.shape[1], 3), 255, np.uint8)
    for k, line in enumerate(lines):
        cv2.putText(strip, line, (4, h * (k + 1)), cv2.FONT_HERSHEY_SIMPLEX, scale, (0, 0, 0), 1, cv2.LINE_AA)
    return np.vstack([rgb, strip])
