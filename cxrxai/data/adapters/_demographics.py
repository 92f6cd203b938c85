"""Demographic columns of the case schema from a source's raw values: sex as "M"/"F", age in
years (DICOM age strings, study dates), the age bin, and where each value came from
(``<field>_source``); a value that cannot be read becomes missing with a problem row, never a
guess."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import shown
from ...labels import age_bin
from ._problems import Problems

__all__ = ["MAX_AGE", "clean_age", "clean_sex", "sourced", "study_years", "with_age_bins",
           "with_sources"]

MAX_AGE = 120


def _where(path, values: pd.Series, i: int) -> tuple[object, int | None]:
    """File and row of the ``i``-th value: one CSV (``path``: its row as a spreadsheet counts
    it), or one file per value (``path`` a Series aligned with ``values``, e.g. DICOM headers: no
    row)."""
    if isinstance(path, pd.Series):
        return path.iloc[i], None
    return path, int(values.index[i]) + 2


def clean_age(values: pd.Series, path, problems: Problems, ids: pd.Series | None) -> pd.Series:
    """Ages in years; DICOM age strings accepted (``"058Y"``, ``"006M"``, ``"002W"``,
    ``"010D"``: years, months, weeks, days); missing stays missing; absurd ages are problems
    (``path``: the CSV, or a Series of one file per value, see :func:`_where`; ``ids``: the image
    of each value, ``None`` when the values are per patient).

    >>> ages = pd.Series(["058Y", "006M", "026W", "073D"])
    >>> clean_age(ages, "f.csv", Problems(False), None).round(2).tolist()
    [58.0, 0.5, 0.5, 0.2]
    """
    text = values.astype("string").str.strip().str.upper()
    num = pd.to_numeric(text.str.rstrip("YMWD"), errors="coerce").astype(float)
    for unit, per_year in (("M", 12), ("W", 365 / 7), ("D", 365)):
        num = num.where(~text.str.endswith(unit, na=False), num / per_year)
    bad = ((num < 0) | (num > MAX_AGE) | (values.notna() & num.isna())).to_numpy(dtype=bool)
    for i in np.flatnonzero(bad):
        problems.add(
            *_where(path, values, i),
            str(ids.iloc[i]) if ids is not None else None,
            f"absurd age {values.iloc[i]} (allowed 0–{MAX_AGE} years)",
            action="age set to missing",
        )
    return num.where(~bad).astype(float)


def clean_sex(
    values: pd.Series, path=None, problems: Problems | None = None, ids: pd.Series | None = None
) -> pd.Series:
    """"M" / "F" (male, female in any case); anything else is missing — with ``problems``, a
    value that is neither blank nor M/F is a problem row ("sex set to missing")."""
    mapping = {"M": "M", "MALE": "M", "F": "F", "FEMALE": "F"}
    text = values.astype("string").str.strip().str.upper()
    out = text.map(mapping).astype(object).where(lambda s: s.notna(), None)
    if problems is not None:
        for i in np.flatnonzero((text.notna() & (text != "") & out.isna()).to_numpy(dtype=bool)):
            problems.add(
                *_where(path, values, i),
                str(ids.iloc[i]) if ids is not None else None,
                f"sex {shown(values.iloc[i])} is not one of M, F (male, female)",
                action="sex set to missing",
            )
    return out


def study_years(values: pd.Series, column: str, path, problems: Problems,
                ids: pd.Series) -> pd.Series:
    """The year of DICOM-style ``yyyymmdd`` dates (``20140915`` → 2014.0), to derive ages from;
    a value that is not such a date is a problem row ("age set to missing"), a blank stays missing.

    >>> p = Problems(strict=False)
    >>> dates, ids = pd.Series([20140915, None, 2014]), pd.Series(["a", "b", "c"])
    >>> study_years(dates, "StudyDate", "f.csv", p, ids).tolist()
    [2014.0, nan, nan]
    >>> p.rows[0]["problem"]
    "StudyDate '2014' is not a yyyymmdd date; age set to missing"
    """
    text = values.astype("string").str.strip().str.replace(r"\.0$", "", regex=True)
    dates = pd.to_datetime(text, format="%Y%m%d", errors="coerce")
    bad = (text.notna() & (text != "") & dates.isna()).to_numpy(dtype=bool)
    for i in np.flatnonzero(bad):
        problems.add(
            path,
            int(values.index[i]) + 2,
            str(ids.iloc[i]),
            f"{column} {str(text.iloc[i])!r} is not a yyyymmdd date",
            action="age set to missing",
        )
    return dates.dt.year.astype(float)


def sourced(values: pd.Series, source) -> pd.Series:
    """The provenance column of ``values``: ``source`` (one text, or a Series of one per value)
    where a value is present, missing where not."""
    column = pd.Series(source, index=values.index, dtype=object)
    return column.where(values.notna().to_numpy(), None)


def with_sources(images: pd.DataFrame, sources: dict[str, object]) -> pd.DataFrame:
    """``<field>_source`` = ``sources[field]`` (e.g. ``"csv:Data_Entry_2017.csv"``, or a Series of
    one source per row) where ``field`` has a value, missing where it has none.

    >>> with_sources(pd.DataFrame({"sex": ["F", None]}), {"sex": "csv:a.csv"}).sex_source.tolist()
    ['csv:a.csv', None]
    """
    for name, source in sources.items():
        images[f"{name}_source"] = sourced(images[name], source)
    return images


def with_age_bins(images: pd.DataFrame) -> pd.DataFrame:
    """``age_bin`` of each image's age (:func:`~cxrxai.labels.age_bin`; missing where the age is),
    each distinct age binned once (a full CheXpert list holds 223,414 rows and 90-odd ages).

    >>> with_age_bins(pd.DataFrame({"age": [19.0, None, 80.0, 19.0]})).age_bin.tolist()[::2]
    ['0-20', '80+']
    """
    ages = images["age"]
    bins = {a: age_bin(a) for a in pd.unique(ages[ages.notna()])}
    images["age_bin"] = ages.map(lambda a: bins[a] if pd.notna(a) else None)
    return images
