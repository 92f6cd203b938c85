"""What a model predicted on a split: the split a view evaluates, the predictions table with a
clear error when it is empty, AUROC per label, and the cohort and labels of a dataset."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import StoreError
from ..labels import AGE_BINS
from ..metrics.classification import auprc_ci, auroc_ci, roc_points
from ..metrics.comparison import delong_ci
from ..store import Store
from .hints import fill_command

__all__ = ["ALL", "cohort_table", "label_table", "model_performance", "prediction_table", "resolve_split",
           "roc_table", "split_choices", "split_note"]

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


def split_note(store: Store, model_id: str, split: str | None = None) -> str:
    """A caption naming the images a view of ``split`` evaluates (:func:`resolve_split`: a report's
    default is the test split where ``model_id`` has one), how many of its predicted images that is,
    and the splits left out — so a store precomputed with ``--split all`` is not read as all.

    ``"Evaluated on the test split: 4 of the 8 images with predictions of m (not counted: val 4)…"``
    """
    have = store.prediction_splits(model_id)
    total = sum(have.values())
    used = resolve_split(store, model_id, split)
    if used is None:
        listing = ", ".join(f"{s} {n:,}" for s, n in have.items())
        return f"Evaluated on every image with a prediction of {model_id}: {total:,} ({listing})."
    others = ", ".join(f"{s} {n:,}" for s, n in have.items() if s != used)
    head = (f"Evaluated on the {used} split: {have.get(used, 0):,} of the {total:,} images with predictions "
            f"of {model_id}")
    if not others:
        return head + "."
    why = (f" — reports evaluate the test split where there is one{_threshold_source(store, model_id)}"
           if split is None else "")
    return f"{head} (not counted: {others}){why}."


def _threshold_source(store: Store, model_id: str) -> str:
    """Where ``model_id``'s decision thresholds were chosen, as the store records it (a split, a
    model's card, a file), in parentheses; empty when it has none."""
    rows = store.thresholds(model_id)
    if rows.empty:
        return ""
    sources = sorted({f"chosen on {sp}" if isinstance(sp, str) and sp else f"from {m}"
                      for sp, m in zip(rows["split"], rows["method"])})
    return f" (thresholds {', '.join(sources)})"


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
    raise StoreError(
        f"model {model_id!r} has no predictions in split {resolved!r} (table predictions has {listing}); "
        f"choose split=all or one of {', '.join(have)}, or predict that split with "
        f"`python -m cxrxai precompute ... --split {resolved}`"
    )


#: Above this many labelled cases of a finding, its AUROC interval is DeLong's, not a bootstrap's.
BOOTSTRAP_MAX_N = 20_000


def model_performance(store: Store, model_id: str, *, split: str | None = None, n_boot: int = 1000,
                      seed: int = 0) -> pd.DataFrame:
    """AUROC with its 95 % CI, counts and threshold per label on one split.

    Columns: label, auroc, lower, upper, interval, auprc with its logit interval (auprc_lower,
    auprc_upper; chance is the prevalence), n_positive, n_negative, threshold, tpr, fpr (the last two
    at the stored threshold; NaN without one). ``interval``: a percentile bootstrap of
    ``n_boot`` case resamples (the papers' convention) up to :data:`BOOTSTRAP_MAX_N` labelled cases,
    DeLong's variance above (1,000 resamples of 377,110 cases would take minutes per finding).
    """
    table = store.prediction_table(model_id, split=resolve_split(store, model_id, split)).dropna(
        subset=["ground_truth"]
    )
    rows = []
    for label, grp in table.groupby("label", sort=False):
        y = grp["ground_truth"].to_numpy(int)
        if len(y) <= BOOTSTRAP_MAX_N:
            point, lo, hi = auroc_ci(y, grp["prob"].to_numpy(float), n_boot=n_boot, seed=seed)
            interval = f"bootstrap ({n_boot:,} case resamples, seed {seed})"
        else:
            point, lo, hi = delong_ci(y, grp["prob"].to_numpy(float))
            interval = f"DeLong (over {BOOTSTRAP_MAX_N:,} cases)"
        pred = grp["predicted"].to_numpy(float)
        pos, neg = y == 1, y == 0
        ap, ap_lo, ap_hi = auprc_ci(y, grp["prob"].to_numpy(float))
        rows.append({
            "label": label, "auroc": point, "lower": lo, "upper": hi, "interval": interval,
            "auprc": ap, "auprc_lower": ap_lo, "auprc_upper": ap_hi,
            "n_positive": int(pos.sum()), "n_negative": int(neg.sum()),
            "threshold": grp["threshold"].iloc[0],
            "tpr": float(np.nanmean(pred[pos])) if np.isfinite(pred[pos]).any() else np.nan,
            "fpr": float(np.nanmean(pred[neg])) if np.isfinite(pred[neg]).any() else np.nan,
        })
    return pd.DataFrame(rows)


def roc_table(store: Store, model_id: str, *, split: str | None = None) -> pd.DataFrame:
    """The ROC curve of each label on one split, long: label, fpr, tpr (its corners), n_positive,
    n_negative — what :func:`model_performance`'s AUROC is the area under."""
    table = store.prediction_table(model_id, split=resolve_split(store, model_id, split)).dropna(
        subset=["ground_truth"])
    parts = []
    for label, grp in table.groupby("label", sort=True):
        y = grp["ground_truth"].to_numpy(int)
        fpr, tpr = roc_points(y, grp["prob"].to_numpy(float))
        parts.append(pd.DataFrame({"label": label, "fpr": fpr, "tpr": tpr, "n_positive": int(y.sum()),
                                   "n_negative": int((y == 0).sum())}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["label", "fpr", "tpr"])


def cohort_table(store: Store, *, dataset: str | None = None) -> pd.DataFrame:
    """Images per split × sex × age bin (age bins in their natural order; missing shown as such)."""
    counts = store.image_counts(["split", "sex", "age_bin"], dataset=dataset)
    if counts.empty:
        return counts
    counts = counts.fillna({"sex": "missing", "age_bin": "missing"})
    wide = counts.pivot_table(
        index=["split", "sex"], columns="age_bin", values="n", aggfunc="sum", fill_value=0
    )
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
