"""SIIM-ACR Pneumothorax Segmentation (Kaggle 2019): ``train-rle.csv`` and DICOM images.

``train-rle.csv`` has ``ImageId`` and ``" EncodedPixels"`` (with a leading space); ``-1`` means no
pneumothorax; several rows of one image are several instances. The RLE lists (start offset
counted from the end of the previous run, run length) over the image flattened column-major;
:func:`decode_siim_rle` decodes it at 1024 × 1024 (the published images' size), or, with
``read_headers=True``, at each DICOM's own Rows × Columns. Images are the
``<ImageId>.dcm`` files anywhere under ``root``. The CSV has no demographics: sex, age and view
come from the DICOM headers (read by ``load_dataset``, :mod:`._dicom_tags`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import DataError
from ..masks import encode_rle
from ._base import (
    DatasetTables,
    Problems,
    long_labels,
    patient_split,
    read_csv,
    require,
    with_age_bins,
)
from ._dicom_tags import read_dicom_tags
from ._registry import adapter

__all__ = ["DEMOGRAPHICS_HINT", "decode_siim_rle", "load_siim"]

#: How a user supplies missing sex / age / view (quoted when a subgroup report has no group).
DEMOGRAPHICS_HINT = ("the .dcm files under --root with PatientSex, PatientAge and ViewPosition in their "
                     "headers, or a folder dataset (--dataset folder) whose CSV has sex, age and view "
                     "columns")


def decode_siim_rle(rle: str, height: int = 1024, width: int = 1024) -> np.ndarray:
    """Kaggle SIIM relative RLE → (height, width) bool mask ("-1" → empty)."""
    text = str(rle).strip()
    mask = np.zeros(height * width, bool)
    if text in ("-1", ""):
        return mask.reshape(width, height).T
    try:
        nums = np.asarray(text.split(), dtype=np.int64)
    except ValueError:
        raise DataError(f"invalid SIIM RLE {text[:40]!r}…") from None
    if len(nums) % 2:
        raise DataError("SIIM RLE must hold (offset, length) pairs")
    pos = 0
    for offset, length in nums.reshape(-1, 2):
        start = pos + offset
        if start + length > mask.size or offset < 0 or length < 0:
            raise DataError(f"SIIM RLE runs past a {height}×{width} image")
        mask[start:start + length] = True
        pos = start + length
    return mask.reshape(width, height).T


@adapter("siim", hint=DEMOGRAPHICS_HINT)
def load_siim(root: str | Path, *, rle_csv: str | Path | None = None, read_headers: bool = False,
              fractions=(0.8, 0.1, 0.1), seed: int = 0, strict: bool = False) -> DatasetTables:
    root = Path(root)
    path = Path(rle_csv) if rle_csv else root / "train-rle.csv"
    problems = Problems(strict)
    df = read_csv(path, problems=problems)
    df.columns = [c.strip() for c in df.columns]
    require(df, ["ImageId", "EncodedPixels"], path)
    files = {}
    if root.is_dir():
        for dirpath, _, names in os.walk(root):
            for n in names:
                if n.endswith(".dcm"):
                    files[n[:-4]] = os.path.relpath(os.path.join(dirpath, n), root)
    ids = df["ImageId"].astype(str).drop_duplicates().reset_index(drop=True)
    images = pd.DataFrame(
        {
            "image_id": ids,
            "path": [files.get(i, f"{i}.dcm") for i in ids],
            "patient_id": ids,
            "sex": None,
            "age": np.nan,
            "view": None,
            "width": 1024.0,
            "height": 1024.0,
        }
    )
    if read_headers:
        _sizes(root, images)
    size_of = dict(zip(images.image_id, zip(images.height.astype(int), images.width.astype(int))))
    ann = []
    for i, r in df.iterrows():
        rle = str(r["EncodedPixels"]).strip()
        if rle == "-1":
            continue
        h, w = size_of.get(str(r["ImageId"]), (1024, 1024))
        try:
            m = decode_siim_rle(rle, h, w)
        except DataError as err:
            problems.add(path, i + 2, str(r["ImageId"]), str(err))
            continue
        ann.append({"image_id": str(r["ImageId"]), "label": "Pneumothorax", "reader": "gt", "kind": "mask",
                    "mask_rle": encode_rle(m), "mask_height": h, "mask_width": w})
    annotations = pd.DataFrame(ann)
    if len(annotations):
        annotations["instance"] = annotations.groupby("image_id").cumcount()
    positive = images["image_id"].isin(set(annotations.get("image_id", [])))
    images["split"] = patient_split(
        images["patient_id"], dict(zip(("train", "val", "test"), fractions)), seed
    )
    bad = problems.skipped()
    keep = ~images.image_id.isin(bad)
    return DatasetTables(
        name="siim",
        source="SIIM-ACR Pneumothorax",
        root=root,
        label_names=["Pneumothorax"],
        images=with_age_bins(images[keep].reset_index(drop=True)),
        labels=long_labels(images.image_id[keep], positive[keep].to_numpy(float)[:, None], ["Pneumothorax"]),
        annotations=annotations,
        problems=problems.frame(),
        config={"seed": seed},
    )


def _sizes(root: Path, images: pd.DataFrame) -> None:
    """Each image's Rows × Columns from its DICOM header (1024 × 1024, as published, when unreadable:
    the precompute reports an unreadable file when it decodes it)."""
    import pydicom

    sizes = []
    for rel in images["path"]:
        try:
            tags = read_dicom_tags(root / rel, ("Rows", "Columns"))
            sizes.append((float(tags["Rows"] or 1024), float(tags["Columns"] or 1024)))
        except (OSError, EOFError, pydicom.errors.InvalidDicomError):
            sizes.append((1024.0, 1024.0))
    images["height"], images["width"] = [h for h, _ in sizes], [w for _, w in sizes]
