"""The papers' tables from a store (``python -m cxrxai report NAME``; the app's pages): each is ``fn(store,
model_id, **options) -> DataFrame``, in :data:`REPORTS` with what it reproduces; conventions are options (papers' defaults)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import stats
from ..errors import StoreError, UnknownNameError
from ..explain import setting_names
from ..metrics import shortcut, trust
from ..store import Store, main_rows
from ..summaries import fill_hint, model_performance, prediction_table
from .subgroups import metric_by_subgroup, subgroup_tpr, underdiagnosis

__all__ = ["REPORTS", "Report", "geometry_cases", "localization_cases", "report_options", "run_report"]


@dataclass(frozen=True)
class Report:
    name: str
    reproduces: str
    fn: Callable[..., pd.DataFrame]
    needs_model: bool = True  # False: the report reads its own models' rows (the planted shortcut)


def _need(df: pd.DataFrame, store: Store, what: str, table: str, model_id: str | None = None) -> pd.DataFrame:
    """``df`` if it has rows, else a :class:`StoreError` naming what is missing and its command."""
    if df.empty:
        whose = f"model {model_id!r} has" if model_id else "the store has"
        raise StoreError(f"{whose} no {what} yet (table {table}); {fill_hint(store, table, model_id)}")
    return df


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
    loc = store.table("localization", model_id=model_id, reader=reader)
    loc = loc[loc.source == source] if not loc.empty else loc
    if loc.empty:
        readers = sorted(set(store.table("localization", model_id=model_id).get("reader", [])))
        if readers:
            raise StoreError(
                f"model {model_id!r} has no localization metrics against reader {reader!r} "
                f"(table localization has readers {', '.join(readers)}); choose reader= one of them"
            )
        _need(loc, store, "localization metrics", "localization", model_id)
    if method is not None:
        have = sorted(loc.method.unique())
        loc = loc[loc.method == method]
        if loc.empty:
            raise StoreError(
                f"model {model_id!r} has no localization metrics for explainer {method!r} (table "
                f"localization has {', '.join(have)}); "
                + fill_hint(store, "localization", model_id, method=method).replace(
                    "gradcam,gradcam++", method
                )
            )
    if params_key is None:  # chosen on every case, not the slice, so every report scores the same setting
        loc = main_rows(loc, store.default_settings(model_id))
    elif params_key != "*":
        loc = loc[loc.params_key == params_key]
    if slice_ == "true_positive":
        # nullable: NA counts as not predicted
        loc = loc[loc.gt_positive & (loc.predicted == True)]  # noqa: E712
    elif slice_ == "positive":
        loc = loc[loc.gt_positive]
    elif slice_ != "all":
        raise UnknownNameError("slice", slice_, ("true_positive", "positive", "all"))
    if loc.empty:
        raise StoreError(
            f"model {model_id!r} has no {slice_.replace('_', '-')} cases among its scored maps"
            + (f" of {method!r}" if method else "")
            + " (table localization); choose slice=positive or "
            f"slice=all; for more cases, {fill_hint(store, 'localization', model_id)}"
        )
    imgs = store.images(image_ids=loc.image_id.unique(), columns=["sex", "age", "age_bin", "split"])
    return loc.merge(imgs, on="image_id", how="left")


def explainer_table(
    store: Store, model_id: str, *, slice_: str = "true_positive", settings: str = "main"
) -> pd.DataFrame:
    """Thesis Table 1: explainer × finding IoU (mean, sd), PLA and AUC (mean, sd), n (n_auc: cases with an AUC);
    ``settings``: each method's ``main`` setting (its default: occlusion 32/16), or ``all`` (the sweep's too)."""
    if settings not in ("main", "all"):
        raise UnknownNameError("settings", settings, ("main", "all"))
    cases = localization_cases(store, model_id, slice_=slice_, params_key=None if settings == "main" else "*")
    # named per setting, not per row (75 k rows at MIMIC size)
    keys = cases[["method", "params_key"]].drop_duplicates()
    keys["explainer"] = setting_names(keys)
    cases = cases.merge(keys, on=["method", "params_key"], how="left")
    g = cases.groupby(["explainer", "label"])
    return g.agg(
        n=("iou", "size"),
        iou=("iou", "mean"),
        iou_sd=("iou", "std"),
        pla=("pla", "mean"),
        hit=("hit", "mean"),
        auc=("roc_auc", "mean"),
        auc_sd=("roc_auc", "std"),
        n_auc=("roc_auc", "count"),
    ).reset_index()


def explainer_ranking(store: Store, model_id: str, *, metric: str = "iou", slice_: str = "positive",
                      n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Which explainer finds the lesion, per finding: explainers ranked by mean ``metric`` (iou,
    hit = pointing game, roc_auc), each compared with the best on the cases both scored — the
    paired difference best − it with a bootstrap 95 % CI over cases, as Saporta et al. compare
    a method with the human benchmark (no interval from fewer than ``stats.MIN_CI_N`` pairs)."""
    loc = _need(
        store.table("localization", model_id=model_id),
        store,
        "localization metrics",
        "localization",
        model_id,
    )
    tables = {}
    for method in sorted(loc.loc[loc.source == "explainer", "method"].unique()):
        try:
            c = localization_cases(store, model_id, slice_=slice_, method=method)
        except StoreError:
            continue  # no case of this slice among its maps
        tables[setting_names(c[["method", "params_key"]].head(1))[0]] = c.pivot_table(
            index="image_id", columns="label", values=metric, aggfunc="first"
        )
    rows = []
    for label in sorted({lab for t in tables.values() for lab in t.columns}):
        scores = {k: t[label].dropna() for k, t in tables.items() if label in t and t[label].notna().any()}
        ranked = sorted(scores, key=lambda k: (-scores[k].mean(), k))
        for rank, name in enumerate(ranked, 1):
            row = {"label": label, "rank": rank, "explainer": name, "n": len(scores[name]),
                   metric: float(scores[name].mean()), "vs": ranked[0] if rank > 1 else None}
            if rank > 1:
                best, this = scores[ranked[0]].align(scores[name], join="inner")
                if best.empty:  # scored on different cases: nothing to pair
                    row.update(n_paired=0, difference=np.nan, lower=np.nan, upper=np.nan, behind=False)
                    rows.append(row)
                    continue
                ci = stats.bootstrap_table((best - this).to_frame("d"), n_boot=n_boot, seed=seed,
                                          bounds="percentile").iloc[0]
                row.update(n_paired=int(ci["n"]), difference=float(ci["estimate"]), lower=ci["lower"],
                           upper=ci["upper"], behind=bool(ci["lower"] > 0))
            rows.append(row)
    if not rows:
        raise StoreError(_nothing_to_rank(loc, model_id, metric, slice_))
    return pd.DataFrame(
        rows,
        columns=[
            "label",
            "rank",
            "explainer",
            "n",
            metric,
            "vs",
            "n_paired",
            "difference",
            "lower",
            "upper",
            "behind",
        ],
    )


