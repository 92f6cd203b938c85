"""NIH ChestX-ray14 (Wang et al., CVPR 2017), as downloaded from the NIH Box folder.

Files (in ``root`` unless given explicitly): ``Data_Entry_2017.csv`` (or the 2020 revision
``Data_Entry_2017_v2020.csv``, optionally gzipped), ``BBox_List_2017.csv`` (header
``Image Index,Finding Label,Bbox [x,y,w,h],,,`` — pandas names the columns ``Bbox [x``,
``y``, ``w``, ``h]``; boxes are in the 1024-px image space; it says "Infiltrate" where the
labels say "Infiltration"), ``train_val_list.txt`` / ``test_list.txt``, and the images in
``images/`` or ``images_001/images/`` … ``images_012/images/``.

Splits: ``official`` — the published test list; the train/val list split by patient into
train and val (``val_fraction`` of its images, seeded). ``alternative`` — the thesis's split:
every image of every patient with a box in test (15,938 images of 726 patients), the other
patients split into train and val by patient. Nothing is dropped by view or by "one image per
patient" (torchxrayvision's defaults would keep 125 of the 880 box images).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import DataError, UnknownNameError
from ...labels import canonical_finding
from ._base import (
    DatasetTables,
    Problems,
    clean_age,
    clean_sex,
    long_labels,
    patient_split,
    read_csv,
    require,
    with_age_bins,
    with_sources,
)
from ._registry import adapter

__all__ = ["DEMOGRAPHICS_HINT", "NIH_LABELS", "SPLITS", "load_nih"]

#: How a user supplies missing sex / age / view (quoted when a subgroup report has no group).
DEMOGRAPHICS_HINT = "the Patient Gender, Patient Age and View Position columns of Data_Entry_2017.csv"

NIH_LABELS = [
    "Atelectasis",
    "Cardiomegaly",
    "Effusion",
    "Infiltration",
    "Mass",
    "Nodule",
    "Pneumonia",
    "Pneumothorax",
    "Consolidation",
    "Edema",
    "Emphysema",
    "Fibrosis",
    "Pleural_Thickening",
    "Hernia",
    "No Finding",
]
SPLITS = ("official", "alternative")
_ENTRY = [
    "Data_Entry_2017_v2020.csv",
    "Data_Entry_2017_v2020.csv.gz",
    "Data_Entry_2017.csv",
    "Data_Entry_2017.csv.gz",
]
_COLS = {"Image Index", "Finding Labels", "Patient ID", "Patient Age", "Patient Gender", "View Position"}


def _find(root: Path, names) -> Path | None:
    return next((root / n for n in names if (root / n).is_file()), None)


def _normalize_headers(df: pd.DataFrame) -> pd.DataFrame:
    squeezed = {c.replace(" ", ""): c for c in _COLS}
    return df.rename(columns={c: squeezed.get(c.replace(" ", ""), c) for c in df.columns})


def _image_paths(root: Path) -> dict[str, str]:
    found = {}
    for folder in [root / "images", *sorted(root.glob("images_*/images"))]:
        if folder.is_dir():
            for entry in os.scandir(folder):
                found.setdefault(entry.name, os.path.relpath(entry.path, root))
    return found


@adapter("nih", hint=DEMOGRAPHICS_HINT)
def load_nih(root: str | Path, *, split: str = "official", data_entry: str | Path | None = None,
             bbox_list: str | Path | None = None, val_fraction: float = 0.15, seed: int = 0,
             strict: bool = False) -> DatasetTables:
    root = Path(root)
    if split not in SPLITS:
        raise UnknownNameError("NIH split", split, SPLITS)
    entry_path = Path(data_entry) if data_entry else _find(root, _ENTRY)
    if entry_path is None:
        raise DataError(f"no Data_Entry_2017*.csv in {root}; pass data_entry= or put it there")
    problems = Problems(strict)
    df = _normalize_headers(read_csv(entry_path, problems=problems))
    require(df, _COLS, entry_path)
    ids = df["Image Index"].astype(str)
    paths = _image_paths(root)
    width = next((c for c in df.columns if c.startswith("OriginalImage[Width")), None)
    height = next((c for c in df.columns if c.replace(" ", "") in ("Height]", "OriginalImageHeight")), None)
    images = pd.DataFrame({
        "image_id": ids, "path": [paths.get(i, f"images/{i}") for i in ids],
        "patient_id": df["Patient ID"].astype(str), "sex": clean_sex(df["Patient Gender"]),
        "age": clean_age(df["Patient Age"], entry_path, problems, ids), "view": df["View Position"],
        # the PNG's own size is known once decoded; Data_Entry's OriginalImage size is the film's
        # before NIH resampled it, used only to check the boxes below
        "width": np.nan, "height": np.nan,
    })
    with_sources(images, dict.fromkeys(("sex", "age", "view"), f"csv:{entry_path.name}"))
    original = pd.DataFrame({"width": pd.to_numeric(df[width], errors="coerce") if width else np.nan,
                             "height": pd.to_numeric(df[height], errors="coerce") if height else np.nan})
    findings = df["Finding Labels"].astype(str).str.split("|")
    known = set(NIH_LABELS)
    for i, labs in enumerate(findings):
        unknown = [lab for lab in labs if canonical_finding(lab) not in known]
        if unknown:
            problems.add(entry_path, i + 2, ids.iloc[i], f"unknown label(s) {unknown}; allowed: {NIH_LABELS}")
    matrix = np.array(
        [[float(lab in {canonical_finding(x) for x in labs}) for lab in NIH_LABELS] for labs in findings]
    )
    boxes = _boxes(root, bbox_list, images.assign(width=original.width, height=original.height), problems)
    images["split"] = _split(root, images, boxes, split, val_fraction, seed)
    bad = problems.skipped()
    keep = ~images["image_id"].isin(bad)
    return DatasetTables(
        name="nih", source="NIH ChestX-ray14", root=root, label_names=NIH_LABELS,
        images=with_age_bins(images[keep].reset_index(drop=True)),
        labels=long_labels(images.loc[keep, "image_id"], matrix[keep.to_numpy()], NIH_LABELS),
        annotations=boxes[~boxes["image_id"].isin(bad)], problems=problems.frame(),
        description="NIH ChestX-ray14 with the 2017 bounding boxes", config={"split": split, "seed": seed},
    )


def _boxes(root: Path, bbox_list, images: pd.DataFrame, problems: Problems) -> pd.DataFrame:
    path = Path(bbox_list) if bbox_list else _find(root, ["BBox_List_2017.csv", "BBox_List_2017.csv.gz"])
    if path is None:
        return pd.DataFrame(columns=["image_id", "label", "reader", "instance", "kind", "x", "y", "w", "h"])
    bb = read_csv(path, problems=problems)
    require(bb, ["Image Index", "Finding Label", "Bbox [x", "y", "w", "h]"], path)
    size = images.set_index("image_id")[["width", "height"]]
    rows = []
    for i, r in bb.iterrows():
        image_id, label = str(r["Image Index"]), canonical_finding(str(r["Finding Label"]).strip())
        if label not in NIH_LABELS:
            problems.add(path, i + 2, image_id, f"unknown box label {r['Finding Label']!r}",
                         action="annotation skipped")
            continue
        if image_id not in size.index:
            problems.add(
                path, i + 2, image_id, "box for an image missing from Data_Entry", action="annotation skipped"
            )
            continue
        x, y, w, h = (float(r[c]) for c in ("Bbox [x", "y", "w", "h]"))
        W, H = size.loc[image_id]
        if w <= 0 or h <= 0 or x < -1 or y < -1 or x + w > W + 1 or y + h > H + 1:
            problems.add(path, i + 2, image_id, f"box {x, y, w, h} lies outside the {W:.0f}×{H:.0f} image",
                         action="annotation skipped")
            continue
        rows.append(
            {
                "image_id": image_id,
                "label": label,
                "reader": "gt",
                "kind": "box",
                "x": x,
                "y": y,
                "w": w,
                "h": h,
            }
        )
    out = pd.DataFrame(rows, columns=["image_id", "label", "reader", "kind", "x", "y", "w", "h"])
    out["instance"] = out.groupby(["image_id", "label"]).cumcount()
    return out


def _split(
    root: Path, images: pd.DataFrame, boxes: pd.DataFrame, how: str, val_fraction: float, seed: int
) -> pd.Series:
    patients = images["patient_id"]
    if how == "alternative":
        box_patients = set(images.loc[images["image_id"].isin(set(boxes["image_id"])), "patient_id"])
        split = pd.Series("test", index=images.index, dtype=object)
        rest = ~patients.isin(box_patients)
        split[rest] = patient_split(patients[rest], {"train": 1 - val_fraction, "val": val_fraction}, seed)
        return split
    test_list = root / "test_list.txt"
    if test_list.is_file():
        test = set(test_list.read_text().split())
        split = pd.Series(
            np.where(images["image_id"].isin(test), "test", "train"), index=images.index, dtype=object
        )
    else:
        split = pd.Series("train", index=images.index, dtype=object)
    trainval = split == "train"
    split[trainval] = patient_split(
        patients[trainval], {"train": 1 - val_fraction, "val": val_fraction}, seed
    )
    return split
