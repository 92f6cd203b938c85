"""Any folder of radiographs plus a CSV.

The CSV needs ``path`` (relative to ``root``); optional ``image_id`` (default: the path),
``patient_id``, ``sex``, ``age``, ``view``, ``split``. Labels are either one 0/1 column per label
(name them with ``labels=``) or a ``labels`` column of "|"-separated names. In label columns a blank
is unknown (missing) and −1 is uncertain, as CheXpert's labeler writes it, read by ``uncertain=``
as CheXpert's and MIMIC's are: ``zeros`` (the default: negative), ``ones`` (positive) or ``ignore``
(missing); the film keeps its other labels and a note row counts the −1 values. Boxes may come from
a second CSV with ``image_id`` (or ``path``), ``label``, ``x``, ``y``, ``w``, ``h`` in pixels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import DataError, UnknownNameError, shown
from ...labels import match_labels
from ._base import (
    UNCERTAIN_POLICIES,
    DatasetTables,
    Problems,
    clean_age,
    clean_sex,
    escaping,
    long_labels,
    name_list,
    patient_split,
    read_csv,
    require,
    with_age_bins,
    with_sources,
)
from ._registry import adapter

__all__ = ["DEMOGRAPHICS_HINT", "load_folder"]

#: How a user supplies missing sex / age / view (quoted when a subgroup report has no group).
DEMOGRAPHICS_HINT = ("sex (M/F), age (years) and view columns in the CSV of --data-option csv=FILE, or DICOM "
                     "images whose headers carry PatientSex, PatientAge and ViewPosition")


@adapter("folder", hint=DEMOGRAPHICS_HINT)
def load_folder(
    root: str | Path,
    csv: str | Path,
    *,
    labels: list[str] | str | None = None,
    boxes_csv: str | Path | None = None,
    uncertain: str = "zeros",
    name: str = "folder",
    seed: int = 0,
    strict: bool = False,
) -> DatasetTables:
    root = Path(root)
    if uncertain not in UNCERTAIN_POLICIES:
        raise UnknownNameError("uncertain-label policy", uncertain, UNCERTAIN_POLICIES)
    problems = Problems(strict)
    df = read_csv(csv, problems=problems)
    require(df, ["path"], csv)
    ids = df["image_id"].astype(str) if "image_id" in df else df["path"].astype(str)
    for i in np.flatnonzero(escaping(df["path"])):
        problems.add(
            csv, int(i) + 2, ids.iloc[i], f"path {df['path'].iloc[i]!r} escapes the dataset root {root}"
        )
    names, matrix = _label_matrix(df, labels, csv, ids, uncertain, problems)
    patients = df["patient_id"].astype(str) if "patient_id" in df else ids
    images = pd.DataFrame({
        "image_id": ids, "path": df["path"].astype(str), "patient_id": patients,
        "sex": clean_sex(df["sex"], csv, problems, ids) if "sex" in df else None,
        "age": clean_age(df["age"], csv, problems, ids) if "age" in df else np.nan,
        "view": df["view"] if "view" in df else None,
        "split": (_splits(df["split"], csv, problems) if "split" in df
                  else patient_split(patients, {"train": 0.8, "val": 0.1, "test": 0.1}, seed)),
        "width": np.nan, "height": np.nan,
    })
    with_sources(images, dict.fromkeys(("sex", "age", "view"), f"csv:{Path(csv).name}"))
    annotations = _boxes(boxes_csv, ids, names, problems) if boxes_csv else pd.DataFrame()
    keep = ~images.image_id.isin(problems.skipped())
    return DatasetTables(name=name, source=f"folder {root}", root=root, label_names=names,
                         images=with_age_bins(images[keep].reset_index(drop=True)),
                         labels=long_labels(images.image_id[keep], matrix[keep.to_numpy()], names),
                         annotations=annotations, problems=problems.frame())


def _label_matrix(df: pd.DataFrame, labels, csv, ids: pd.Series, uncertain: str, problems: Problems):
    """(names, (N, K) matrix of 1 / 0 / NaN): the 0/1 columns ``labels`` (−1 read by ``uncertain``,
    see :func:`_uncertain`; another value is a problem row, the film skipped) or, without
    ``labels``, the ``labels`` column of "|"-separated names."""
    if labels is None:
        if "labels" not in df:
            raise DataError(
                f"{Path(csv).name}: give labels= (0/1 columns) or a 'labels' column of '|'-separated names"
            )
        names = sorted({lab for s in df["labels"].dropna().astype(str) for lab in s.split("|") if lab})
        matrix = np.array(
            [[float(lab in str(s).split("|")) for lab in names] for s in df["labels"].fillna("")]
        )
        return names, matrix
    names = name_list(labels)
    require(df, names, csv)
    values = _uncertain(df[names].apply(pd.to_numeric, errors="coerce"), uncertain, csv, problems)
    bad = ~values.isin([0, 1]) & values.notna()
    for i, j in zip(*np.nonzero(bad.to_numpy())):
        problems.add(csv, int(i) + 2, ids.iloc[i],
                     f"label {names[j]} = {shown(df[names[j]].iloc[i])}; allowed 0, 1 or blank")
    return names, values.where(~bad).to_numpy(float)


#: What each ``uncertain`` policy does to a −1, in the words of the note row.
_UNCERTAIN_READ = {"ignore": ("missing", np.nan), "zeros": ("0", 0.0), "ones": ("1", 1.0)}


def _uncertain(values: pd.DataFrame, policy: str, csv, problems: Problems) -> pd.DataFrame:
    """``values`` with each −1 (uncertain) read as ``policy`` says (blanks stay missing), counted in
    one note row that names the other policies."""
    n = int((values == -1).to_numpy().sum())
    if n:
        others = ", ".join(f"{p!r} " + ("leaves them missing" if p == "ignore" else f"reads them as {w}")
                           for p, (w, _) in _UNCERTAIN_READ.items() if p != policy)
        problems.note(csv, f"{n} label value(s) -1 (uncertain) in {Path(csv).name}",
                      action=f"read as {_UNCERTAIN_READ[policy][0]} (uncertain={policy!r}; {others})")
    return values.replace(-1.0, _UNCERTAIN_READ[policy][1])


def _boxes(boxes_csv, ids: pd.Series, names: list[str], problems: Problems) -> pd.DataFrame:
    """The boxes CSV (``image_id`` or ``path``, label, x, y, w, h) as annotations; a box of an
    unknown image, with no area or of a label the dataset does not have is a problem row. A box
    label spelled otherwise than the dataset's (case, ``_``, a synonym of
    :data:`~cxrxai.labels.SYNONYMS`) takes the dataset's spelling, said in a note row, so the box
    meets that label's predictions and maps. Edges are checked against each decoded image by the
    precompute (clipped or dropped there)."""
    b = read_csv(boxes_csv, problems=problems)
    key = "image_id" if "image_id" in b else "path"
    require(b, [key, "label", "x", "y", "w", "h"], boxes_csv)
    given = b["label"].copy()
    b["label"] = _box_labels(given, names, boxes_csv, problems)
    unknown = ~b[key].astype(str).isin(set(ids))
    flat = ~unknown & ((b.w <= 0) | (b.h <= 0))
    other = ~unknown & ~flat & b["label"].isna()
    for i in b.index[unknown | flat | other]:
        if unknown[i]:
            what = "box of an image not in the CSV"
        elif flat[i]:
            what = f"box with no area (w {b.at[i, 'w']}, h {b.at[i, 'h']})"
        else:
            what = (f"box of {shown(given[i])}, which is none of the dataset's labels ({', '.join(names)}) "
                    "by name, case or synonym")
        problems.add(boxes_csv, int(i) + 2, str(b.at[i, key]), what, action="annotation skipped")
    b = b[~(unknown | flat | other)]
    annotations = pd.DataFrame(
        {
            "image_id": b[key].astype(str),
            "label": b["label"],
            "reader": "gt",
            "kind": "box",
            "x": b.x,
            "y": b.y,
            "w": b.w,
            "h": b.h,
        }
    )
    annotations["instance"] = annotations.groupby(["image_id", "label"]).cumcount()
    return annotations


def _box_labels(given: pd.Series, names: list[str], boxes_csv, problems: Problems) -> pd.Series:
    """Each box's label under the dataset's spelling (missing when it is none of ``names``), each
    renaming said once in a note row."""
    spelled = {}
    for text in given.dropna().astype(str).unique():
        match = match_labels([text], names)
        spelled[text] = match.names[0] if match.matched else None
        if match.matched and match.names[0] != text:
            n = int((given.astype(str) == text).sum())
            name = match.names[0]
            problems.note(boxes_csv, f"{n} box(es) labelled {text!r}, the dataset's label {name!r} spelled "
                                     f"otherwise ({match.how[0]})", action=f"read as {name!r}")
    return given.astype(str).map(spelled).where(given.notna(), None)


#: Spellings of the three splits the pipeline knows (thresholds are chosen on ``val``, reports
#: evaluate ``test``), compared without case or surrounding spaces.
SPLIT_NAMES = {"train": "train", "training": "train", "val": "val", "valid": "val", "validate": "val",
               "validation": "val", "dev": "val", "test": "test", "testing": "test"}


def _splits(values: pd.Series, csv, problems: Problems) -> pd.Series:
    """The CSV's split column with ``Test``, ``validation``… read as ``test``, ``val``…
    (:data:`SPLIT_NAMES`), each renaming said once in a note row; other names are kept as written."""
    text = values.astype("string").str.strip()
    known = text.str.lower().map(SPLIT_NAMES)
    renamed = known.notna() & (known != values.astype("string"))
    for (given, name), n in pd.DataFrame({"given": values[renamed].astype(str), "name": known[renamed]}) \
            .value_counts(sort=False).items():
        problems.note(csv, f"{n} row(s) with split {given!r}, the {name!r} split spelled otherwise",
                      action=f"read as {name!r}")
    return known.where(known.notna(), values).astype(object).where(values.notna(), None)