def _nothing_to_rank(loc: pd.DataFrame, model_id: str, metric: str, slice_: str) -> str:
    """Why no explainer could be ranked: no ground-truth region at all, or none in this slice."""
    if not loc["gt_positive"].fillna(False).astype(bool).any():
        return (
            f"model {model_id!r} has maps scored against no ground-truth region: the dataset has no box or "
            "mask for any finding of its scored maps (labels only), and localization needs regions. Use a "
            "dataset with boxes or masks (NIH's BBox_List_2017.csv, CheXlocalize, SIIM, RSNA, VinDr) or give "
            "the folder adapter a boxes CSV (`python -m cxrxai precompute --dataset folder ... --data-option "
            "boxes_csv=FILE`)"
        )
    return (
        f"model {model_id!r} has no {slice_.replace('_', '-')} case with a finite {metric} for any explainer; "
        "try --option slice=positive or another metric"
    )


def occlusion_sweep(
    store: Store, model_id: str, *, slice_: str = "positive", shared: bool = True
) -> pd.DataFrame:
    """Thesis Fig. 3 / Table S4 per patch/stride: grid, s/map, IoU/PLA/AUC with CIs; ``shared``:
    only the (image, finding) pairs every setting has (the demo has 32/16 on 240), so points compare."""
    idx = _need(
        store.map_index(model_id=model_id, method="occlusion"), store, "occlusion maps", "sweep", model_id
    )
    cases = localization_cases(store, model_id, slice_=slice_, method="occlusion", params_key="*")
    if shared:
        common = set.intersection(*(set(zip(g.image_id, g.label)) for _, g in idx.groupby("params_key")))
        idx, cases = (d[[p in common for p in zip(d.image_id, d.label)]] for d in (idx, cases))
    rows = []
    for key, g in idx.groupby("params_key"):
        p = json.loads(key)
        c = cases[cases.params_key == key]
        row = {
            "patch": p["patch"],
            "stride": p["stride"],
            "resolution": f"{g['height'].iloc[0]}x{g['width'].iloc[0]}",
            "maps": len(g),
            "seconds_mean": float(g["seconds"].mean()),
            "cases_scored": len(c),
        }
        for metric in ("iou", "pla", "roc_auc"):
            v = c[metric].to_numpy(float)
            v = v[np.isfinite(v)]
            if len(v) >= stats.MIN_CI_N:
                b = stats.bootstrap_table(pd.DataFrame({metric: v}), n_boot=1000).iloc[0]
                row.update(
                    {metric: float(v.mean()), f"{metric}_lower": b["lower"], f"{metric}_upper": b["upper"]}
                )
            else:
                row.update({metric: float(v.mean()) if len(v) else np.nan})
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["patch", "stride"], ascending=False).reset_index(drop=True)


