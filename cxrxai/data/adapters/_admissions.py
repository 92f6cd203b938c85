"""Race and insurance of MIMIC-CXR's patients from MIMIC-IV's ``admissions.csv(.gz)``, the two groupings
the Underdiagnosis paper (Seyyed-Kalantari et al., Nat Med 2021) adds to sex and age.

MIMIC-IV writes one row per hospital stay (``subject_id, hadm_id, admittime, …, insurance, …, race``;
releases before 2.0 name ``race`` ``ethnicity``), so a patient may have several values. Each film
takes its subject's, by ``rule`` (the ``admission=`` option of the mimic layout):

* ``agree`` (default) — the value every stay that records one gives; a subject whose stays differ
  keeps it missing (left out of that grouping, never assigned to one group by a choice the data does
  not make), counted per field in one note row with an example;
* ``first`` / ``last`` — the value of the subject's earliest / latest stay (by ``admittime``) that
  records one, the differing subjects still counted in a note row.

The paper's published code does not include the step that joins admissions (its ReadMe names a
notebook, ``TrueDatawithMeta.ipynb``, that is not in the repository), so no rule is taken from it.
Values are kept as MIMIC-IV writes them (``BLACK/AFRICAN AMERICAN``, ``Medicare``); ``UNKNOWN``,
``UNABLE TO OBTAIN`` and ``PATIENT DECLINED TO ANSWER`` (its words for a race not recorded) and blanks
are missing. Subjects without a stay (patients seen only in the emergency department) keep both
missing, counted in one note row.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import DataError
from ...labels import ADMISSION_FIELDS
from ._base import Problems, read_csv, require, sourced

__all__ = ["ADMISSION_RULES", "UNRECORDED", "admission_demographics"]

ADMISSION_RULES = ("agree", "first", "last")
#: MIMIC-IV's words for a race that was not recorded (read as missing, like a blank).
UNRECORDED = ("UNKNOWN", "UNABLE TO OBTAIN", "PATIENT DECLINED TO ANSWER")
_RULE_WORDS = {"agree": "left missing", "first": "the earliest admission's taken",
               "last": "the latest admission's taken"}
_OTHERS = {"agree": "'first' or 'last' takes the earliest or latest admission's",
           "first": "'last' takes the latest admission's, 'agree' leaves it missing",
           "last": "'first' takes the earliest admission's, 'agree' leaves it missing"}


def _stays(path: Path, problems: Problems) -> tuple[pd.DataFrame, str]:
    """The admissions as (subject_id, time, race, insurance) in time order per subject, and the
    column race was read from (``race``, or ``ethnicity`` before MIMIC-IV 2.0)."""
    adm = read_csv(path, problems=problems)
    race = "race" if "race" in adm.columns else "ethnicity"
    if race not in adm.columns:
        raise DataError(f"{path.name}: missing column 'race' (MIMIC-IV ≥ 2.0) or 'ethnicity' (earlier); "
                        f"found {list(adm.columns)}")
    require(adm, ["subject_id", "admittime", "insurance"], path)
    stays = pd.DataFrame({"subject_id": pd.to_numeric(adm["subject_id"], errors="coerce"),
                          "time": pd.to_datetime(adm["admittime"], errors="coerce")})
    for field, column in (("race", race), ("insurance", "insurance")):
        text = adm[column].astype("string").str.strip()
        stays[field] = text.where(~text.str.upper().isin(UNRECORDED) & (text != ""))
    _unreadable(adm, stays, path, problems)
    stays = stays.dropna(subset=["subject_id"]).astype({"subject_id": "int64"})
    return stays.sort_values(["subject_id", "time"], kind="stable"), race


def _unreadable(adm: pd.DataFrame, stays: pd.DataFrame, path: Path, problems: Problems) -> None:
    """A problem row for each admission whose subject_id is not a number (left out: it matches no
    film) or whose admittime is not a date (kept, ordered after its subject's dated admissions, so
    ``admission=first`` / ``last`` may not take it where its real time would put it)."""
    def what(column: str, i: int, kind: str) -> str:
        value = adm[column].iloc[i]
        return f"no {column}" if pd.isna(value) else f"{column} {value!r} is not a {kind}"

    no_subject = stays.subject_id.isna().to_numpy()
    for i in np.flatnonzero(no_subject):
        problems.add(path, int(adm.index[i]) + 2, None, what("subject_id", i, "number"),
                     action="admission left out")
    for i in np.flatnonzero(stays.time.isna().to_numpy() & ~no_subject):
        problems.add(path, int(adm.index[i]) + 2, None, what("admittime", i, "date"),
                     action="admission kept, ordered after the subject's dated admissions")


def _per_subject(stays: pd.DataFrame, field: str, rule: str, film_subjects: pd.Series, path: Path,
                 problems: Problems) -> pd.Series:
    """One ``field`` value per subject by ``rule``; the subjects with films whose stays differ are
    counted in one note row (see the module's text)."""
    grouped = stays.dropna(subset=[field]).groupby("subject_id")[field]
    values = grouped.first() if rule == "first" else grouped.last()
    kinds = grouped.nunique()
    differ = kinds.index[(kinds > 1).to_numpy()].intersection(pd.Index(film_subjects.unique()))
    if len(differ):
        example = differ[0]
        seen = ", ".join(pd.unique(stays.loc[stays.subject_id == example, field].dropna()))
        films = int(film_subjects.isin(differ).sum())
        have = int(pd.Index(film_subjects.unique()).isin(stays.subject_id).sum())
        problems.note(path, f"{field} differs between the admissions of {len(differ):,} of {have:,} "
                            f"subjects with films (e.g. {int(example)}: {seen}); {field} {_RULE_WORDS[rule]} "
                            f"for their {films:,} films (admission={rule!r}; {_OTHERS[rule]})")
    if rule == "agree":
        values = values.where(kinds == 1)
    return values


def admission_demographics(path: Path | None, folder: Path, subject: pd.Series, rule: str,
                           problems: Problems) -> pd.DataFrame:
    """``race``, ``insurance`` and their sources per film (``subject``: each film's subject_id) from
    the admissions file at ``path`` (``None``: not found in ``folder``, every value missing, one note)."""
    out = pd.DataFrame({f: None for f in (*ADMISSION_FIELDS, "race_source", "insurance_source")},
                       index=subject.index)
    if path is None:
        problems.note(folder, f"no MIMIC-IV admissions.csv(.gz) in {folder} (nor its hosp/, core/): race and "
                              f"insurance left missing for all {len(subject):,} films; pass mimic_iv=FOLDER")
        return out
    stays, race_column = _stays(path, problems)
    absent = subject[~subject.isin(stays.subject_id).to_numpy()]
    if len(absent):
        problems.note(path, f"{absent.nunique():,} subject(s) ({len(absent):,} films) have no admission "
                            f"in {path.name} (e.g. {int(absent.iloc[0])})",
                      action="race and insurance left missing")
    for field in ADMISSION_FIELDS:
        values = subject.map(_per_subject(stays, field, rule, subject, path, problems)).astype(object)
        out[field] = values.where(values.notna(), None)
        column = f":{race_column}" if field == "race" and race_column != "race" else ""
        out[f"{field}_source"] = sourced(out[field], f"csv:{path.name}{column}")
    return out
