"""Saporta et al. (CheXlocalize, Nat. Mach. Intell. 2022): localization per finding with bootstrap
CIs and against a second reader (Fig. 2, Suppl. Tables 4–5), localization regressed on lesion
geometry (Table 1) and on model confidence (Table 2)."""

from __future__ import annotations

import pandas as pd

from .. import stats
from ..errors import StoreError
from ..metrics import registry as metric_registry
from ..store import Store
from ..summaries import fill_hint
from ._cases import localization_cases, need, require_metrics, second_readers, with_metrics
from ._registry import report

__all__ = ["confidence_regressions", "geometry_cases", "geometry_regressions", "human_benchmark",
           "localization_summary"]

GEOMETRY_FEATURES = ["instances", "size", "elongation", "irrectangularity"]


@report("localization", "Saporta Fig. 2: mIoU / hit rate per finding with bootstrap CI", view="localization")
def localization_summary(store: Store, model_id: str, *, metric: str = "iou", reader: str = "gt",
                         method: str = "gradcam", n_boot: int = 1000) -> pd.DataFrame:
    """Saporta Fig. 2: per finding, mIoU or hit rate with bootstrap 95 % CI over positive cases."""
    cases = localization_cases(store, model_id, reader=reader, slice_="positive", method=method)
    require_metrics(cases, store, model_id, metric)
    wide = cases.pivot_table(index="image_id", columns="label", values=metric, aggfunc="first")
    return stats.bootstrap_table(wide, n_boot=n_boot).rename(columns={"name": "label"})


def _benchmark_reader(store: Store, model_id: str, benchmark_reader: str | None) -> str | None:
    readers = second_readers(store, model_id)
    return benchmark_reader or (readers[0] if readers else None)


@report("human-benchmark", "Saporta Fig. 2, Suppl. Tables 4-5: % decrease vs a second reader",
        view="localization")
def human_benchmark(store: Store, model_id: str, *, metric: str = "iou", method: str = "gradcam",
                    benchmark_reader: str | None = None, n_boot: int = 1000) -> pd.DataFrame:
    """Saporta Fig. 2 / Supplementary Tables 4–5: % decrease from a second reader to the method."""
    hb = _benchmark_reader(store, model_id, benchmark_reader)
    if hb is None:
        raise StoreError(
            f"model {model_id!r} has no second reader's scores (table localization, source reader); "
            f"{fill_hint(store, 'reader', model_id)}"
        )
    method_cases = localization_cases(store, model_id, slice_="positive", method=method)
    hb_cases = localization_cases(store, model_id, slice_="positive", method=hb, source="reader")
    require_metrics(method_cases, store, model_id, metric)
    require_metrics(hb_cases, store, model_id, metric)
    pred = method_cases.pivot_table(index="image_id", columns="label", values=metric, aggfunc="first")
    bench = hb_cases.pivot_table(index="image_id", columns="label", values=metric, aggfunc="first")
    return stats.percentage_decrease(bench, pred, n_boot=n_boot)


def geometry_cases(store: Store, model_id: str, *, method: str = "gradcam", dominant: str = "most_points"
                   ) -> pd.DataFrame:
    """Each scored positive case (reference reader) with its lesion's geometric features."""
    geo = need(
        store.table("geometry", reader="gt", dominant=dominant), store, "geometric features", "geometry"
    )
    cases = localization_cases(store, model_id, slice_="positive", method=method)
    return cases.merge(geo[["image_id", "label", *GEOMETRY_FEATURES]], on=["image_id", "label"])


@report("geometry", "Saporta Table 1: localization ~ lesion geometry (OLS, Bonferroni)")
def geometry_regressions(store: Store, model_id: str, *, method: str = "gradcam", normalize: str = "minmax",
                         dominant: str = "most_points", benchmark_reader: str | None = None) -> pd.DataFrame:
    """Saporta Table 1: each metric of the ``geometry`` view (IoU and hit) ~ each geometric feature
    (pooled findings, positive slice), Bonferroni k = 4; with a second reader also the
    (benchmark − method) differences (``hb_<metric>``, ``<metric>_diff``)."""
    names = metric_registry.metric_names(view="geometry")
    df = with_metrics(geometry_cases(store, model_id, method=method, dominant=dominant), names)
    outcomes = list(names)
    hb = _benchmark_reader(store, model_id, benchmark_reader)
    if hb is not None:
        loc = with_metrics(store.table("localization", model_id=model_id, source="reader", method=hb), names)
        bench = loc[["image_id", "label", *names]].rename(columns={n: f"hb_{n}" for n in names})
        df = df.merge(bench, on=["image_id", "label"], how="left")
        df = df.assign(**{f"{n}_diff": df[f"hb_{n}"] - df[n] for n in names})
        outcomes += [f"{n}_diff" for n in names]
    return pd.concat(
        [stats.feature_regressions(df, y, GEOMETRY_FEATURES, normalize=normalize) for y in outcomes],
        ignore_index=True,
    )


@report("confidence", "Saporta Table 2: localization ~ model confidence (OLS + Spearman)", view="confidence")
def confidence_regressions(store: Store, model_id: str, *, method: str = "gradcam", metric: str = "iou_gated"
                           ) -> pd.DataFrame:
    """Saporta Table 2: ``metric`` (a metric of the ``confidence`` view: by default the IoU over the
    full dataset, probability-gated) ~ model probability, per finding and pooled, with Spearman ρ
    and Fisher-z CI."""
    cases = localization_cases(store, model_id, slice_="all", method=method)
    return stats.confidence_regressions(require_metrics(cases, store, model_id, metric), metric)