def localization_summary(store: Store, model_id: str, *, metric: str = "iou", reader: str = "gt",
                         method: str = "gradcam", n_boot: int = 1000) -> pd.DataFrame:
    """Saporta Fig. 2: per finding, mIoU or hit rate with bootstrap 95 % CI over positive cases."""
    cases = localization_cases(store, model_id, reader=reader, slice_="positive", method=method)
    wide = cases.pivot_table(index="image_id", columns="label", values=metric, aggfunc="first")
    return stats.bootstrap_table(wide, n_boot=n_boot).rename(columns={"name": "label"})


def _second_readers(store: Store, model_id: str) -> list[str]:
    loc = store.table("localization", model_id=model_id, source="reader")
    return sorted(loc["method"].unique()) if not loc.empty else []


def human_benchmark(store: Store, model_id: str, *, metric: str = "iou", method: str = "gradcam",
                    benchmark_reader: str | None = None, n_boot: int = 1000) -> pd.DataFrame:
    """Saporta Fig. 2 / Supplementary Tables 4–5: % decrease from a second reader to the method."""
    readers = _second_readers(store, model_id)
    hb = benchmark_reader or (readers[0] if readers else None)
    if hb is None:
        raise StoreError(
            f"model {model_id!r} has no second reader's scores (table localization, source reader); "
            f"{fill_hint(store, 'reader', model_id)}"
        )
    method_cases = localization_cases(store, model_id, slice_="positive", method=method)
    hb_cases = localization_cases(store, model_id, slice_="positive", method=hb, source="reader")
    pred = method_cases.pivot_table(index="image_id", columns="label", values=metric, aggfunc="first")
    bench = hb_cases.pivot_table(index="image_id", columns="label", values=metric, aggfunc="first")
    return stats.percentage_decrease(bench, pred, n_boot=n_boot)


def explanation_auc_by_subgroup(store: Store, model_id: str, *, by: str = "sex", method: str = "occlusion",
                                metric: str = "roc_auc") -> pd.DataFrame:
    """Thesis Fig. 5: explanation AUC (or IoU, hit) of true positives per finding and subgroup; a group
    of the scored cases without a true positive is shown with n = 0 and a note saying why."""
    cases = localization_cases(store, model_id, slice_="true_positive", method=method)
    scored = localization_cases(store, model_id, slice_="all", method=method)
    what = f"model {model_id!r}'s explanation {metric} of {method!r} by subgroup (true positives)"
    return metric_by_subgroup(store, cases, scored, metric, by, what)


