"""The Underdiagnosis paper's race and insurance groups (Seyyed-Kalantari et al., Nat Med 2021) over
the values MIMIC-IV writes, chosen by the subgroup reports' ``race=`` and ``insurance=`` options.

The paper read MIMIC-IV v0.4, whose ``admissions.ethnicity`` held eight values. Its code
(LalehSeyyed/Underdiagnosis_NatMed, ``MIMIC/FPRFNR.py``, ``FPR_Underdiagnosis``) groups race by six
of them, ``WHITE``, ``BLACK/AFRICAN AMERICAN``, ``HISPANIC/LATINO``, ``OTHER``, ``ASIAN`` and
``AMERICAN INDIAN/ALASKA NATIVE`` (its tables' White, Black, Hisp, Other, Asian, American), leaving
``UNKNOWN`` and ``UNABLE TO OBTAIN`` out, and insurance by ``Medicare``, ``Other`` and ``Medicaid``.
MIMIC-IV 2.0 renamed the column ``race`` and split it into some thirty values (``WHITE - RUSSIAN``,
``HISPANIC/LATINO - PUERTO RICAN``, ``ASIAN - CHINESE`` …); MIMIC-IV 3.0 added insurance values
(``Private``, ``No charge``). :data:`RACE_GROUPS` and :data:`INSURANCE_GROUPS` put each value onto
the paper's group its own words name. Values that name none of the paper's groups go to Other, as
the v0.4 ``OTHER`` held them; :func:`fell_to_other` names every recorded value that did (the data
audit prints them). Missing values stay missing: the paper left them out.
"""

from __future__ import annotations

import pandas as pd

from .errors import UnknownNameError

__all__ = ["GROUPINGS", "INSURANCE_GROUPS", "OTHER", "RACE_GROUPS", "fell_to_other", "paper_groups",
           "regroup"]

#: The choices of the reports' ``race=`` and ``insurance=`` options: the values as recorded, or the
#: paper's groups.
GROUPINGS = ("as_recorded", "paper")
OTHER = "Other"

_WHITE, _BLACK, _HISPANIC, _ASIAN = "White", "Black", "Hispanic", "Asian"
_NATIVE = "American Indian"
#: MIMIC-IV race → the paper's group. Source: the 30 values MIMIC-IV 2.x writes in hosp/admissions'
#: race column besides UNKNOWN, UNABLE TO OBTAIN and PATIENT DECLINED TO ANSWER (read as missing, see
#: cxrxai.data.adapters._admissions), and the v0.4 ethnicity values the paper's code names (WHITE,
#: HISPANIC/LATINO …). Rule for a value not listed here (a later release's): Other, named by the audit.
RACE_GROUPS: dict[str, str] = {
    "WHITE": _WHITE,
    "WHITE - BRAZILIAN": _WHITE,
    "WHITE - EASTERN EUROPEAN": _WHITE,
    "WHITE - OTHER EUROPEAN": _WHITE,
    "WHITE - RUSSIAN": _WHITE,
    "BLACK/AFRICAN AMERICAN": _BLACK,
    "BLACK/AFRICAN": _BLACK,
    "BLACK/CAPE VERDEAN": _BLACK,
    "BLACK/CARIBBEAN ISLAND": _BLACK,
    "HISPANIC/LATINO": _HISPANIC,
    "HISPANIC OR LATINO": _HISPANIC,
    "HISPANIC/LATINO - CENTRAL AMERICAN": _HISPANIC,
    "HISPANIC/LATINO - COLUMBIAN": _HISPANIC,
    "HISPANIC/LATINO - CUBAN": _HISPANIC,
    "HISPANIC/LATINO - DOMINICAN": _HISPANIC,
    "HISPANIC/LATINO - GUATEMALAN": _HISPANIC,
    "HISPANIC/LATINO - HONDURAN": _HISPANIC,
    "HISPANIC/LATINO - MEXICAN": _HISPANIC,
    "HISPANIC/LATINO - PUERTO RICAN": _HISPANIC,
    "HISPANIC/LATINO - SALVADORAN": _HISPANIC,
    "ASIAN": _ASIAN,
    "ASIAN - ASIAN INDIAN": _ASIAN,
    "ASIAN - CHINESE": _ASIAN,
    "ASIAN - KOREAN": _ASIAN,
    "ASIAN - SOUTH EAST ASIAN": _ASIAN,
    "AMERICAN INDIAN/ALASKA NATIVE": _NATIVE,
    # no group of the paper names these: Other, as v0.4's OTHER held them (our choice: the paper's code
    # has no 2.x values; others' code puts PORTUGUESE and SOUTH AMERICAN in Hispanic)
    "OTHER": OTHER,
    "SOUTH AMERICAN": OTHER,
    "PORTUGUESE": OTHER,
    "MULTIPLE RACE/ETHNICITY": OTHER,
    "NATIVE HAWAIIAN OR OTHER PACIFIC ISLANDER": OTHER,
}
#: MIMIC-IV insurance (v0.4–2.2: Medicare, Medicaid, Other; 3.0 adds Private, No charge) → the paper's
#: group. Rule for a value not listed here: Other, named by the audit.
INSURANCE_GROUPS: dict[str, str] = {
    "MEDICARE": "Medicare",
    "MEDICAID": "Medicaid",
    "OTHER": OTHER,
    "PRIVATE": OTHER,
    "NO CHARGE": OTHER,
}
_TABLES = {"race": RACE_GROUPS, "insurance": INSURANCE_GROUPS}


def _table(field: str) -> dict[str, str]:
    if field not in _TABLES:
        raise UnknownNameError("field with the paper's groups", field, _TABLES)
    return _TABLES[field]


def paper_groups(values: pd.Series, field: str) -> pd.Series:
    """The paper's group of each recorded ``field`` value (``race`` or ``insurance``; case and
    surrounding blanks ignored); unlisted values Other, missing ones missing.

    >>> paper_groups(pd.Series(["WHITE - RUSSIAN", "PORTUGUESE", None]), "race").tolist()
    ['White', 'Other', None]
    """
    table = _table(field)
    keys = values.astype("string").str.strip().str.upper()
    grouped = keys.map(lambda k: None if pd.isna(k) else table.get(k, OTHER))
    return grouped.astype(object).where(values.notna(), None)


def fell_to_other(values: pd.Series, field: str) -> pd.DataFrame:
    """Every recorded ``field`` value the paper's grouping puts in Other: ``value``, ``n`` (rows),
    ``listed`` (False: not in the table, Other by the rule for unlisted values), most rows first."""
    table = _table(field)
    counts = values.dropna().astype(str).value_counts(sort=False)
    keys = counts.index.str.strip().str.upper()
    other = [table.get(k, OTHER) == OTHER for k in keys]
    out = pd.DataFrame({"value": counts.index, "n": counts.to_numpy(), "listed": keys.isin(list(table))})
    out = out[other].sort_values(["n", "value"], ascending=[False, True], kind="stable")
    return out.reset_index(drop=True)


def regroup(table: pd.DataFrame, *, race: str = "as_recorded", insurance: str = "as_recorded"
            ) -> pd.DataFrame:
    """``table`` with its ``race`` / ``insurance`` columns (where it has them) as recorded or in
    the paper's groups, per option."""
    out = table
    for field, choice in (("race", race), ("insurance", insurance)):
        if choice not in GROUPINGS:
            raise UnknownNameError(f"{field} grouping", choice, GROUPINGS)
        if choice == "paper" and field in out.columns:
            out = out.assign(**{field: paper_groups(out[field], field)})
    return out
