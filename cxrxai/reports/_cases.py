"""What every localization report reads: the scored cases of one model (one setting per method, a
slice of them) with demographics, and a typed error when the store lacks what a report needs (rows,
or a metric registered after the store was scored)."""

from __future__ import annotations

import pandas as pd

from ..errors import StoreError, UnknownNameError
from ..labels import ADMISSION_FIELDS
from ..metrics import registry as metric_registry
from ..store import Store, main_rows
from ..summaries import fill_hint, will_come
from ..summaries.cases import with_metrics

__all__ = [
    "labels_only",
    "localization_cases",
    "need",
    "no_region",
    "require_metrics",
    "second_readers",
    "with_metrics",
]

SLICES = ("true_positive", "positive", "all")


def need(df: pd.DataFrame, store: Store, what: str, table: str, model_id: str | None = None) -> pd.DataFrame:
    """``df`` if it has rows, else a :class:`StoreError` naming what is missing and its command."""
    if df.empty:
        whose = f"model {model_id!r} has" if model_id else "the store has"
        yet = " yet" if will_come(store, table, model_id) else ""
        raise StoreError(f"{whose} no {what}{yet} (table {table}); {fill_hint(store, table, model_id)}")
    return df


def no_region(store: Store, model_id: str, loc: pd.DataFrame, reader: str = "gt") -> str | None:
    """Why none of the scored rows ``loc`` has a ground-truth region (``gt_positive``), or ``None``
    when some do: the store has no region of ``reader`` at all (a dataset of labels only), or it has
    some but none on the scored (image, finding) pairs."""
    if loc["gt_positive"].fillna(False).astype(bool).any():
        return None
    regions = store.annotations(reader=reader)
    if regions.empty:
        return labels_only(model_id)
    pairs = loc[["image_id", "label"]].drop_duplicates()
    return (
        f"none of model {model_id!r}'s {len(pairs)} scored (image, finding) pairs has a ground-truth "
        f"region of reader {reader!r}: the store's {regions.image_id.nunique()} images with a box or mask "
        "are not among them (another split, or findings the model does not score). Precompute the split "
        "that holds them (`python -m cxrxai precompute ... --split all`)"
    )


def labels_only(model_id: str) -> str:
    """Why ``model_id``'s scored maps have no positive case: no ground-truth region anywhere (a
    dataset of labels only), and what would give it one."""
    return (
        f"model {model_id!r} has maps scored against no ground-truth region: the dataset has no box or "
        "mask for any finding of its scored maps (labels only), and localization needs regions. Use a "
        "dataset with boxes or masks (NIH's BBox_List_2017.csv, CheXlocalize, SIIM, RSNA, VinDr) or "
        "give the folder adapter a boxes CSV (`python -m cxrxai precompute --dataset folder ... "
        "--data-option boxes_csv=FILE`)"
    )


def _never_scored(df: pd.DataFrame, store: Store, model_id: str, name: str) -> bool:
    """Whether metric ``name`` has no value in ``df`` because the store never scored it (a metric
    registered after the maps were scored: the store lists its (row, metric) pairs as missing)."""
    if name not in df.columns:
        return True
    if df[name].notna().any():
        return False
    missing = store.localization_missing(model_id=model_id)
    if "source" in df.columns and "source" in missing.columns:  # reader rows never get some metrics
        missing = missing[missing["source"].isin(set(df["source"]))]
    return name in set(missing.get("metric", []))


def require_metrics(df: pd.DataFrame, store: Store, model_id: str, *metrics: str) -> pd.DataFrame:
    """``df`` if the store has scored each of ``metrics``, else a :class:`StoreError` saying which
    metric it has no scores of (one registered after its maps were scored) and how to score it."""
    for name in metrics:
        if _never_scored(df, store, model_id, name):
            what = f"{metric_registry.label(name)} ({name})"
            raise StoreError(
                f"model {model_id!r} has no {what} scores: the metric was registered after its maps "
                "were scored; the localization stage scores it from the stored maps (no map "
                "recomputed): " + fill_hint(store, "localization", model_id)
            )
    return df


def _scored(store: Store, model_id: str, reader: str, source: str) -> pd.DataFrame:
    loc = store.table("localization", model_id=model_id, reader=reader)
    loc = loc[loc.source == source] if not loc.empty else loc
    if loc.empty:
        readers = sorted(set(store.table("localization", model_id=model_id).get("reader", [])))
        if readers:
            raise StoreError(
                f"model {model_id!r} has no localization metrics against reader {reader!r} "
                f"(table localization has readers {', '.join(readers)}); choose reader= one of them"
            )
        need(loc, store, "localization metrics", "localization", model_id)
    return loc