def geometry_cases(store: Store, model_id: str, *, method: str = "gradcam", dominant: str = "most_points"
                   ) -> pd.DataFrame:
    """Each scored positive case (reference reader) with its lesion's geometric features."""
    geo = _need(
        store.table("geometry", reader="gt", dominant=dominant), store, "geometric features", "geometry"
    )
    cases = localization_cases(store, model_id, slice_="positive", method=method)
    return cases.merge(geo[["image_id", "label", "instances", "size", "elongation", "irrectangularity"]],
                       on=["image_id", "label"])


def geometry_regressions(store: Store, model_id: str, *, method: str = "gradcam", normalize: str = "minmax",
                         dominant: str = "most_points", benchmark_reader: str | None = None) -> pd.DataFrame:
    """Saporta Table 1: IoU and hit ~ each geometric feature (pooled findings, positive slice),
    Bonferroni k = 4; with a second reader also the (benchmark − method) differences."""
    feats = ["instances", "size", "elongation", "irrectangularity"]
    df = geometry_cases(store, model_id, method=method, dominant=dominant)
    outcomes = ["iou", "hit"]
    readers = _second_readers(store, model_id)
    hb = benchmark_reader or (readers[0] if readers else None)
    if hb is not None:
        loc = store.table("localization", model_id=model_id, source="reader", method=hb)
        bench = loc[["image_id", "label", "iou", "hit"]].rename(columns={"iou": "hb_iou", "hit": "hb_hit"})
        df = df.merge(bench, on=["image_id", "label"], how="left")
        df["iou_diff"], df["hit_diff"] = df.hb_iou - df.iou, df.hb_hit - df.hit
        outcomes += ["iou_diff", "hit_diff"]
    return pd.concat(
        [stats.feature_regressions(df, y, feats, normalize=normalize) for y in outcomes], ignore_index=True
    )


def confidence_regressions(store: Store, model_id: str, *, method: str = "gradcam", metric: str = "iou_gated"
                           ) -> pd.DataFrame:
    """Saporta Table 2: IoU (full dataset, probability-gated by default) ~ model probability,
    per finding and pooled, with Spearman ρ and Fisher-z CI."""
    cases = localization_cases(store, model_id, slice_="all", method=method)
    return stats.confidence_regressions(cases, metric)


def trust_table(
    store: Store, model_id: str, *, data_range: float = 1.0, alpha: float = 0.005
) -> pd.DataFrame:
    """Arun et al. Table 2: PASS/FAIL for utility (AUPRC vs average mask), randomization,
    repeatability and reproducibility, with the means and p-values behind each verdict."""
    t = _need(store.table("trust", model_id=model_id), store, "trust scores", "trust", model_id)
    t = t[t.data_range == data_range]
    thresholds = t[t.kind == "threshold"].set_index("method")["ssim"]
    last = t[t.kind == "randomization"].step_index.max()
    rand = t[(t.kind == "randomization") & (t.step_index == last)]
    rows = [pd.DataFrame({"method": rand.method, "criterion": "randomization", "value": rand.ssim,
                          "baseline": rand.method.map(thresholds)})]
    for kind in ("repeatability", "reproducibility"):
        k = t[t.kind == kind]
        rows.append(pd.DataFrame({"method": k.method, "criterion": kind, "value": k.ssim, "baseline": 0.5}))
    loc = store.table("localization", model_id=model_id, reader="gt")
    if not loc.empty:
        # one setting per method
        expl = main_rows(loc[loc.source == "explainer"], store.default_settings(model_id))
        loc = loc[loc.gt_positive]
        avg = loc[(loc.source == "baseline") & (loc.method == "average_mask")].set_index(
            ["image_id", "label"]
        )["pr_auc"]
        for method in rand.method.unique():
            m = expl[expl.gt_positive & (expl.method == method)].set_index(["image_id", "label"])["pr_auc"]
            both = pd.concat({"v": m, "b": avg}, axis=1).dropna()
            rows.append(
                pd.DataFrame({"method": method, "criterion": "utility", "value": both.v, "baseline": both.b})
            )
    return trust.pass_fail(pd.concat(rows, ignore_index=True), alpha=alpha)


