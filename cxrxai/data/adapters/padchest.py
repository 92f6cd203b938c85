"""PadChest (Bustos et al., Medical Image Analysis 2020): 160,861 films of San Juan Hospital,
Alicante, as 16-bit greyscale PNGs (12 bits used: ``BitsStored_DICOM``).

``PADCHEST_chest_x_ray_images_labels_160K_01.02.19.csv`` (or ``.csv.gz``; ``csv=`` another path):
one row per film with ``ImageID`` (the PNG's name, the image id), ``ImageDir`` (the numbered zip
folder, 0–54, the film ships in), ``PatientID``, ``PatientSex_DICOM``, ``PatientBirth`` (a year),
``StudyDate_DICOM`` (yyyymmdd), ``Projection`` (PA, L, AP, AP_horizontal, COSTAL, EXCLUDE, UNK),
``MethodLabel`` (``Physician`` or ``RNN_model``: who read the report) and ``Labels``, a Python-style
list of the report's findings, e.g. ``"['pleural effusion', 'cardiomegaly']"``.

Films are ``<ImageDir>/<ImageID>`` as unzipped (``layout="folders"``) or ``<ImageID>`` all in
``root`` (``"flat"``); ``"auto"`` picks folders when ``root`` holds a numbered folder, flat when it
holds PNGs directly, folders otherwise. In the folders layout a film without an ImageDir is skipped.

Labels keep PadChest's own names, as its label hierarchy and papers write them — only stripped
of the stray spaces some lists carry (``' pleural effusion'`` → ``'pleural effusion'``), case
kept (``'COPD signs'``, ``'NSG tube'``): mostly lower case, not title-cased. Matching them to a
model's outputs ("pleural effusion" ↔ "Effusion") is the label alias table's job, not this
adapter's. A film is positive for each finding in its list and negative for every other
(``'normal'`` is a label of its own). ``labels=None`` keeps every label in the file (193 in the
published file: 31 million label rows, some seconds and gigabytes); ``labels=[...]`` keeps those.
A blank or empty list (``['']``) leaves the film's labels missing; a list that cannot be read
skips the film — each a problem row.

Sex: ``PatientSex_DICOM`` (M/F; other values, e.g. ``O``, become missing with a problem row). Age:
the study's year minus ``PatientBirth`` (source ``derived:StudyDate_DICOM-PatientBirth``); PadChest
gives the birth year only, so the age may be a year above the true one. View: ``Projection`` as
written. PadChest publishes no split: films are split by patient (``fractions``, seeded).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import DataError, UnknownNameError
from ._base import (
    DatasetTables,
    Problems,
    clean_age,
    clean_sex,
    escaping,
    keep_views,
    long_labels,
    name_list,
    patient_split,
    read_csv,
    require,
    sourced,
    study_years,
    with_age_bins,
)
from ._registry import adapter

__all__ = ["LAYOUTS", "PADCHEST_CSV", "load_padchest", "parse_label_list"]

PADCHEST_CSV = "PADCHEST_chest_x_ray_images_labels_160K_01.02.19.csv"
LAYOUTS = ("auto", "folders", "flat")
AGE_SOURCE = "derived:StudyDate_DICOM-PatientBirth"
#: How a user supplies missing sex / age / view (quoted when a subgroup report has no group).
DEMOGRAPHICS_HINT = (
    "the PatientSex_DICOM, PatientBirth, StudyDate_DICOM and Projection columns of the labels CSV"
)
_SIMPLE_LIST = re.compile(r"\[\s*(?:'[^'\\]*'\s*(?:,\s*'[^'\\]*'\s*)*)?\]")
_QUOTED = re.compile(r"'([^']*)'")
_COLUMNS = ["ImageID", "ImageDir", "PatientID", "PatientSex_DICOM", "PatientBirth", "StudyDate_DICOM",
            "Projection", "Labels"]


def parse_label_list(text) -> list[str] | None:
    """PadChest's ``Labels`` cell → its finding names (stripped, blanks dropped); ``None`` when the
    cell is not a list of strings. A blank cell gives ``[]``.

    >>> parse_label_list("['pleural effusion', ' cardiomegaly', '']")
    ['pleural effusion', 'cardiomegaly']
    >>> parse_label_list("['a'"), parse_label_list("[1, 2]"), parse_label_list(None)
    (None, None, [])
    """
    if text is None or (isinstance(text, float) and np.isnan(text)) or not str(text).strip():
        return []
    if _SIMPLE_LIST.fullmatch(str(text)):  # the published cells: quoted names, no escapes (fast path)
        return [v.strip() for v in _QUOTED.findall(str(text)) if v.strip()]
    try:
        value = ast.literal_eval(str(text))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        return None
    return [v.strip() for v in value if v.strip()]


@adapter("padchest", hint=DEMOGRAPHICS_HINT)
def load_padchest(root: str | Path, *, csv: str | Path | None = None, layout: str = "auto", labels=None,
                  views=None, fractions=(0.8, 0.1, 0.1), seed: int = 0,
                  strict: bool = False) -> DatasetTables:
    root = Path(root)
    if layout not in LAYOUTS:
        raise UnknownNameError("PadChest layout", layout, LAYOUTS)
    found = (root / n for n in (PADCHEST_CSV + ".gz", PADCHEST_CSV) if (root / n).is_file())
    path = Path(csv) if csv else next(found, root / PADCHEST_CSV)
    problems = Problems(strict)
    df = read_csv(path, dtype={"ImageID": str, "PatientID": str, "Labels": str}, low_memory=False,
                  usecols=lambda c: c in _COLUMNS, problems=problems)  # not the reports' text
    require(df, _COLUMNS, path)
    df = df[keep_views(df["Projection"], views, path, problems)]
    ids = df["ImageID"].astype(str)
    images = pd.DataFrame({
        "image_id": ids, "path": _paths(df, ids, _layout(root, layout), path, problems),
        "patient_id": df["PatientID"].astype(str),
        "sex": clean_sex(df["PatientSex_DICOM"], path, problems, ids),
        "age": _age(df, path, problems, ids), "view": df["Projection"].astype(object),
        "width": np.nan, "height": np.nan,
    })
    images["view"] = images["view"].where(images["view"].notna(), None)
    images["sex_source"] = sourced(images["sex"], f"csv:{path.name}")
    images["age_source"] = sourced(images["age"], AGE_SOURCE)
    images["view_source"] = sourced(images["view"], f"csv:{path.name}")
    names, matrix = _labels(df, ids, labels, path, problems)
    shares = dict(zip(("train", "val", "test"), fractions))
    images["split"] = patient_split(images["patient_id"], shares, seed)
    keep = ~images["image_id"].isin(problems.skipped())
    return DatasetTables(
        name="padchest", source="PadChest", root=root, label_names=names,
        images=with_age_bins(images[keep].reset_index(drop=True)),
        labels=long_labels(images.loc[keep, "image_id"], matrix[keep.to_numpy()], names),
        problems=problems.frame(), description="PadChest, labels as PadChest names them",
        config={"layout": layout, "labels": labels, "views": views, "seed": seed},
    )


def _cell(value) -> str:
    """A CSV cell as a message quotes it: ``'12'``, or ``blank``."""
    return "blank" if pd.isna(value) else repr(str(value))


def _layout(root: Path, layout: str) -> str:
    if layout != "auto":
        return layout
    if any((root / str(k)).is_dir() for k in range(55)):
        return "folders"
    return "flat" if root.is_dir() and next(root.glob("*.png"), None) is not None else "folders"


def _paths(df: pd.DataFrame, ids: pd.Series, layout: str, path: Path, problems: Problems) -> pd.Series:
    """Each film's path under ``root``; a film with no usable ImageDir (folders layout), or whose
    path would leave the root, is skipped."""
    if layout == "flat":
        rel = ids.copy()
    else:
        folder = pd.to_numeric(df["ImageDir"], errors="coerce")
        bad = (folder.isna() | (folder < 0) | (folder != folder.round())).to_numpy(dtype=bool)
        for i in np.flatnonzero(bad):
            problems.add(path, int(df.index[i]) + 2, ids.iloc[i],
                         f"ImageDir {_cell(df['ImageDir'].iloc[i])} is not a folder number")
        rel = folder.fillna(-1).astype(np.int64).astype(str) + "/" + ids
    for i in np.flatnonzero(escaping(ids)):
        problems.add(path, int(df.index[i]) + 2, ids.iloc[i],
                     f"ImageID {ids.iloc[i]!r} escapes the dataset root")
    return rel


def _age(df: pd.DataFrame, path: Path, problems: Problems, ids: pd.Series) -> pd.Series:
    """Age at the study in whole years: year(StudyDate_DICOM) − PatientBirth."""
    birth = pd.to_numeric(df["PatientBirth"], errors="coerce")
    for i in np.flatnonzero((df["PatientBirth"].notna() & birth.isna()).to_numpy(dtype=bool)):
        problems.add(path, int(df.index[i]) + 2, ids.iloc[i],
                     f"PatientBirth {_cell(df['PatientBirth'].iloc[i])} is not a year",
                     action="age set to missing")
    years = study_years(df["StudyDate_DICOM"], "StudyDate_DICOM", path, problems, ids)
    return clean_age(years - birth, path, problems, ids)


def _labels(df: pd.DataFrame, ids: pd.Series, wanted, path: Path, problems: Problems):
    """(label names, (N, K) matrix): 1 for each finding in a film's list, 0 for the others, NaN
    for a film whose list is blank or empty."""
    text = df["Labels"].astype(object)
    cells = text.to_numpy()
    parsed = {t: parse_label_list(t) for t in set(cells[text.notna().to_numpy()])}  # far fewer than cells
    lists = pd.Series([parsed[t] if isinstance(t, str) else [] for t in cells], index=text.index,
                      dtype=object)
    unknown = lists.isna().to_numpy()
    empty = np.array([v is not None and len(v) == 0 for v in lists], dtype=bool)
    for i in np.flatnonzero(unknown | empty):
        what = (f"Labels {_cell(text.iloc[i])} is not a list of names" if unknown[i]
                else f"no labels (Labels {_cell(text.iloc[i])})")
        problems.add(path, int(df.index[i]) + 2, ids.iloc[i], what,
                     action=Problems.SKIP_IMAGE if unknown[i] else "labels set to missing")
    flat = lists[~unknown].explode().dropna()
    present = sorted(set(flat), key=lambda n: (n.lower(), n))
    names = present if wanted is None else name_list(wanted)
    missing = [n for n in names if n not in set(present)]
    if missing:
        raise DataError(f"{path.name}: no film has the label(s) {missing}; PadChest's labels here: {present}")
    matrix = np.zeros((len(df), len(names)))
    col = pd.Index(names).get_indexer(flat.to_numpy())
    row = df.index.get_indexer(flat.index)
    matrix[row[col >= 0], col[col >= 0]] = 1.0
    matrix[empty | unknown] = np.nan
    return names, matrix
