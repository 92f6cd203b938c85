"""RSNA Pneumonia Detection (Kaggle 2018): ``stage_2_train_labels.csv`` boxes and DICOM images.

Columns ``patientId, x, y, width, height, Target`` — one row per box in 1024-px space, Target 0
rows have no box. ``stage_2_detailed_class_info.csv`` (optional) tells "Lung Opacity", "Normal"
and "No Lung Opacity / Not Normal"; ``exclude_not_normal=True`` keeps pneumonia and normal only
(Arun et al.'s curated set). Demographics come from a headers CSV (``headers_csv=``) with
``patientId``/``PatientID``, ``PatientSex``, ``PatientAge`` (torchxrayvision ships one); what it
leaves missing is read from the DICOM headers by ``load_dataset`` (:mod:`._dicom_tags`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

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

__all__ = ["DEMOGRAPHICS_HINT", "load_rsna"]

#: How a user supplies missing sex / age / view (quoted when a subgroup report has no group).
DEMOGRAPHICS_HINT = ("--data-option headers_csv=FILE (patientId, PatientSex, PatientAge[, ViewPosition]; "
                     "torchxrayvision ships kaggle_stage_2_train_images_dicom_headers.csv.gz), or the "
                     "DICOM files under --root/stage_2_train_images with their headers")


@adapter("rsna", hint=DEMOGRAPHICS_HINT)
def load_rsna(
    root: str | Path,
    *,
    labels_csv: str | Path | None = None,
    headers_csv: str | Path | None = None,
    exclude_not_normal: bool = False,
    fractions=(0.8, 0.1, 0.1),
    seed: int = 0,
    strict: bool = False,
) -> DatasetTables:
    root = Path(root)
    path = Path(labels_csv) if labels_csv else root / "stage_2_train_labels.csv"
    problems = Problems(strict)
    df = read_csv(path, problems=problems)
    require(df, ["patientId", "x", "y", "width", "height", "Target"], path)
    ids = df["patientId"].astype(str).drop_duplicates().reset_index(drop=True)
    images = pd.DataFrame(
        {
            "image_id": ids,
            "path": [f"stage_2_train_images/{i}.dcm" for i in ids],
            "patient_id": ids,
            "sex": None,
            "age": np.nan,
            "view": None,
            "width": 1024.0,
            "height": 1024.0,
        }
    )
    if headers_csv:
        _read_headers_csv(images, headers_csv, problems)
    boxes = df[df["Target"] == 1].copy()
    # Boxes are in the image's own pixels (1024 × 1024 as published); one crossing the edge of the
    # decoded image is clipped (or dropped) by the precompute, which knows each image's size.
    bad_box = (boxes["width"] <= 0) | (boxes["height"] <= 0) | (boxes["x"] + boxes["width"] <= 0) | \
              (boxes["y"] + boxes["height"] <= 0)
    for i in boxes.index[bad_box]:
        problems.add(
            path,
            int(i) + 2,
            str(df.at[i, "patientId"]),
            "box with no area or above/left of the image",
            action="annotation skipped",
        )
    boxes = boxes[~bad_box]
    annotations = pd.DataFrame(
        {
            "image_id": boxes["patientId"].astype(str),
            "label": "Pneumonia",
            "reader": "gt",
            "kind": "box",
            "x": boxes["x"],
            "y": boxes["y"],
            "w": boxes["width"],
            "h": boxes["height"],
        }
    )
    annotations["instance"] = annotations.groupby("image_id").cumcount()
    positive = images.image_id.isin(set(df.loc[df["Target"] == 1, "patientId"].astype(str)))
    keep = pd.Series(True, index=images.index)
    info = root / "stage_2_detailed_class_info.csv"
    if exclude_not_normal and info.is_file():
        cls = read_csv(info, problems=problems).drop_duplicates("patientId").set_index("patientId")["class"]
        keep &= images.image_id.map(cls).ne("No Lung Opacity / Not Normal")
    images["split"] = patient_split(
        images["patient_id"], dict(zip(("train", "val", "test"), fractions)), seed
    )
    keep &= ~images.image_id.isin(problems.skipped())
    return DatasetTables(
        name="rsna",
        source="RSNA Pneumonia Detection",
        root=root,
        label_names=["Pneumonia"],
        images=with_age_bins(images[keep].reset_index(drop=True)),
        labels=long_labels(images.image_id[keep], positive[keep].to_numpy(float)[:, None], ["Pneumonia"]),
        annotations=annotations[annotations.image_id.isin(set(images.image_id[keep]))],
        problems=problems.frame(),
        config={"exclude_not_normal": exclude_not_normal, "seed": seed},
    )


def _read_headers_csv(images: pd.DataFrame, headers_csv, problems: Problems) -> None:
    """Sex, age (and view) from a CSV of DICOM headers (``patientId``/``PatientID``, ``PatientSex``,
    ``PatientAge``[, ``ViewPosition``]); a bad value is a problem naming that CSV's row."""
    h = read_csv(headers_csv, problems=problems)
    key = "patientId" if "patientId" in h else "PatientID"
    require(h, [key, "PatientSex", "PatientAge"], headers_csv)
    h = h.assign(_key=h[key].astype(str), _row=h.index).drop_duplicates("_key").set_index("_key")
    row = images.image_id.map(h["_row"]).fillna(-2).astype(int)

    def by_row(column: str) -> pd.Series:
        return pd.Series(images.image_id.map(h[column]).to_numpy(), index=row.to_numpy())

    images["sex"] = clean_sex(by_row("PatientSex"), headers_csv, problems, images.image_id).to_numpy()
    images["age"] = clean_age(by_row("PatientAge"), headers_csv, problems, images.image_id).to_numpy()
    if "ViewPosition" in h:
        images["view"] = images.image_id.map(h["ViewPosition"])
    with_sources(images, dict.fromkeys(("sex", "age", "view"), f"csv:{Path(headers_csv).name}"))
