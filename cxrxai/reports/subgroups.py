"""The reports grouped by sex, age bin, view, race or insurance (thesis Fig. 2 and 5, Seyyed-Kalantari
et al.), and why a grouping has no group: an empty subgroup table always says which images lack the
value, where the tool looked for it (the dataset's CSV, its DICOM headers, MIMIC-IV's admissions), how
to supply it, and the groupings the images do have. Race and insurance are grouped as recorded, or
(``race="paper"``, ``insurance="paper"``) in the Underdiagnosis paper's groups
(:mod:`cxrxai.demographic_groups`)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..demographic_groups import regroup
from ..errors import StoreError, UnknownNameError
from ..labels import ADMISSION_FIELDS, GROUPINGS, NO_FINDING
from ..metrics import fairness, group_means
from ..store import Store
from ..summaries import prediction_table
from ..summaries.hints import RACE_INSURANCE_SOURCE, THRESHOLDS_FILL, no_finding_truth
from ._cases import localization_cases, require_metrics
from ._registry import report

__all__ = ["explanation_auc_by_subgroup", "metric_by_subgroup", "no_group_reason", "require_decisions",
           "require_groups", "subgroup_tpr", "underdiagnosis"]

#: Grouping column → the image field it is made from.
_FIELD = {"sex": "sex", "age": "age", "age_bin": "age", "view": "view", "race": "race",
          "insurance": "insurance"}


def _columns(by: str | list[str]) -> list[str]:
    return [by] if isinstance(by, str) else list(by)


def _records(store: Store) -> dict[str, dict]:
    """Per dataset, what loading it found for each demographic (``config["demographics"]``)."""
    datasets = store.datasets()
    out = {}
    for row in datasets.to_dict("records") if len(datasets) else []:
        config = json.loads(row["config"]) if isinstance(row.get("config"), str) else {}
        out[row["dataset"]] = config.get("demographics", {}) if isinstance(config, dict) else {}
    return out


def no_group_reason(store: Store, image_ids, column: str) -> str:
    """Why the images ``image_ids`` have no (or few) values of ``column``, per dataset: the counts,
    where the values were looked for, and how to supply them (the record written when the dataset
    was loaded, see ``cxrxai.data.adapters._dicom_tags``)."""
    field = _FIELD.get(column, column)
    images = store.images(image_ids=list(image_ids), columns=["dataset", field])
    records, parts = _records(store), []
    for dataset, g in images.groupby("dataset", sort=True):
        have, n = int(g[field].notna().sum()), len(g)
        head = (f"no image of dataset {dataset!r} has a {field} (0 of {n:,})" if not have else
                f"{n - have:,} of {n:,} images of dataset {dataset!r} have no {field}")
        record = records.get(dataset, {}).get(field) or {}
        if record.get("why"):
            supply = record.get("supply") or "a CSV column"
            parts.append(f"{head}: {record['why']}; supply them with {supply}, then load the dataset again "
                         "(`python -m cxrxai precompute` or `import-predictions`)")
        else:
            parts.append(f"{head}: the store records no source of them (column {field}_source is empty; "
                         "the dataset was loaded before sources were recorded); load it again with "
                         "`python -m cxrxai precompute` or `import-predictions` to read its CSV and DICOM "
                         "headers")
    return "; ".join(parts)


def require_decisions(table: pd.DataFrame, model_id: str) -> pd.DataFrame:
    """The rows of ``table`` with a decision and a ground truth, or a :class:`StoreError` saying why
    there are none and how to fill them."""
    decided = table.dropna(subset=["predicted", "ground_truth"])
    if decided.empty:
        raise StoreError(f"model {model_id!r} has no decision on these {table.image_id.nunique():,} images: "
                         f"no threshold for any of {', '.join(table.label.unique())} (table thresholds) or "
                         f"no ground truth (table labels). Thresholds: {THRESHOLDS_FILL}")
    return decided


def require_groups(store: Store, table: pd.DataFrame, by: str | list[str], what: str) -> None:
    """An :class:`UnknownNameError` when ``by`` names no grouping; a :class:`StoreError` saying why,
    per grouping, and which groupings the rows do have, when no row of ``table`` has every ``by`` value
    (race and insurance: a store before schema v8 has no such column)."""
    cols = _columns(by)
    for c in cols:
        if c not in _FIELD:
            raise UnknownNameError("grouping", c, GROUPINGS)
    absent = [c for c in cols if c not in table.columns]
    if not absent and (table.empty or len(table.dropna(subset=cols))):
        return
    empty = absent + [c for c in cols if c in table.columns and table[c].isna().all()]
    ids = table["image_id"].unique()
    have = [c for c in GROUPINGS if c in table.columns and table[c].notna().any()]
    raise StoreError(f"{what} has no group by {' × '.join(cols)}: "
                     + "; ".join(_why_none(store, ids, c, c in empty) for c in empty or cols)
                     + f"; groupings it has: {', '.join(have) or 'none'}")


def _why_none(store: Store, ids, column: str, empty: bool) -> str:
    """Why no image of ``ids`` has ``column`` (``empty``: none has it) and how to supply it."""
    if empty and column in ADMISSION_FIELDS:
        return f"none of these {len(ids):,} images records {column}: {RACE_INSURANCE_SOURCE}"
    return no_group_reason(store, ids, column)


@report("subgroup-tpr", "thesis Fig. 2: TPR per finding by sex / age bin")
def subgroup_tpr(store: Store, model_id: str, *, by: str | list[str] = "sex", ci: str = "wilson",
                 split: str | None = None, race: str = "as_recorded", insurance: str = "as_recorded"
                 ) -> pd.DataFrame:
    """Thesis Fig. 2: TPR (and FPR, FNR) per finding by sex, age bin or both, with CIs and n.
    ``split``: test when the model has test predictions, else ``all`` (every predicted image);
    ``race`` / ``insurance``: ``as_recorded`` or ``paper`` (Seyyed-Kalantari et al.'s groups)."""
    table = regroup(prediction_table(store, model_id, split=split), race=race, insurance=insurance)
    table = table[table.label != NO_FINDING]
    decided = require_decisions(table, model_id)
    require_groups(store, decided, by, f"model {model_id!r}'s TPR by subgroup")
    return fairness.subgroup_rates(table, by, ci=ci)


@report("underdiagnosis", "Seyyed-Kalantari et al.: No Finding FPR / FNR by group")
def underdiagnosis(store: Store, model_id: str, *, by: str | list[str] = "sex", split: str | None = None,
                   race: str = "as_recorded", insurance: str = "as_recorded") -> pd.DataFrame:
    """Seyyed-Kalantari et al.: No Finding FPR (underdiagnosis) / FNR by group (``split``, ``race``
    and ``insurance`` as in :func:`subgroup_tpr`; ``all`` evaluates imported predictions on exactly
    their images)."""
    table = regroup(prediction_table(store, model_id, split=split), race=race, insurance=insurance)
    # a dataset's own spelling counts too (VinDr-CXR: "No finding")
    spelled = next((lab for lab in table.label.unique() if str(lab).casefold() == NO_FINDING.casefold()),
                   NO_FINDING)
    table = table.assign(label=table.label.replace({spelled: NO_FINDING}))
    nf = table[table.label == NO_FINDING]
    if nf.empty:
        raise StoreError(f"model {model_id!r} has no {NO_FINDING!r} output (labels: "
                         f"{', '.join(table.label.unique())}); the under/overdiagnosis analysis needs a "
                         "model that outputs one")
    if nf.predicted.isna().all() or nf.ground_truth.isna().all():
        missing = ("threshold (table thresholds)" if nf.predicted.isna().all()
                   else "ground truth (table labels)")
        fill = f"Thresholds: {THRESHOLDS_FILL}" if nf.predicted.isna().all() else no_finding_truth(store)
        raise StoreError(f"model {model_id!r} has no {NO_FINDING!r} {missing} on these "
                         f"{nf.image_id.nunique():,} images. {fill}")
    require_groups(store, nf.dropna(subset=["predicted", "ground_truth"]), by,
                   f"model {model_id!r}'s No Finding under/overdiagnosis")
    return fairness.underdiagnosis(table, by)


@report("explanation-auc-subgroups", "thesis Fig. 5: explanation AUC by subgroup", view="subgroups")
def explanation_auc_by_subgroup(store: Store, model_id: str, *, by: str = "sex", method: str = "occlusion",
                                metric: str = "roc_auc", race: str = "as_recorded",
                                insurance: str = "as_recorded") -> pd.DataFrame:
    """Thesis Fig. 5: explanation AUC (or another metric of the ``subgroups`` view) of true positives
    per finding and subgroup; a group of the scored cases without a true positive is shown with
    n = 0 and a note saying why (``race`` / ``insurance`` as in :func:`subgroup_tpr`)."""
    groups = {"race": race, "insurance": insurance}
    cases = regroup(localization_cases(store, model_id, slice_="true_positive", method=method), **groups)
    scored = regroup(localization_cases(store, model_id, slice_="all", method=method), **groups)
    what = f"model {model_id!r}'s explanation {metric} of {method!r} by subgroup (true positives)"
    require_metrics(cases, store, model_id, metric)
    return metric_by_subgroup(store, cases, scored, metric, by, what)


def metric_by_subgroup(store: Store, cases: pd.DataFrame, scored: pd.DataFrame, metric: str, by: str,
                       what: str) -> pd.DataFrame:
    """Mean ``metric`` of the true-positive ``cases`` per finding and group, with every group of
    ``scored`` (all scored cases of the finding) shown: one without a value has n = 0 and a ``note``
    saying why (no positive scored, positives none of which the model predicted, or NaN metrics)."""
    require_groups(store, cases, by, what)
    cols = _columns(by)
    levels = scored.dropna(subset=cols)
    out = group_means.metric_by_group(cases, metric, by, expected=levels[["label", *cols]])
    positives = levels[levels.gt_positive == True].groupby(["label", *cols]).size()  # noqa: E712 — nullable
    keys = out[["label", *cols]].itertuples(index=False, name=None)
    notes = [_note(int(n), int(n_nan), int(positives.get(key, 0)), metric)
             for key, n, n_nan in zip(keys, out["n"], out["n_nan"])]
    return out.assign(note=np.array(notes, dtype=object))


def _note(n: int, n_nan: int, positives: int, metric: str) -> str | None:
    """Why a group of the explanation-by-subgroup table has no value (None when it has one)."""
    if n:
        return None
    if n_nan:
        return f"{n_nan} true-positive case(s), {metric} undefined on each (NaN: e.g. an empty mask)"
    if positives:
        return f"no true positive: {positives} positive case(s) scored, the model predicted none of them"
    return "no true positive: no positive case of this finding in this group among the scored maps"
