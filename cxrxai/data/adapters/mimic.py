"""MIMIC-CXR-JPG 2.0.0 (Johnson et al., 2019) with demographics from MIMIC-IV, as the
Underdiagnosis paper (Seyyed-Kalantari et al., Nat Med 2021) and the thesis read it.

Files in ``root``, each as published (``.csv.gz``) or unzipped (``.csv``):

* ``mimic-cxr-2.0.0-metadata.csv.gz`` — one row per film: ``dicom_id, subject_id, study_id,
  ViewPosition, Rows, Columns, StudyDate, …``; the film is
  ``files/p<first two digits>/p<subject_id>/s<study_id>/<dicom_id>.jpg``. Image id: ``dicom_id``;
  patient: ``subject_id``; view: ``ViewPosition`` (blank stays missing).
* ``mimic-cxr-2.0.0-chexpert.csv.gz`` or ``-negbio.csv.gz`` (``labeler=``) — one row per study:
  ``subject_id, study_id`` and the 14 CheXpert labels (1.0 / 0.0 / −1.0 / blank), read as CheXpert's
  (``uncertain=``, default ``zeros``: the paper counts uncertain and blank as negative; see
  :func:`~cxrxai.data.adapters._base.chexpert_values`). A film whose study has no row is skipped.
* ``mimic-cxr-2.0.0-split.csv.gz`` — ``dicom_id, study_id, subject_id, split`` (train / validate /
  test; validate → val): ``split="official"``. ``split="patient"`` pools every film and splits by
  patient (``fractions``, seeded), as the Underdiagnosis paper did (80-10-10).

Demographics come from MIMIC-IV's ``patients.csv(.gz)`` in ``mimic_iv`` (default: ``root``), directly
or under ``hosp/`` (MIMIC-IV ≥ 1.0) or ``core/`` (0.4): sex from ``gender``; age (``age=``) either
``anchor`` — ``anchor_age``, one age per patient, as the paper used it (MIMIC-IV writes 91 for every
patient over 89) — or ``study`` — the age at each film, ``anchor_age`` + (``StudyDate``'s year −
``anchor_year``), MIMIC-CXR's dates being shifted as MIMIC-IV's are. A subject missing from
patients.csv keeps sex and age missing (one problem row per subject; the paper dropped those films,
371,547 of 377,110 kept); without patients.csv every film's do (one note). Race and insurance come
from MIMIC-IV's ``admissions.csv(.gz)`` in the same folder, joined by subject; a subject whose
admissions differ is read by ``admission=`` (``agree``, the default, leaves it missing; ``first``,
``last``), said in a note row (see :mod:`~cxrxai.data.adapters._admissions`).

Every view is kept (the paper trained on frontal and lateral films); ``views=PA,AP`` keeps those
``ViewPosition`` values only, the others counted in one note row. ``Rows``/``Columns`` describe the
DICOM; each JPEG's own size is recorded when it is decoded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import DataError, UnknownNameError
from ._admissions import ADMISSION_RULES, admission_demographics
from ._base import (
    UNCERTAIN_POLICIES,
    DatasetTables,
    Problems,
    chexpert_values,
    clean_age,
    clean_sex,
    keep_views,
    long_labels,
    patient_split,
    read_csv,
    require,
    sourced,
    study_years,
    with_age_bins,
)
from ._registry import adapter
from .chexpert import CHEXPERT_LABELS

__all__ = ["ADMISSION_RULES", "AGE_RULES", "LABELERS", "SPLITS", "load_mimic", "mimic_path"]

LABELERS = ("chexpert", "negbio")
SPLITS = ("official", "patient")
AGE_RULES = ("anchor", "study")
_PREFIX = "mimic-cxr-2.0.0-"
_SPLIT_NAMES = {"train": "train", "validate": "val", "test": "test"}
_STUDY_AGE = "derived:anchor_age+year(StudyDate)-anchor_year"
#: How a user supplies missing sex / age / view (quoted when a subgroup report has no group).
DEMOGRAPHICS_HINT = ("--data-option mimic_iv=DIR holding MIMIC-IV's patients.csv(.gz) (gender, anchor_age); "
                     "views from mimic-cxr-2.0.0-metadata.csv.gz (ViewPosition)")


def mimic_path(subject_id: int | str, study_id: int | str, dicom_id: str) -> str:
    """``files/p10/p10000032/s50414267/<dicom_id>.jpg`` for subject 10000032, study 50414267."""
    subject = str(subject_id)
    return f"files/p{subject[:2]}/p{subject}/s{study_id}/{dicom_id}.jpg"


def _find(folder: Path, name: str) -> Path | None:
    return next((folder / n for n in (name + ".gz", name) if (folder / n).is_file()), None)


def _need(root: Path, name: str) -> Path:
    path = _find(root, name)
    if path is None:
        raise DataError(f"no {name}.gz (or {name}) in {root}")
    return path


@adapter("mimic", hint=DEMOGRAPHICS_HINT)
def load_mimic(root: str | Path, *, labeler: str = "chexpert", uncertain: str = "zeros",
               mimic_iv: str | Path | None = None, age: str = "anchor", admission: str = "agree",
               split: str = "official", views=None, fractions=(0.8, 0.1, 0.1), seed: int = 0,
               strict: bool = False) -> DatasetTables:
    root = Path(root)
    for kind, value, allowed in (("MIMIC labeler", labeler, LABELERS), ("MIMIC age rule", age, AGE_RULES),
                                 ("MIMIC admission rule", admission, ADMISSION_RULES),
                                 ("uncertain-label policy", uncertain, UNCERTAIN_POLICIES),
                                 ("MIMIC split", split, SPLITS)):
        if value not in allowed:
            raise UnknownNameError(kind, value, allowed)
    problems = Problems(strict)
    meta_path = _need(root, _PREFIX + "metadata.csv")
    meta = read_csv(meta_path, dtype={"dicom_id": str}, problems=problems)
    require(meta, ["dicom_id", "subject_id", "study_id", "ViewPosition"], meta_path)
    if age == "study":
        require(meta, ["StudyDate"], meta_path)
    meta = meta[keep_views(meta["ViewPosition"], views, meta_path, problems)]
    ids = meta["dicom_id"].astype(str)
    subject, study = _film_keys(meta, meta_path, ids, problems)
    images = pd.DataFrame({
        "image_id": ids, "path": [mimic_path(a, b, c) for a, b, c in zip(subject, study, ids)],
        "patient_id": subject.astype(str), "view": meta["ViewPosition"].astype(object),
        "view_source": sourced(meta["ViewPosition"], f"csv:{meta_path.name}"),
        "width": np.nan, "height": np.nan,
    })
    images["view"] = images["view"].where(images["view"].notna(), None)
    names, matrix = _labels(_need(root, f"{_PREFIX}{labeler}.csv"), study, ids, uncertain, problems)
    if split == "official":
        images["split"] = _official_split(_need(root, _PREFIX + "split.csv"), ids, problems)
    else:
        shares = dict(zip(("train", "val", "test"), fractions))
        images["split"] = patient_split(images["patient_id"], shares, seed)
    folder = Path(mimic_iv) if mimic_iv else root
    demo = _demographics(folder, meta_path, meta, subject, ids, age, problems)
    admissions = _mimic_iv_file(folder, "admissions.csv")
    stays = admission_demographics(admissions, folder, subject, admission, problems)
    images = pd.concat([images, demo, stays], axis=1)
    keep = ~images["image_id"].isin(problems.skipped())
    source = "MIMIC-CXR-JPG 2.0.0" + (" + MIMIC-IV" if demo["sex"].notna().any() else "")
    return DatasetTables(
        name="mimic", source=source, root=root, label_names=names,
        images=with_age_bins(images[keep].reset_index(drop=True)),
        labels=long_labels(images.loc[keep, "image_id"], matrix[keep.to_numpy()], names),
        problems=problems.frame(), description=f"MIMIC-CXR-JPG with {labeler} labels",
        config={"labeler": labeler, "uncertain": uncertain, "age": age, "admission": admission,
                "split": split, "views": views, "seed": seed},
    )


def _film_keys(meta: pd.DataFrame, path: Path, ids: pd.Series, problems: Problems):
    """subject_id and study_id of each film as integers (a film where either is not one is skipped)."""
    subject = pd.to_numeric(meta["subject_id"], errors="coerce")
    study = pd.to_numeric(meta["study_id"], errors="coerce")
    for i in np.flatnonzero((subject.isna() | study.isna()).to_numpy(dtype=bool)):
        problems.add(path, int(meta.index[i]) + 2, ids.iloc[i], f"subject_id {meta['subject_id'].iloc[i]!r} "
                     f"or study_id {meta['study_id'].iloc[i]!r} is not a number")
    return subject.fillna(0).astype(np.int64), study.fillna(0).astype(np.int64)


def _labels(path: Path, study: pd.Series, ids: pd.Series, uncertain: str, problems: Problems):
    """The study-level labels of each film: (names, (N, K) matrix of 1 / 0 / NaN)."""
    lab = read_csv(path, problems=problems)
    require(lab, ["subject_id", "study_id"], path)
    names = [c for c in CHEXPERT_LABELS if c in lab.columns]
    if not names:
        raise DataError(f"{path.name}: no CheXpert label columns; expected some of {CHEXPERT_LABELS}")
    lab["study_id"] = pd.to_numeric(lab["study_id"], errors="coerce")
    for i in np.flatnonzero(lab["study_id"].duplicated().to_numpy()):
        problems.add(path, int(i) + 2, None, f"study {lab['study_id'].iloc[i]} listed again",
                     action="row skipped, the first one used")
    lab = lab.drop_duplicates("study_id").set_index("study_id")
    values = chexpert_values(lab[names], uncertain).reindex(study.to_numpy())
    for i in np.flatnonzero(~study.isin(lab.index).to_numpy()):
        problems.add(path, None, ids.iloc[i], f"study {study.iloc[i]} has no row in {path.name}")
    return names, values.to_numpy(float)


def _official_split(path: Path, ids: pd.Series, problems: Problems) -> pd.Series:
    """MIMIC-CXR's own split of each film (validate → val); a film without one has no split."""
    sp = read_csv(path, dtype={"dicom_id": str}, problems=problems)
    require(sp, ["dicom_id", "split"], path)
    named = sp["split"].astype("string").str.strip().str.lower().map(_SPLIT_NAMES)
    for i in np.flatnonzero(named.isna().to_numpy(dtype=bool)):
        problems.add(path, int(i) + 2, str(sp["dicom_id"].iloc[i]),
                     f"split {sp['split'].iloc[i]!r} is not one of {list(_SPLIT_NAMES)}",
                     action="split set to missing")
    of = pd.Series(named.astype(object).to_numpy(), index=sp["dicom_id"].astype(str)).groupby(level=0).first()
    for i in np.flatnonzero(~ids.isin(of.index).to_numpy()):
        problems.add(path, None, ids.iloc[i], f"film not in {path.name}", action="split set to missing")
    out = ids.map(of).astype(object)
    return out.where(out.notna(), None)


