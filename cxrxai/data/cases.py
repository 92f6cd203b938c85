"""Pixels and ground truth of a stored case, whatever its source.

Demo images are regenerated from their generator key (deterministic, ~30 ms); file-based
datasets are read from ``dataset.root / image.path``. A root that is not there (the dataset was
moved, renamed or is not mounted) is a :class:`~cxrxai.errors.DataError` naming the root as
stored and the command that re-roots the store.
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

__all__ = ["CaseMasks", "case_image", "case_masks", "missing_root"]


@lru_cache(maxsize=8)
def _phantom_config(text: str) -> PhantomConfig:
    return PhantomConfig.from_json(text)


def case_image(image_row: dict, dataset_row: dict) -> np.ndarray:
    """(H, W) uint8 pixels of one image given its ``images`` and ``datasets`` rows."""
    if image_row.get("generator_key"):
        config = dataset_row.get("config")
        if not config:
            raise DataError(
                f"dataset {dataset_row.get('dataset')!r} has no phantom config to regenerate images"
            )
        cfg = _phantom_config(config if isinstance(config, str) else json.dumps(config))
        return render(CaseSpec.from_json(image_row["generator_key"]), cfg).image
    root = Path(dataset_row.get("root") or ".")
    if not root.is_dir():
        raise DataError(missing_root({"dataset": image_row.get("dataset"), **dataset_row}))
    path = (root / str(image_row["path"])).resolve()
    if root.resolve() not in path.parents and path != root.resolve():
        raise DataError(f"image path {image_row['path']!r} escapes the dataset root {root}")
    return read_image(path)


def missing_root(dataset_row: dict) -> str:
    """Why a dataset's images cannot be opened when its root is not a folder, and the fix."""
    name, root = dataset_row.get("dataset"), dataset_row.get("root")
    stored = dataset_row.get("root_stored", root)
    store = dataset_row.get("store") or "STORE"
    where = f"the stored root {stored}"
    if stored is not None and str(stored) != str(root):
        where += (" (a relative path, from a store written before cxrxai stored absolute paths; read "
                  f"beside the store file as {root})")
    return (f"cannot open the images of dataset {name!r}: {where} does not exist (moved, renamed or not "
            "mounted?). If the images are now in NEWDIR, re-root the store: "
            f"`python -m cxrxai reroot --store {store} --dataset {name} --root NEWDIR`")


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
