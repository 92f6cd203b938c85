"""The explorer's cases: one row per image × finding with its outcome and stored localization scores
(every metric of the ``cases`` view), the finding a view opens on, and the explorer's filters."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..labels import NO_FINDING
from ..metrics import registry as metric_registry
from ..store import Store, main_rows
from .predictions import resolve_split

__all__ = ["case_probabilities", "case_table", "filter_cases", "finding_choices", "outcome", "with_metrics"]


def finding_choices(cases: pd.DataFrame, order) -> pd.DataFrame:
    """Per finding of ``order`` present in ``cases``: positives and labelled cases (ground truth
    known), in ``order``; ``default`` marks the one a view opens on: the first with positives,
    else the first the dataset labels, else the first."""
    present = [f for f in order if f in set(cases["label"])]
    truth = cases.groupby("label")["ground_truth"]
    table = pd.DataFrame({"finding": present,
                          "positives": [int(truth.get_group(f).eq(1).sum()) for f in present],
                          "labelled": [int(truth.get_group(f).notna().sum()) for f in present]})
    ranked = table.assign(rank=np.select([table.positives > 0, table.labelled > 0], [0, 1], 2))
    table["default"] = False
    if len(table):
        table.loc[ranked["rank"].idxmin(), "default"] = True
    return table


def outcome(ground_truth, predicted) -> np.ndarray:
    """TP / FP / FN / TN per row (empty string where either value is missing)."""
    y = pd.Series(ground_truth).to_numpy(float)
    p = pd.Series(predicted).to_numpy(float)
    out = np.full(len(y), "", dtype=object)
    known = np.isfinite(y) & np.isfinite(p)
    out[known & (y == 1) & (p == 1)] = "TP"
    out[known & (y == 0) & (p == 1)] = "FP"
    out[known & (y == 1) & (p == 0)] = "FN"
    out[known & (y == 0) & (p == 0)] = "TN"
    return out


def with_metrics(df: pd.DataFrame, metrics) -> pd.DataFrame:
    """``df`` with a column for each of ``metrics``: a table of every metric of a view shows one the
    store has no scores of (a metric registered after its maps were scored) as empty (NaN, n 0),
    where a report of one chosen metric says why it cannot (``cxrxai.reports`` ``require_metrics``)."""
    return df.assign(**{name: np.nan for name in metrics if name not in df.columns})


def case_table(store: Store, model_id: str, *, split: str | None = None, method: str | None = None,
               params_key: str | None = None, reader: str = "gt") -> pd.DataFrame:
    """One row per image × finding of ``model_id`` (a column): demographics, probability, threshold,
    truth, outcome, and every metric of the ``cases`` view
    (:func:`~cxrxai.metrics.registry.metric_names`): when ``method`` is given, that map's stored
    scores (NaN where none). ``split``: see :func:`resolve_split` (default: test when the model has
    test predictions, else all)."""
    t = store.prediction_table(model_id, split=resolve_split(store, model_id, split))
    t = t[t.label != NO_FINDING].copy()
    t["outcome"] = outcome(t["ground_truth"], t["predicted"])
    # whose numbers these are (a panel refuses another model's: cxrxai.present.panel)
    t["model_id"] = model_id
    names = metric_registry.metric_names(view="cases")
    if method is not None:
        loc = store.table("localization", model_id=model_id, source="explainer", method=method, reader=reader)
        if not loc.empty:  # one setting: the given one, else the method's default (not a sweep setting)
            loc = (
                loc[loc.params_key == params_key]
                if params_key
                else main_rows(loc, store.default_settings(model_id))
            )
        if not loc.empty:
            scored = loc[["image_id", "label", *(n for n in names if n in loc.columns)]]
            t = t.merge(scored.drop_duplicates(["image_id", "label"]), on=["image_id", "label"], how="left")
    return with_metrics(t, names).reset_index(drop=True)


def case_probabilities(cases: pd.DataFrame, image_id: str) -> pd.DataFrame:
    """Every label's probability of one image with its threshold, ground truth and outcome."""
    return cases.loc[cases.image_id == image_id, ["label", "prob", "threshold", "ground_truth", "outcome"]
                     ].reset_index(drop=True)


def filter_cases(cases: pd.DataFrame, *, finding: str | None = None, sexes=None, age_bins=None, outcomes=None,
                 prob_range: tuple[float, float] = (0.0, 1.0), metric: str | None = None,
                 metric_range: tuple[float, float] = (0.0, 1.0), image_ids=None, pairs=None) -> pd.DataFrame:
    """The explorer's filters; an empty selection of a multi-choice filter means "any".

    ``pairs`` — exact (image_id, finding) pairs chosen elsewhere (a lasso on a scatter plot) —
    replaces ``finding``: the rows are those pairs, whatever their findings."""
    keep = cases["prob"].between(*prob_range)
    if pairs is not None:
        wanted = {(str(i), str(lab)) for i, lab in pairs}
        keep &= pd.Series(
            [(i, lab) in wanted for i, lab in zip(cases["image_id"], cases["label"])], index=cases.index
        )
    elif finding:
        keep &= cases["label"] == finding
    for col, values in (("sex", sexes), ("age_bin", age_bins), ("outcome", outcomes)):
        if values:
            keep &= cases[col].isin(list(values))
    if metric and metric_range != (0.0, 1.0):
        keep &= cases[metric].between(*metric_range)
    if image_ids is not None:
        keep &= cases["image_id"].isin(list(image_ids))
    return cases[keep].reset_index(drop=True)
