"""Binary masks ↔ COCO compressed RLE (the CheXlocalize format) and boxes.

Masks travel through the store as pycocotools' compressed RLE strings (column-major), exactly
as ``gt_segmentations_*.json`` holds them, so CheXlocalize's own scripts can read our exports.
"""

from __future__ import annotations

import numpy as np
from pycocotools import mask as coco_mask

from ..errors import DataError

__all__ = ["bounding_box", "box_mask", "decode_rle", "encode_rle"]


def encode_rle(mask: np.ndarray) -> str:
    """Compressed COCO RLE ``counts`` string of a 2-D binary mask."""
    m = np.asarray(mask)
    if m.ndim != 2:
        raise DataError(f"a mask must be 2-D, got shape {m.shape}")
    if m.dtype != bool and not np.isin(m, (0, 1)).all():
        raise DataError("a mask must be binary (0/1 or bool)")
    rle = coco_mask.encode(np.asfortranarray(m.astype(np.uint8)))
    return rle["counts"].decode("ascii")


def decode_rle(counts: str, height: int, width: int) -> np.ndarray:
    """The (height, width) bool mask of a compressed COCO RLE string."""
    try:
        return coco_mask.decode({"size": [int(height), int(width)], "counts": counts.encode("ascii")}).astype(
            bool
        )
    except (ValueError, TypeError) as err:
        raise DataError(f"invalid RLE for a {height}x{width} mask: {err}") from None


def bounding_box(mask: np.ndarray) -> tuple[int, int, int, int]:
    """``(x, y, w, h)`` of the smallest box holding every True pixel (inclusive)."""
    ys, xs = np.nonzero(np.asarray(mask))
    if not len(xs):
        raise DataError("an empty mask has no bounding box")
    return int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)


def box_mask(box: tuple[float, float, float, float], height: int, width: int) -> np.ndarray:
    """Rasterise an ``(x, y, w, h)`` box (pixel units, top-left origin) into a bool mask.

    A pixel is inside when its centre is: columns ``ceil(x - 0.5) .. ceil(x + w - 0.5) - 1``,
    so integer boxes from :func:`bounding_box` round-trip exactly. The box is clipped to the image.

    >>> box_mask((1, 0, 2, 1), 2, 4).astype(int).tolist()
    [[0, 1, 1, 0], [0, 0, 0, 0]]
    """
    x, y, w, h = (float(v) for v in box)
    if w <= 0 or h <= 0:
        raise DataError(f"box {box} has no area")
    c0, c1 = int(np.ceil(x - 0.5)), int(np.ceil(x + w - 0.5))
    r0, r1 = int(np.ceil(y - 0.5)), int(np.ceil(y + h - 0.5))
    out = np.zeros((height, width), bool)
    out[max(r0, 0):max(min(r1, height), 0), max(c0, 0):max(min(c1, width), 0)] = True
    return out
