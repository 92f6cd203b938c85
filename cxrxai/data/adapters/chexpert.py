"""CheXpert (Irvin et al., AAAI 2019) with CheXlocalize ground truth (Saporta et al. 2022).

CheXpert: ``train.csv`` / ``valid.csv`` (and CheXlocalize's ``test_labels.csv``) with ``Path``
like ``CheXpert-v1.0/valid/patient64541/study1/view1_frontal.jpg``. Uncertain labels (−1)
follow a policy: ``ignore`` (missing), ``zeros`` or ``ones``; blanks are negatives. Image ids
follow CheXlocalize: the path without the dataset folder and split, "/" → "_", no extension
(``patient64541_study1_view1_frontal``). CheXlocalize's "Airspace Opacity" is CheXpert's
"Lung Opacity" (stored under CheXpert's name).

CheXlocalize (``chexlocalize=`` folder): ``gt_annotations_{val,test}.json`` — polygons per
instance at the original image size ``img_size = [h, w]``, rasterised here (filled, PIL, as
CheXlocalize's ``annotation_to_segmentation.py``); ``gt_segmentations_*.json`` (COCO RLE) is
used when a CXR has no polygons; ``hb_annotations_test.json`` and ``hb_salient_pt_test.json``
become the second reader ``hb`` (masks and points). Masks are decoded at the image's own
(non-square) size — no resizing, so they stay aligned with the anatomy.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image, ImageDraw

from ...errors import DataError, UnknownNameError
from ..masks import decode_rle, encode_rle
from ._base import (
    UNCERTAIN_POLICIES,
    DatasetTables,
    Problems,
    chexpert_values,
    clean_age,
    clean_sex,
    escaping,
    long_labels,
    read_csv,
    require,
    with_age_bins,
    with_sources,
)
from ._registry import adapter

__all__ = [
    "CHEXPERT_LABELS",
    "DEMOGRAPHICS_HINT",
    "FROM_CHEXLOCALIZE",
    "TO_CHEXLOCALIZE",
    "UNCERTAIN_POLICIES",
    "chexlocalize_id",
    "load_chexpert",
    "polygon_mask",
]

CHEXPERT_LABELS = [
    "No Finding",
    "Enlarged Cardiomediastinum",
    "Cardiomegaly",
    "Lung Opacity",
    "Lung Lesion",
    "Edema",
    "Consolidation",
    "Pneumonia",
    "Atelectasis",
    "Pneumothorax",
    "Pleural Effusion",
    "Pleural Other",
    "Fracture",
    "Support Devices",
]
FROM_CHEXLOCALIZE = {"Airspace Opacity": "Lung Opacity"}
TO_CHEXLOCALIZE = {v: k for k, v in FROM_CHEXLOCALIZE.items()}
#: How a user supplies missing sex / age / view (quoted when a subgroup report has no group).
DEMOGRAPHICS_HINT = "the Sex, Age, Frontal/Lateral and AP/PA columns of train.csv / valid.csv"
_SPLIT_OF_FILE = {
    "train.csv": "train",
    "valid.csv": "val",
    "val_labels.csv": "val",
    "test_labels.csv": "test",
}


def chexlocalize_id(path: str) -> str:
    """``CheXpert-v1.0/valid/patient1/study1/view1_frontal.jpg`` → ``patient1_study1_view1_frontal``."""
    parts = str(path).replace("\\", "/").split("/")
    return "_".join(parts[2:]).rsplit(".", 1)[0]


def polygon_mask(contours: list, height: int, width: int) -> np.ndarray:
    """Union of filled polygons ([[x, y], ...] each) at (height, width)."""
    canvas = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(canvas)
    for c in contours:
        pts = [tuple(p) for p in c]
        if len(pts) >= 2:
            draw.polygon(pts, outline=1, fill=1)
    return np.asarray(canvas, dtype=bool)


def _relative(root: Path, csv_paths: pd.Series) -> pd.Series:
    """Paths relative to ``root``: the CSV's paths start with the dataset folder, which may be
    the root itself or one of its subfolders. Which leading parts to drop is decided once, on
    the first path that exists under ``root`` (one leading part when none does)."""
    parts = csv_paths.astype(str).str.replace("\\", "/", regex=False).str.split("/")
    drop = 1
    for first in parts.head(20):
        found = next((k for k in range(len(first)) if (root / "/".join(first[k:])).is_file()), None)
        if found is not None:
            drop = found
            break
    return parts.str[drop:].str.join("/")


@adapter("chexpert", hint=DEMOGRAPHICS_HINT)
def load_chexpert(root: str | Path, *, files=("train.csv", "valid.csv"), uncertain: str = "zeros",
                  chexlocalize: str | Path | None = None, strict: bool = False) -> DatasetTables:
    root = Path(root)
    if uncertain not in UNCERTAIN_POLICIES:
        raise UnknownNameError("uncertain-label policy", uncertain, UNCERTAIN_POLICIES)
    problems = Problems(strict)
    df = _read_lists(root, files, problems)
    labels = [c for c in CHEXPERT_LABELS if c in df.columns]
    if not labels:
        raise DataError(f"{root}: no CheXpert label columns; expected some of {CHEXPERT_LABELS}")
    ids = df["Path"].map(chexlocalize_id)
    rel = _relative(root, df["Path"])
    for i in np.flatnonzero(escaping(rel)):
        problems.add(df["_file"].iloc[i], int(df["_row"].iloc[i]), ids.iloc[i],
                     f"path {df['Path'].iloc[i]!r} escapes the dataset root")
    view = df.get("AP/PA", pd.Series(index=df.index, dtype=object)).where(
        df.get("Frontal/Lateral", pd.Series("Frontal", index=df.index)) == "Frontal", "LATERAL")
    images = pd.DataFrame({
        "image_id": ids, "path": rel, "patient_id": ids.str.split("_").str[0],
        "sex": clean_sex(df["Sex"]) if "Sex" in df else None,
        "age": _ages(df, problems, ids) if "Age" in df else np.nan,
        "view": view, "split": df["_split"], "width": np.nan, "height": np.nan,
    })
    files = "csv:" + df["_file"].map({f: Path(f).name for f in df["_file"].unique()})  # each row's CSV
    with_sources(images, dict.fromkeys(("sex", "age", "view"), files))
    values = chexpert_values(df[labels], uncertain)
    annotations = pd.DataFrame()
    if chexlocalize is not None:
        annotations, sizes = _chexlocalize(Path(chexlocalize), set(ids), problems)
        for image_id, (h, w) in sizes.items():
            images.loc[images.image_id == image_id, ["height", "width"]] = (h, w)
    bad = problems.skipped()
    keep = ~images.image_id.isin(bad)
    return DatasetTables(
        name="chexpert",
        source="CheXpert" + (" + CheXlocalize" if chexlocalize else ""),
        root=root,
        label_names=labels,
        images=with_age_bins(images[keep].reset_index(drop=True)),
        labels=long_labels(images.loc[keep, "image_id"], values[keep.to_numpy()].to_numpy(), labels),
        annotations=annotations[~annotations.image_id.isin(bad)] if len(annotations) else annotations,
        problems=problems.frame(),
        config={"uncertain": uncertain},
    )


def _ages(df: pd.DataFrame, problems: Problems, ids: pd.Series) -> pd.Series:
    """``Age`` cleaned file by file, so a problem row names the file and row the age came from."""
    parts = [clean_age(rows["Age"].set_axis(rows["_row"] - 2), file, problems, ids[rows.index])
             .set_axis(rows.index) for file, rows in df.groupby("_file", sort=False)]
    return pd.concat(parts).reindex(df.index)


def _read_lists(root: Path, files, problems: Problems) -> pd.DataFrame:
    """The CSVs of ``files`` that exist, concatenated, each row with its split, source file and
    row (``_row``, as a spreadsheet counts it)."""
    frames = []
    for name in files:
        path = root / name if not Path(name).is_absolute() else Path(name)
        if not path.is_file():
            continue
        df = read_csv(path, problems=problems)
        require(df, ["Path"], path)
        df["_split"] = _SPLIT_OF_FILE.get(path.name, "train")
        df["_file"] = str(path)
        df["_row"] = np.arange(len(df)) + 2
        frames.append(df)
    if not frames:
        raise DataError(f"none of {list(files)} found in {root}")
    return pd.concat(frames, ignore_index=True)


def _chexlocalize(folder: Path, known: set[str], problems: Problems) -> tuple[pd.DataFrame, dict]:
    rows, sizes = [], {}
    for split in ("val", "test"):
        for reader, name in (("gt", f"gt_annotations_{split}.json"), ("hb", f"hb_annotations_{split}.json")):
            path = folder / name
            if not path.is_file():
                continue
            for cxr, entry in json.loads(path.read_text()).items():
                h, w = (int(v) for v in entry["img_size"])
                sizes[cxr] = (h, w)
                for task, contours in entry.items():
                    if task == "img_size":
                        continue
                    label = FROM_CHEXLOCALIZE.get(task, task)
                    for k, contour in enumerate(contours):
                        rows.append(_mask_row(cxr, label, reader, k, polygon_mask([contour], h, w)))
        seg = folder / f"gt_segmentations_{split}.json"
        if seg.is_file():
            covered = {(r["image_id"], r["label"]) for r in rows if r["reader"] == "gt"}
            for cxr, tasks in json.loads(seg.read_text()).items():
                for task, rle in tasks.items():
                    label = FROM_CHEXLOCALIZE.get(task, task)
                    h, w = rle["size"]
                    sizes.setdefault(cxr, (h, w))
                    if (cxr, label) not in covered:
                        m = decode_rle(rle["counts"], h, w)
                        if m.any():
                            rows.append(_mask_row(cxr, label, "gt", 0, m))
        points = folder / f"hb_salient_pt_{split}.json"
        if points.is_file():
            for cxr, tasks in json.loads(points.read_text()).items():
                for task, pts in tasks.items():
                    for k, (x, y) in enumerate(pts):
                        rows.append(
                            {
                                "image_id": cxr,
                                "label": FROM_CHEXLOCALIZE.get(task, task),
                                "reader": "hb",
                                "instance": k,
                                "kind": "point",
                                "x": float(x),
                                "y": float(y),
                            }
                        )
    out = pd.DataFrame(rows)
    if len(out):
        for cxr in sorted(set(out.image_id) - known):
            problems.add(
                folder,
                None,
                cxr,
                "annotation for an image not in the CheXpert CSVs",
                action="annotation skipped",
            )
    return out, sizes


def _mask_row(cxr: str, label: str, reader: str, instance: int, mask: np.ndarray) -> dict:
    h, w = mask.shape
    return {"image_id": cxr, "label": label, "reader": reader, "instance": instance, "kind": "mask",
            "mask_rle": encode_rle(mask), "mask_height": h, "mask_width": w}
