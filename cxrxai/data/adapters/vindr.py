"""VinDr-CXR (Nguyen et al., Scientific Data 2022): boxes from several radiologists per image.

``annotations_train.csv`` (or torchxrayvision's ``vinbigdata-train.csv``): ``image_id,
class_name, class_id, rad_id, x_min, y_min, x_max, y_max``; "No finding" rows carry no box.
Each radiologist is a reader (``rad_id``); a finding is positive when any reader marked it
(``label_rule="any"``) or most of the image's readers did (``"majority"``). The reference
reader ``gt`` is the union of the radiologists' boxes of each positive finding (what makes it
positive under the rule); each radiologist stays a reader of their own. Images are
``train/<image_id>.dicom``; demographics are only in the DICOM headers (read by ``load_dataset``,
:mod:`._dicom_tags`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import UnknownNameError
from ._base import DatasetTables, Problems, long_labels, patient_split, read_csv, require, with_age_bins
from ._registry import adapter

__all__ = ["DEMOGRAPHICS_HINT", "load_vindr"]

#: How a user supplies missing sex / age / view (quoted when a subgroup report has no group).
DEMOGRAPHICS_HINT = ("the DICOM files under --root/train with PatientSex, PatientAge and ViewPosition in "
                     "their headers, or a folder dataset (--dataset folder) whose CSV has sex, age and view "
                     "columns")


@adapter("vindr", hint=DEMOGRAPHICS_HINT)
def load_vindr(
    root: str | Path,
    *,
    csv: str | Path | None = None,
    label_rule: str = "any",
    fractions=(0.8, 0.1, 0.1),
    seed: int = 0,
    strict: bool = False,
) -> DatasetTables:
    if label_rule not in ("any", "majority"):
        raise UnknownNameError("label rule", label_rule, ("any", "majority"))
    root = Path(root)
    path = (
        Path(csv)
        if csv
        else next(
            (root / n for n in ("annotations_train.csv", "train.csv") if (root / n).is_file()),
            root / "annotations_train.csv",
        )
    )
    problems = Problems(strict)
    df = read_csv(path, problems=problems)
    require(df, ["image_id", "class_name", "rad_id", "x_min", "y_min", "x_max", "y_max"], path)
    df["class_name"] = df["class_name"].astype(str).str.strip()
    labels = sorted(set(df["class_name"]))
    ids = df["image_id"].astype(str).drop_duplicates().reset_index(drop=True)
    readers = df.groupby("image_id")["rad_id"].nunique()
    marks = (
        df.groupby(["image_id", "class_name"])["rad_id"]
        .nunique()
        .unstack(fill_value=0)
        .reindex(ids, fill_value=0)
    )
    needed = 1 if label_rule == "any" else (readers.reindex(ids).to_numpy()[:, None] / 2)
    matrix = (marks[labels].to_numpy() >= needed).astype(float)
    box = df.dropna(subset=["x_min", "y_min", "x_max", "y_max"])
    bad = (box.x_max <= box.x_min) | (box.y_max <= box.y_min) | (box.x_min < 0) | (box.y_min < 0)
    for i in box.index[bad]:
        problems.add(path, int(i) + 2, str(box.at[i, "image_id"]), "box with no area or outside the image",
                     action="annotation skipped")
    box = box[~bad]
    annotations = pd.DataFrame(
        {
            "image_id": box["image_id"].astype(str),
            "label": box["class_name"],
            "reader": box["rad_id"].astype(str),
            "kind": "box",
            "x": box.x_min,
            "y": box.y_min,
            "w": box.x_max - box.x_min,
            "h": box.y_max - box.y_min,
        }
    )
    positive = pd.DataFrame(matrix, index=ids, columns=labels).stack()
    positive = set(positive[positive == 1].index)
    reference = annotations[[k in positive for k in zip(annotations.image_id, annotations.label)]].assign(
        reader="gt"
    )
    annotations = pd.concat([annotations, reference], ignore_index=True)
    annotations["instance"] = annotations.groupby(["image_id", "label", "reader"]).cumcount()
    images = pd.DataFrame({"image_id": ids, "path": [f"train/{i}.dicom" for i in ids], "patient_id": ids,
                           "sex": None, "age": np.nan, "view": None, "width": np.nan, "height": np.nan})
    images["split"] = patient_split(
        images["patient_id"], dict(zip(("train", "val", "test"), fractions)), seed
    )
    return DatasetTables(
        name="vindr",
        source="VinDr-CXR",
        root=root,
        label_names=labels,
        images=with_age_bins(images),
        labels=long_labels(ids, matrix, labels),
        annotations=annotations,
        problems=problems.frame(),
        config={"label_rule": label_rule},
    )