def randomization_curves(store: Store, model_id: str, *, data_range: float = 1.0) -> pd.DataFrame:
    """Mean SSIM to the original map per method and randomization step (Arun Fig. 3)."""
    t = _need(store.table("trust", model_id=model_id), store, "trust scores", "trust", model_id)
    t = t[(t.kind == "randomization") & (t.data_range == data_range)]
    return (t.groupby(["method", "step_index", "step"]).ssim.agg(["mean", "std", "count"]).reset_index()
            .sort_values(["method", "step_index"]))


def degradation_thresholds(store: Store, model_id: str, *, data_range: float = 1.0) -> pd.DataFrame:
    """Arun et al.'s degradation threshold (SSIM between maps of random image pairs) per method."""
    t = store.table("trust", model_id=model_id, kind="threshold")
    return t[t.data_range == data_range][["method", "ssim"]].reset_index(drop=True) if not t.empty else t


def similarity_scores(store: Store, model_id: str, *, data_range: float = 1.0) -> pd.DataFrame:
    """Repeatability (a second training seed) and reproducibility (another architecture): SSIM of
    the two models' maps per case and method (Arun et al. Fig. 4)."""
    t = _need(store.table("trust", model_id=model_id), store, "trust scores", "trust", model_id)
    t = t[t.kind.isin(["repeatability", "reproducibility"]) & (t.data_range == data_range)]
    if t.empty:
        raise StoreError(
            f"model {model_id!r} has no repeatability/reproducibility scores (table trust): they need a "
            "second DenseNet-121 and a second architecture — `python -m cxrxai train --seed 1 --name "
            "demo-densenet121-seed1 && python -m cxrxai demo`"
        )
    return t.reset_index(drop=True)


