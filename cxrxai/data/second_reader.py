"""A synthetic second reader for the demo, so human-benchmark analyses run without real data.

Real second readers (CheXlocalize's benchmark radiologists) draw outlines that differ from the
reference by a few pixels of margin, a small shift, and a simplified shape, and mark one
"most representative point" per finding near its centre. For each ground-truth instance this
reader draws: the instance dilated or eroded by −2…+3 px, shifted by up to ±3 px, with its
outline smoothed (a morphological closing), and a point near the instance's deepest pixel with
±2 px jitter. Deterministic in the seed; it is labelled ``hb-synthetic`` everywhere it shows.
"""

from __future__ import annotations

import zlib

import cv2
import numpy as np
import pandas as pd

from .masks import decode_rle, encode_rle

__all__ = ["SYNTHETIC_READER", "synthetic_reader"]

SYNTHETIC_READER = "hb-synthetic"


def synthetic_reader(annotations: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """Second-reader masks and points from the ground-truth mask annotations (reader "gt")."""
    gt = annotations[(annotations["reader"] == "gt") & (annotations["kind"] == "mask")]
    rows = []
    for r in gt.itertuples(index=False):
        key = zlib.crc32(f"{r.image_id}|{r.label}|{int(r.instance)}".encode())
        rng = np.random.default_rng([seed, key])
        m = decode_rle(r.mask_rle, int(r.mask_height), int(r.mask_width)).astype(np.uint8)
        k = int(rng.integers(-2, 4))
        kernel = np.ones((2 * abs(k) + 1,) * 2, np.uint8)
        if k > 0:
            m = cv2.dilate(m, kernel)
        elif k < 0:
            eroded = cv2.erode(m, kernel)
            m = eroded if eroded.any() else m
        dy, dx = (int(v) for v in rng.integers(-3, 4, 2))
        m = np.roll(np.roll(m, dy, axis=0), dx, axis=1)
        m = cv2.morphologyEx(m, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
        base = {
            "image_id": r.image_id,
            "label": r.label,
            "reader": SYNTHETIC_READER,
            "instance": int(r.instance),
        }
        rows.append(
            {
                **base,
                "kind": "mask",
                "mask_rle": encode_rle(m.astype(bool)),
                "mask_height": int(r.mask_height),
                "mask_width": int(r.mask_width),
            }
        )
        dist = cv2.distanceTransform(
            decode_rle(r.mask_rle, int(r.mask_height), int(r.mask_width)).astype(np.uint8), cv2.DIST_L2, 3
        )
        y, x = np.unravel_index(int(np.argmax(dist)), dist.shape)
        jx, jy = rng.integers(-2, 3, 2)
        rows.append({**base, "kind": "point", "x": float(x + jx), "y": float(y + jy)})
    return pd.DataFrame(rows)
