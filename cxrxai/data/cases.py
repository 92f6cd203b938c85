"""Pixels and ground truth of a stored case, whatever its source.

Demo images are read from the demo's render cache under the dataset's root
(:func:`cxrxai.data.demo.load_demo` wrote it; a memory-mapped row, under a millisecond) when it
holds the image's very spec, else regenerated from their generator key (deterministic, 30-60 ms:
the explorer paid it on every case it had not shown yet); file-based datasets are read from
``dataset.root / image.path``. A root that is not there (the dataset was
moved, renamed or is not mounted) is a :class:`~cxrxai.errors.DataError` naming the root as
stored and the command that re-roots the store.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DataError
from .demo import cached_image
from .io import read_image
from .masks import box_mask, decode_rle
from .phantom import CaseSpec, PhantomConfig, render

__all__ = ["CaseMasks", "case_image", "case_masks", "masks_by_case", "missing_root"]


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
        text = config if isinstance(config, str) else json.dumps(config)
        cfg, root = _phantom_config(text), dataset_row.get("root")
        cached = cached_image(cfg, root, image_row["image_id"], image_row["generator_key"]) if root else None
        if cached is not None:
            return cached
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


#: The annotation columns a mask is made from, in the order :func:`_masks` reads them
_COLUMNS = ["image_id", "label", "reader", "kind", "mask_rle", "mask_height", "mask_width",
            "x", "y", "w", "h"]


def _rows(annotations: pd.DataFrame) -> Iterable[tuple]:
    """``annotations``' rows as plain tuples of :data:`_COLUMNS`, by image, label and reader (each
    group in its stored order); rows without a label or reader belong to no mask."""
    rows = annotations.dropna(subset=["label", "reader"])[_COLUMNS]
    return rows.sort_values(["image_id", "label", "reader"], kind="stable").itertuples(index=False, name=None)


def _masks(rows: Iterable[tuple], height: int, width: int) -> CaseMasks:
    """One image's masks from its rows (:func:`_rows` order): per (label, reader) the union of its
    masks, else of its boxes; a reader with points only has an empty mask."""
    out = CaseMasks()
    for (label, reader), group in itertools.groupby(rows, key=lambda r: (r[1], r[2])):
        group = list(group)
        has_mask = any(r[3] == "mask" for r in group)
        mask = np.zeros((height, width), bool)
        for _, _, _, kind, rle, mask_h, mask_w, x, y, w, h in group:
            if kind == "mask":
                m = decode_rle(rle, mask_h, mask_w)
                if m.shape != (height, width):
                    raise DataError(f"{label} mask is {m.shape}, image is {(height, width)}")
                mask |= m
            elif kind == "box" and not has_mask:
                mask |= box_mask((x, y, w, h), height, width)
        out[(label, reader)] = mask
    return out


def case_masks(annotations: pd.DataFrame, height: int, width: int) -> CaseMasks:
    """Ground-truth masks per label and reader from stored annotation rows (masks, else boxes)."""
    return _masks(_rows(annotations), height, width)


def masks_by_case(annotations: pd.DataFrame, sizes: Mapping[str, tuple[int, int]]
                  ) -> tuple[dict[str, CaseMasks], dict[str, DataError]]:
    """:func:`case_masks` of every image of ``annotations`` that has a size in ``sizes``, in one pass
    over the rows (a pandas group per image cost ~5 ms, a minute over a few thousand images), and
    the images whose annotations do not fit them, with the error."""
    out, bad = {}, {}
    rows = _rows(annotations[annotations["image_id"].isin(set(sizes))])
    for image_id, group in itertools.groupby(rows, key=lambda r: r[0]):
        try:
            out[image_id] = _masks(group, *sizes[image_id])
        except DataError as err:
            bad[image_id] = err
    for image_id in sorted(set(annotations["image_id"]).intersection(sizes) - out.keys() - bad.keys()):
        out[image_id] = CaseMasks()  # rows of no label or reader: no mask, as case_masks gives
    return out, bad
