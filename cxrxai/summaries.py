"""Store-level summaries that pages and reports show (data in, DataFrames out; no UI)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from .errors import StoreError
from .labels import AGE_BINS, NO_FINDING
from .metrics.classification import auroc_ci
from .store import CAM_ONLY_META, Store, main_rows

__all__ = ["ALL", "case_table", "cohort_table", "fill_command", "fill_hint", "filter_cases",
           "finding_choices", "label_table", "model_performance", "outcome",
           "prediction_table", "resolve_split", "split_choices"]

#: The split name that means "every image with a prediction of the model".
ALL = "all"


def resolve_split(store: Store, model_id: str, split: str | None) -> str | None:
    """The split a view evaluates, as a ``prediction_table`` argument (``None`` = every image).

    ``"all"`` → every image the model has a prediction for (predictions imported from elsewhere
    cover exactly the images they were made on); ``None`` → the test split when the model has
    predictions there, else every image; any other name is taken as given.
    """
    if split == ALL:
        return None
    if split is None:
        return "test" if "test" in store.prediction_splits(model_id) else None
    return split


def split_choices(store: Store, model_id: str) -> dict[str, int]:
    """The splits ``model_id`` has predictions in (test, val, train first, then any other), then
    :data:`ALL`, each with its number of images — what a split picker offers."""
    have = store.prediction_splits(model_id)
    usual = ("test", "val", "train")
    order = [s for s in usual if s in have] + [s for s in have if s not in usual]
    return {**{s: have[s] for s in order}, ALL: sum(have.values())}


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


def fill_command(store: Store, what: str = "predictions") -> str:
    """The command that fills ``what`` in this store: the demo build for the demo store, else a
    precompute (or an import, for predictions)."""
    if "demo" in set(store.datasets().get("dataset", [])):
        return "python -m cxrxai demo"
    if what == "predictions":
        return "python -m cxrxai precompute --model ... (or import-predictions --predictions preds.csv)"
    extra = {"trust": " --analyses trust", "fidelity": " --analyses fidelity", "sweep": " --analyses sweep"}.get(what, "")
    return f"python -m cxrxai precompute --model ... --explainers gradcam,gradcam++{extra}"


def fill_hint(store: Store, what: str = "predictions", model_id: str | None = None) -> str:
    """How the missing ``what`` of ``model_id`` gets filled, as the end of a sentence: the command
    (:func:`fill_command`), or, for a model the build deliberately gives its CAMs only, that it
    does and which model to pick instead."""
    cam_only = json.loads(store.meta(CAM_ONLY_META) or "{}")
    serves = cam_only.get(model_id) if model_id else None
    if serves is None:
        return f"fill it with `{fill_command(store, what)}`"
    others = [m for m in store.models().model_id if m not in cam_only]
    return (f"it is a second training of {serves!r}, kept for that model's repeatability, with its predictions "
            f"and Grad-CAM / Grad-CAM++ maps only; pick {' or '.join(repr(m) for m in others)} here")


def prediction_table(store: Store, model_id: str, *, split: str | None = None) -> pd.DataFrame:
    """``store.prediction_table`` over :func:`resolve_split`'s split; when it is empty, a
    :class:`StoreError` naming the model, the split, what the model does have and the command
    that fills it."""
    resolved = resolve_split(store, model_id, split)
    table = store.prediction_table(model_id, split=resolved)
    if not table.empty:
        return table
    models = store.models()
    known = models["model_id"].tolist() if len(models) else []
    if model_id not in known:
        raise StoreError(f"the store has no model {model_id!r} (models: {', '.join(known) or 'none'}); "
                         f"fill it with `{fill_command(store)}`")
    have = store.prediction_splits(model_id)
    if not have:
        raise StoreError(f"model {model_id!r} has no predictions (table predictions is empty for it); "
                         f"fill it with `{fill_command(store)}`")
    listing = ", ".join(f"{k} {v:,} images" for k, v in have.items())
    raise StoreError(f"model {model_id!r} has no predictions in split {resolved!r} (table predictions has {listing}); "
                     f"choose split=all or one of {', '.join(have)}, or predict that split with "
                     f"`python -m cxrxai precompute ... --split {resolved}`")


def model_performance(store: Store, model_id: str, *, split: str | None = None, n_boot: int = 1000,
                      seed: int = 0) -> pd.DataFrame:
    """AUROC with bootstrap 95 % CI, counts and threshold per label on one split.

    Columns: label, auroc, lower, upper, n_positive, n_negative, threshold, tpr, fpr (the last two
    at the stored threshold; NaN without one).
    """
    table = store.prediction_table(model_id, split=resolve_split(store, model_id, split)).dropna(subset=["ground_truth"])
    rows = []
    for label, grp in table.groupby("label", sort=False):
        y = grp["ground_truth"].to_numpy(int)
        point, lo, hi = auroc_ci(y, grp["prob"].to_numpy(float), n_boot=n_boot, seed=seed)
        pred = grp["predicted"].to_numpy(float)
        pos, neg = y == 1, y == 0
        rows.append({
            "label": label, "auroc": point, "lower": lo, "upper": hi,
            "n_positive": int(pos.sum()), "n_negative": int(neg.sum()),
            "threshold": grp["threshold"].iloc[0],
            "tpr": float(np.nanmean(pred[pos])) if np.isfinite(pred[pos]).any() else np.nan,
            "fpr": float(np.nanmean(pred[neg])) if np.isfinite(pred[neg]).any() else np.nan,
        })
    return pd.DataFrame(rows)


def cohort_table(store: Store, *, dataset: str | None = None) -> pd.DataFrame:
    """Images per split × sex × age bin (age bins in their natural order; missing shown as such)."""
    counts = store.image_counts(["split", "sex", "age_bin"], dataset=dataset)
    if counts.empty:
        return counts
    counts = counts.fillna({"sex": "missing", "age_bin": "missing"})
    wide = counts.pivot_table(index=["split", "sex"], columns="age_bin", values="n", aggfunc="sum", fill_value=0)
    order = [b for b in AGE_BINS if b in wide.columns] + [c for c in wide.columns if c not in AGE_BINS]
    wide = wide[order]
    wide["total"] = wide.sum(axis=1)
    return wide.reset_index()


def label_table(store: Store, *, dataset: str | None = None) -> pd.DataFrame:
    """Positive cases per label and split (with prevalence)."""
    counts = store.label_counts(dataset=dataset)
    if counts.empty:
        return counts
    counts["prevalence"] = counts["positive"] / (counts["positive"] + counts["negative"]).replace(0, np.nan)
    return counts


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


def case_table(store: Store, model_id: str, *, split: str | None = None, method: str | None = None,
               params_key: str | None = None, reader: str = "gt") -> pd.DataFrame:
    """One row per image × finding of ``model_id`` (a column): demographics, probability, threshold,
    truth, outcome, and — when ``method`` is given — that map's stored IoU, hit and AUC. ``split``:
    see :func:`resolve_split` (default: test when the model has test predictions, else all)."""
    t = store.prediction_table(model_id, split=resolve_split(store, model_id, split))
    t = t[t.label != NO_FINDING].copy()
    t["outcome"] = outcome(t["ground_truth"], t["predicted"])
    t["model_id"] = model_id  # whose numbers these are (a panel refuses another model's: cxrxai.panel)
    if method is not None:
        loc = store.table("localization", model_id=model_id, source="explainer", method=method, reader=reader)
        if not loc.empty:  # one setting: the given one, else the method's default (not a sweep setting)
            loc = loc[loc.params_key == params_key] if params_key else main_rows(loc, store.default_settings(model_id))
        if not loc.empty:
            t = t.merge(loc[["image_id", "label", "iou", "hit", "roc_auc"]].drop_duplicates(["image_id", "label"]),
                        on=["image_id", "label"], how="left")
    for col in ("iou", "hit", "roc_auc"):
        if col not in t:
            t[col] = np.nan
    return t.reset_index(drop=True)


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
        keep &= pd.Series([(i, lab) in wanted for i, lab in zip(cases["image_id"], cases["label"])], index=cases.index)
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