def _mimic_iv_file(folder: Path, name: str) -> Path | None:
    """MIMIC-IV's ``name`` (``.gz`` or not) in ``folder``, its ``hosp/`` (≥ 1.0) or ``core/`` (0.4)."""
    found = (_find(folder / sub, name) for sub in ("", "hosp", "core"))
    return next((p for p in found if p is not None), None)


def _patients(path: Path, rule: str, problems: Problems) -> pd.DataFrame:
    """MIMIC-IV's patients, one row per subject_id, with clean ``sex`` and ``age`` (anchor_age)."""
    pat = read_csv(path, problems=problems)
    require(pat, ["subject_id", "gender", "anchor_age", *(["anchor_year"] if rule == "study" else [])], path)
    pat["subject_id"] = pd.to_numeric(pat["subject_id"], errors="coerce")
    pat["sex"] = clean_sex(pat["gender"], path, problems)
    pat["age"] = clean_age(pat["anchor_age"], path, problems, None)
    return pat.drop_duplicates("subject_id").set_index("subject_id")


def _demographics(folder: Path, meta_path: Path, meta: pd.DataFrame, subject: pd.Series, ids: pd.Series,
                  rule: str, problems: Problems) -> pd.DataFrame:
    """sex, age and their sources per film, from MIMIC-IV's patients.csv (see the module's text)."""
    out = pd.DataFrame({"sex": None, "age": np.nan, "sex_source": None, "age_source": None}, index=meta.index)
    path = _mimic_iv_file(folder, "patients.csv")
    if path is None:
        problems.note(folder, f"no MIMIC-IV patients.csv(.gz) in {folder} (nor its hosp/, core/): sex and "
                              f"age left missing for all {len(meta):,} films; pass mimic_iv=FOLDER")
        return out
    pat = _patients(path, rule, problems)
    found = subject.isin(pat.index).to_numpy()
    if len(found) and not found.any():
        raise DataError(f"{path} shares no subject_id with the MIMIC-CXR metadata (e.g. {subject.iloc[0]}); "
                        "is it MIMIC-IV's patients file?")
    for sid, n in subject[~found].value_counts().sort_index().items():
        problems.add(path, None, None, f"subject {sid} ({n} films) is not in {path.name}",
                     action="sex and age left missing")
    sex = subject.map(pat["sex"]).astype(object)
    out["sex"] = sex.where(sex.notna(), None)
    out["age"] = subject.map(pat["age"]).astype(float)
    source = f"csv:{path.name}"
    if rule == "study":
        years = study_years(meta["StudyDate"], "StudyDate", meta_path, problems, ids)
        shifted = out["age"] + years - subject.map(pat["anchor_year"]).astype(float)
        out["age"] = clean_age(shifted, meta_path, problems, ids)
        source = _STUDY_AGE
    out["sex_source"] = sourced(out["sex"], f"csv:{path.name}")
    out["age_source"] = sourced(out["age"], source)
    return out