def fidelity_summary(store: Store, model_id: str, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Thesis §2.4 per measure (faithfulness, AUDC/AUIC, AUDCdiff by fill) and setting: n, mean, 95 % CI."""
    f = _need(store.table("fidelity", model_id=model_id), store, "fidelity curves", "fidelity", model_id)
    cols = [
        "faithfulness",
        "audc_black",
        "auic_black",
        "audc_diff_black",
        "audc_mean",
        "auic_mean",
        "audc_diff_mean",
        "audc_diff_mean_normalized",
    ]
    keys = f[["method", "params_key"]].drop_duplicates()
    names = dict(zip(keys.itertuples(index=False, name=None), setting_names(keys)))
    boot = {"n_boot": n_boot, "seed": seed, "bounds": "percentile"}
    out = pd.concat([stats.bootstrap_table(g[cols].reset_index(drop=True), **boot).assign(method=names[key])
                     for key, g in f.groupby(["method", "params_key"], sort=True)]).drop(columns="mean")
    out = out.rename(columns={"name": "measure", "estimate": "mean"}).sort_values(
        ["measure", "method"], key=lambda c: c.map(cols.index) if c.name == "measure" else c
    )[["measure", "method", "n", "mean", "lower", "upper"]]
    return out.reset_index(drop=True)  # n: cases with a value; bootstrap over cases, no interval from < 5


def shortcut_explainers(store: Store, model_id: str, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Model or method? Per explainer, marker share under the shortcut model vs its control on the same
    marked cases (:mod:`cxrxai.metrics.shortcut`; the store's shortcut pair, whatever ``model_id``)."""
    rows = _need(store.table("shortcut"), store, "planted-shortcut scores", "shortcut")
    return shortcut.shortcut_summary(rows, n_boot=n_boot, seed=seed)


def shortcut_reliance(store: Store, model_id: str) -> pd.DataFrame:
    """How much each model of the shortcut pair uses the marker: probability with − without it."""
    return shortcut.reliance(_need(store.table("shortcut"), store, "planted-shortcut scores", "shortcut"))


def performance(store: Store, model_id: str, *, split: str | None = None) -> pd.DataFrame:
    """AUROC per label with bootstrap CI, TPR/FPR at the stored thresholds (``split``: :func:`subgroup_tpr`)."""
    prediction_table(store, model_id, split=split)  # a clear error when there is nothing to evaluate
    return model_performance(store, model_id, split=split)


REPORTS: dict[str, Report] = {
    r.name: r
    for r in [
        Report("performance", "AUROC per label with 95% CI (model card)", performance),
        Report("explainers", "thesis Table 1: explainer × finding IoU / PLA / AUC", explainer_table),
        Report(
            "explainer-ranking",
            "which explainer finds the lesion: ranks with paired bootstrap CIs (Saporta-style)",
            explainer_ranking,
        ),
        Report(
            "occlusion-sweep",
            "thesis Fig. 3 and Table S4: occlusion patch/stride sweep with timings",
            occlusion_sweep,
        ),
        Report(
            "localization",
            "Saporta Fig. 2: mIoU / hit rate per finding with bootstrap CI",
            localization_summary,
        ),
        Report(
            "human-benchmark",
            "Saporta Fig. 2, Suppl. Tables 4-5: % decrease vs a second reader",
            human_benchmark,
        ),
        Report("subgroup-tpr", "thesis Fig. 2: TPR per finding by sex / age bin", subgroup_tpr),
        Report("underdiagnosis", "Seyyed-Kalantari et al.: No Finding FPR / FNR by group", underdiagnosis),
        Report(
            "explanation-auc-subgroups",
            "thesis Fig. 5: explanation AUC by subgroup",
            explanation_auc_by_subgroup,
        ),
        Report(
            "geometry",
            "Saporta Table 1: localization ~ lesion geometry (OLS, Bonferroni)",
            geometry_regressions,
        ),
        Report(
            "confidence",
            "Saporta Table 2: localization ~ model confidence (OLS + Spearman)",
            confidence_regressions,
        ),
        Report("trust", "Arun et al. Table 2: PASS/FAIL", trust_table),
        Report(
            "randomization", "Arun et al. Fig. 3: SSIM along cascading randomization", randomization_curves
        ),
        Report("similarity", "Arun et al. Fig. 4: repeatability / reproducibility SSIM", similarity_scores),
        Report("fidelity", "thesis §2.4: faithfulness, deletion / insertion, AUDCdiff", fidelity_summary),
        Report(
            "shortcut",
            "model or method: explainers' mass on a planted marker a model learned",
            shortcut_explainers,
            False,
        ),
        Report(
            "shortcut-reliance",
            "planted shortcut: probability with and without the marker",
            shortcut_reliance,
            False,
        ),
    ]
}


def report_options(name: str) -> dict[str, object]:
    """The options of report ``name`` with their defaults (``slice_`` is spelled ``slice``)."""
    if name not in REPORTS:
        raise UnknownNameError("report", name, REPORTS)
    params = list(inspect.signature(REPORTS[name].fn).parameters.values())[2:]
    return {p.name.rstrip("_"): p.default for p in params}


def run_report(store: Store, name: str, model_id: str, **options) -> pd.DataFrame:
    """Run report ``name``; options as typed on a command line too (``slice``, ``by="sex,age_bin"``).

    >>> run_report(None, "subgroup-tpr", "m", colour="red")
    Traceback (most recent call last):
    ...
    cxrxai.errors.UnknownNameError: unknown option of report 'subgroup-tpr' 'colour'; allowed: 'by', 'ci', 'split'
    """
    allowed = report_options(name)
    kwargs = {}
    for key, value in options.items():
        key = key.rstrip("_")
        if key not in allowed:
            raise UnknownNameError(f"option of report {name!r}", key, allowed)
        if key == "by" and isinstance(value, str) and "," in value:
            value = [v.strip() for v in value.split(",") if v.strip()]
        kwargs[key + "_" if key == "slice" else key] = value
    return REPORTS[name].fn(store, model_id, **kwargs)
