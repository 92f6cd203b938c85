"""RSNA Pneumonia Detection (Kaggle 2018): ``stage_2_train_labels.csv`` boxes and DICOM images.

Columns ``patientId, x, y, width, height, Target`` — one row per box in 1024-px space, Target 0
rows have no box. ``stage_2_detailed_class_info.csv`` (optional) tells "Lung Opacity", "Normal"
and "No Lung Opacity / Not Normal"; ``exclude_not_normal=True`` keeps pneumonia and normal only
(Arun et al.'s curated set). Demographics come from DICOM headers, or from a headers CSV with
``patientId``/``PatientID``, ``PatientSex``, ``PatientAge`` (torchxrayvision ships one).
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
)

__all__ = ["load_rsna"]


def load_rsna(root: str | Path, *, labels_csv: str | Path | None = None, headers_csv: str | Path | None = None,
              exclude_not_normal: bool = False, fractions=(0.8, 0.1, 0.1), seed: int = 0,
              strict: bool = False) -> DatasetTables:
    root = Path(root)
    path = Path(labels_csv) if labels_csv else root / "stage_2_train_labels.csv"
    problems = Problems(strict)
    df = read_csv(path, problems=problems)
    require(df, ["patientId", "x", "y", "width", "height", "Target"], path)
    ids = df["patientId"].astype(str).drop_duplicates().reset_index(drop=True)
    images = pd.DataFrame({"image_id": ids, "path": [f"stage_2_train_images/{i}.dcm" for i in ids], "patient_id": ids,
                           "sex": None, "age": np.nan, "view": None, "width": 1024.0, "height": 1024.0})
    if headers_csv:
        h = read_csv(headers_csv, problems=problems)
        key = "patientId" if "patientId" in h else "PatientID"
        require(h, [key, "PatientSex", "PatientAge"], headers_csv)
        h = h.assign(_key=h[key].astype(str)).drop_duplicates("_key").set_index("_key")
        images["sex"] = clean_sex(images.image_id.map(h["PatientSex"]))
        images["age"] = clean_age(images.image_id.map(h["PatientAge"]), headers_csv, problems, images.image_id)
        if "ViewPosition" in h:
            images["view"] = images.image_id.map(h["ViewPosition"])
    boxes = df[df["Target"] == 1].copy()
    # Boxes are in the image's own pixels (1024 × 1024 as published); one crossing the edge of the
    # decoded image is clipped (or dropped) by the precompute, which knows each image's size.
    bad_box = (boxes["width"] <= 0) | (boxes["height"] <= 0) | (boxes["x"] + boxes["width"] <= 0) | \
              (boxes["y"] + boxes["height"] <= 0)
    for i in boxes.index[bad_box]:
        problems.add(path, int(i) + 2, str(df.at[i, "patientId"]), "box with no area or above/left of the image",
                     action="annotation skipped")
    boxes = boxes[~bad_box]
    annotations = pd.DataFrame({"image_id": boxes["patientId"].astype(str), "label": "Pneumonia", "reader": "gt",
                                "kind": "box", "x": boxes["x"], "y": boxes["y"], "w": boxes["width"], "h": boxes["height"]})
    annotations["instance"] = annotations.groupby("image_id").cumcount()
    positive = images.image_id.isin(set(df.loc[df["Target"] == 1, "patientId"].astype(str)))
    keep = pd.Series(True, index=images.index)
    info = root / "stage_2_detailed_class_info.csv"
    if exclude_not_normal and info.is_file():
        cls = read_csv(info, problems=problems).drop_duplicates("patientId").set_index("patientId")["class"]
        keep &= images.image_id.map(cls).ne("No Lung Opacity / Not Normal")
    images["split"] = patient_split(images["patient_id"], dict(zip(("train", "val", "test"), fractions)), seed)
    keep &= ~images.image_id.isin(problems.skipped())
    return DatasetTables(name="rsna", source="RSNA Pneumonia Detection", root=root, label_names=["Pneumonia"],
                         images=with_age_bins(images[keep].reset_index(drop=True)),
                         labels=long_labels(images.image_id[keep], positive[keep].to_numpy(float)[:, None], ["Pneumonia"]),
                         annotations=annotations[annotations.image_id.isin(set(images.image_id[keep]))],
                         problems=problems.frame(), config={"exclude_not_normal": exclude_not_normal, "seed": seed})