def _of_method(store: Store, model_id: str, loc: pd.DataFrame, method: str) -> pd.DataFrame:
    have = sorted(loc.method.unique())
    loc = loc[loc.method == method]
    if loc.empty:
        hint = fill_hint(store, "localization", model_id, method=method)
        raise StoreError(
            f"model {model_id!r} has no localization metrics for explainer {method!r} (table "
            f"localization has {', '.join(have)}); " + hint.replace("gradcam,gradcam++", method)
        )
    return loc


def _sliced(loc: pd.DataFrame, slice_: str) -> pd.DataFrame:
    if slice_ == "true_positive":
        # nullable: NA counts as not predicted
        return loc[loc.gt_positive & (loc.predicted == True)]  # noqa: E712
    if slice_ == "positive":
        return loc[loc.gt_positive]
    if slice_ != "all":
        raise UnknownNameError("slice", slice_, SLICES)
    return loc


def localization_cases(store: Store, model_id: str, *, reader: str = "gt", slice_: str = "true_positive",
                       method: str | None = None, params_key: str | None = None, source: str = "explainer"
                       ) -> pd.DataFrame:
    """Per-case localization rows joined with demographics, parameters and geometry.

    One setting per method: ``params_key``, by default the method's default (occlusion 32/16, not the
    sweep's), else its most scored, so no case counts twice; ``params_key="*"`` keeps every setting.

    ``slice_``: ``true_positive`` (ground truth positive and the model predicted it: the
    thesis's TP cases), ``positive`` (ground truth positive: Saporta's true-positive slice of
    segmentations), or ``all``. ``source``: what was scored — ``explainer`` maps (default),
    ``baseline`` maps (Arun et al.'s average mask, random) or a second ``reader`` (human benchmark).
    """
    loc = _scored(store, model_id, reader, source)
    if method is not None:
        loc = _of_method(store, model_id, loc, method)
    if params_key is None:  # chosen on every case, not the slice, so every report scores the same setting
        loc = main_rows(loc, store.default_settings(model_id))
    elif params_key != "*":
        stored = sorted(loc.params_key.unique())
        loc = loc[loc.params_key == params_key]
        if loc.empty:
            raise UnknownNameError("params_key of the scored maps", params_key, stored)
    sliced = _sliced(loc, slice_)
    if sliced.empty:
        why = no_region(store, model_id, loc, reader)
        raise StoreError(why or _no_case_in_slice(model_id, loc, slice_, method))
    loc = sliced
    groups = [c for c in ADMISSION_FIELDS if store.images_have([c])]  # since schema v8
    imgs = store.images(image_ids=loc.image_id.unique(),
                        columns=["sex", "age", "age_bin", "view", "split", *groups])  # every grouping's field
    return loc.merge(imgs, on="image_id", how="left")


def _no_case_in_slice(model_id: str, loc: pd.DataFrame, slice_: str, method: str | None) -> str:
    """Why ``slice_`` of the scored rows ``loc`` is empty though some are ground-truth positive: the
    model called none of them (the true-positive slice), and what would widen it."""
    positive = loc["gt_positive"].fillna(False).astype(bool)
    positives = loc.loc[positive, ["image_id", "label"]].drop_duplicates()
    wider = " or ".join(f"slice={s}" for s in SLICES[SLICES.index(slice_) + 1:])
    of = f" of {method!r}" if method else ""
    return (
        f"model {model_id!r} has no {slice_.replace('_', '-')} cases among its scored maps{of} (table "
        f"localization): it predicted none of the {len(positives)} ground-truth-positive cases it has maps "
        f"of positive at its threshold. Choose {wider} to score them whatever the prediction. Cheap "
        "explainers already cover every image of the precomputed split, so only more images (`python -m "
        "cxrxai precompute ... --split all`, or more data) may hold a true positive, not surely"
    )


def second_readers(store: Store, model_id: str) -> list[str]:
    """The second readers scored for ``model_id`` (the human benchmark's), sorted."""
    loc = store.table("localization", model_id=model_id, source="reader")
    return sorted(loc["method"].unique()) if not loc.empty else []
