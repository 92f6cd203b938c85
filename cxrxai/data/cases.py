"""Pixels and ground truth of a stored case, whatever its source.

Demo images are regenerated from their generator key (deterministic, ~30 ms); file-based
datasets are read from ``dataset.root / image.path``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DataError
from .io import read_image
from .masks import box_mask, decode_rle
from .phantom import CaseSpec, PhantomConfig, render

__all__ = ["CaseMasks", "case_image", "case_masks"]


@lru_cache(maxsize=8)
def _phantom_config(text: str) -> PhantomConfig:
    return PhantomConfig.from_json(text)


def case_image(image_row: dict, dataset_row: dict) -> np.ndarray:
    """(H, W) uint8 pixels of one image given its ``images`` and ``datasets`` rows."""
    if image_row.get("generator_key"):
        config = dataset_row.get("config")
        if not config:
            raise DataError(f"dataset {dataset_row.get('dataset')!r} has no phantom config to regenerate images")
        cfg = _phantom_config(config if isinstance(config, str) else json.dumps(config))
        return render(CaseSpec.from_json(image_row["generator_key"]), cfg).image
    root = Path(dataset_row.get("root") or ".")
    path = (root / str(image_row["path"])).resolve()
    if root.resolve() not in path.parents and path != root.resolve():
        raise DataError(f"image path {image_row['path']!r} escapes the dataset root {root}")
    return read_image(path)


class CaseMasks(dict):
    """``{(label, reader): (H, W) bool mask}`` — the union of that reader's instances."""


def case_masks(annotations: pd.DataFrame, height: int, width: int) -> CaseMasks:
    """Ground-truth masks per label and reader from stored annotation rows (masks, else boxes)."""
    out = CaseMasks()
    for (label, reader), grp in annotations.groupby(["label", "reader"], sort=True):
        mask = np.zeros((height, width), bool)
        kinds = set(grp["kind"])
        for r in grp.itertuples(index=False):
            if r.kind == "mask":
                m = decode_rle(r.mask_rle, r.mask_height, r.mask_width)
                if m.shape != (height, width):
                    raise DataError(f"{label} mask is {m.shape}, image is {(height, width)}")
                mask |= m
            elif r.kind == "box" and "mask" not in kinds:
                mask |= box_mask((r.x, r.y, r.w, r.h), height, width)
        out[(label, reader)] = mask
    return out
