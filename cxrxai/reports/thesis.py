"""The thesis's tables (Bel Bordes, explainability of chest X-ray classifiers): Table 1 (explainer ×
finding, every metric of the ``table1`` view), which explainer finds the lesion (ranked, paired
bootstrap CIs as Saporta et al. compare a method with the human benchmark), the occlusion
patch/stride sweep (Fig. 3, Table S4) and fidelity (§2.4)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from .. import stats
from ..errors import StoreError, UnknownNameError
from ..explain import setting_names
from ..metrics import registry as metric_registry
from ..store import SWEEP_PLAN_META, Store
from ._cases import localization_cases, need, no_region, require_metrics, with_metrics
from ._registry import report

__all__ = ["CLOCKS", "explainer_ranking", "explainer_table", "fidelity_summary", "map_timing",
           "occlusion_sweep", "sweep_plan"]

#: The explainer ranking's columns; the metric's own comes after ``n``.
RANKING_COLUMNS = ["label", "rank", "explainer", "n", "vs", "n_paired", "difference", "lower", "upper",
                   "behind"]


@report("explainers", "thesis Table 1: explainer × finding, each Table 1 metric's mean, sd and n")
def explainer_table(
    store: Store, model_id: str, *, slice_: str = "true_positive", settings: str = "main"
) -> pd.DataFrame:
    """Thesis Table 1: per explainer × finding, n cases and, for every metric of the ``table1`` view
    (:func:`~cxrxai.metrics.registry.metric_names`), its mean, sd (``<metric>_sd``) and the cases
    with a value (``n_<metric>``: an AUC can be undefined); ``settings``: each method's ``main``
    setting (its default: occlusion 32/16), or ``all`` (the sweep's too)."""
    if settings not in ("main", "all"):
        raise UnknownNameError("settings", settings, ("main", "all"))
    cases = localization_cases(store, model_id, slice_=slice_, params_key=None if settings == "main" else "*")
    # named per setting, not per row (75 k rows at MIMIC size)
    keys = cases[["method", "params_key"]].drop_duplicates()
    keys["explainer"] = setting_names(keys)
    names = metric_registry.metric_names(view="table1")
    cases = with_metrics(cases.merge(keys, on=["method", "params_key"], how="left"), names)
    columns = {"n": ("label", "size")}
    for name in names:
        columns.update({name: (name, "mean"), f"{name}_sd": (name, "std"), f"n_{name}": (name, "count")})
    return cases.groupby(["explainer", "label"]).agg(**columns).reset_index()


def _versus_best(best: pd.Series, this: pd.Series, n_boot: int, seed: int) -> dict:
    """The paired difference best − this over the cases both scored, with its bootstrap CI."""
    best, this = best.align(this, join="inner")
    if best.empty:  # scored on different cases: nothing to pair
        return {"n_paired": 0, "difference": np.nan, "lower": np.nan, "upper": np.nan, "behind": False}
    ci = stats.bootstrap_table((best - this).to_frame("d"), n_boot=n_boot, seed=seed,
                               bounds="percentile").iloc[0]
    return {"n_paired": int(ci["n"]), "difference": float(ci["estimate"]), "lower": ci["lower"],
            "upper": ci["upper"], "behind": bool(ci["lower"] > 0)}


def _ranked(label: str, scores: dict[str, pd.Series], metric: str, n_boot: int, seed: int) -> list[dict]:
    """The rows of one finding: explainers by mean ``metric``, each after the first against it."""
    ranked = sorted(scores, key=lambda k: (-scores[k].mean(), k))
    rows = []
    for rank, name in enumerate(ranked, 1):
        row = {"label": label, "rank": rank, "explainer": name, "n": len(scores[name]),
               metric: float(scores[name].mean()), "vs": ranked[0] if rank > 1 else None}
        if rank > 1:
            row.update(_versus_best(scores[ranked[0]], scores[name], n_boot, seed))
        rows.append(row)
    return rows


@report("explainer-ranking", "which explainer finds the lesion: ranks with paired bootstrap CIs "
        "(Saporta-style)", view="ranking")
def explainer_ranking(store: Store, model_id: str, *, metric: str = "iou", slice_: str = "positive",
                      n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Which explainer finds the lesion, per finding: explainers ranked by mean ``metric`` (a metric
    of the ``ranking`` view), each compared with the best on the cases both scored — the paired
    difference best − it with a bootstrap 95 % CI over cases, as Saporta et al. compare a method
    with the human benchmark (no interval from fewer than ``stats.MIN_CI_N`` pairs)."""
    loc = need(store.table("localization", model_id=model_id), store, "localization metrics", "localization",
               model_id)
    require_metrics(loc, store, model_id, metric)
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
        rows += _ranked(label, scores, metric, n_boot, seed)
    if not rows:
        raise StoreError(_nothing_to_rank(store, loc, model_id, metric, slice_))
    columns = RANKING_COLUMNS[:4] + [metric] + RANKING_COLUMNS[4:]
    return pd.DataFrame(rows, columns=columns)


def _nothing_to_rank(store: Store, loc: pd.DataFrame, model_id: str, metric: str, slice_: str) -> str:
    """Why no explainer could be ranked: no ground-truth region on the scored maps, or none in this slice."""
    why = no_region(store, model_id, loc)
    if why:
        return why
    return (
        f"model {model_id!r} has no {slice_.replace('_', '-')} case with a finite {metric} for any "
        "explainer; try --option slice=positive or another metric"
    )


def _with_ci(values: pd.Series, metric: str) -> dict:
    """``metric``'s mean over the finite ``values``, with a bootstrap CI from ``MIN_CI_N`` on."""
    v = values.to_numpy(float)
    v = v[np.isfinite(v)]
    if len(v) < stats.MIN_CI_N:
        return {metric: float(v.mean()) if len(v) else np.nan}
    b = stats.bootstrap_table(pd.DataFrame({metric: v}), n_boot=1000).iloc[0]
    return {metric: float(v.mean()), f"{metric}_lower": b["lower"], f"{metric}_upper": b["upper"]}


def sweep_plan(store: Store, model_id: str) -> tuple[int | None, list[tuple[int, int]]]:
    """The cases and (patch, stride) settings the sweep of ``model_id`` planned; ``(None, [])`` for a
    store built before the stage recorded its plan."""
    plan = json.loads(store.meta(SWEEP_PLAN_META.format(model_id=model_id)) or "{}")
    return plan.get("cases"), [tuple(s) for s in plan.get("settings", [])]


#: The clocks a map's ``seconds`` may be read from, the one a sweep's time is summarized on first.
CLOCKS = ("cpu", "wall")


def map_timing(maps: pd.DataFrame) -> dict:
    """Seconds per map of ``maps`` (rows of the store's map index): the median and quartiles over
    the maps of one clock (``timing``: ``cpu`` where any map has it, else ``wall``; a store from
    before the clock was recorded is wall-clock throughout) and how many maps that is
    (``timed_maps``). The median, not the mean: one map that waited on a busy machine moves a mean
    of 20 by minutes.

    >>> map_timing(pd.DataFrame({"seconds": [1.0, 2.0, 3.0, 4.0, 2599.2], "timing": "wall"}))
    {'timing': 'wall', 'timed_maps': 5, 'seconds_median': 3.0, 'seconds_q1': 2.0, 'seconds_q3': 4.0}
    """
    timing = maps["timing"] if "timing" in maps else pd.Series("wall", index=maps.index)
    timed = maps["seconds"].notna()
    clock = next((c for c in CLOCKS if (timed & (timing == c)).any()), None)
    s = maps.loc[timed & (timing == clock), "seconds"].astype(float)
    q1, median, q3 = s.quantile([0.25, 0.5, 0.75]).tolist() if len(s) else [np.nan] * 3
    return {"timing": clock, "timed_maps": len(s), "seconds_median": median,
            "seconds_q1": q1, "seconds_q3": q3}


def _sweep_row(key: str, g: pd.DataFrame, c: pd.DataFrame, names: list[str]) -> dict:
    """One setting's row: its grid, the maps stored (``g``), their time, the shared cases scored."""
    p = json.loads(key)
    row = {"patch": p["patch"], "stride": p["stride"],
           "resolution": f"{g['height'].iloc[0]}x{g['width'].iloc[0]}", "maps": len(g), **map_timing(g),
           "timed_on": ", ".join(sorted(set(g["device"].dropna()))), "cases_scored": len(c)}
    for name in names:
        row.update(_with_ci(c[name], name))
    return row


@report("occlusion-sweep", "thesis Fig. 3 and Table S4: occlusion patch/stride sweep with timings")
def occlusion_sweep(
    store: Store, model_id: str, *, slice_: str = "positive", shared: bool = True
) -> pd.DataFrame:
    """Thesis Fig. 3 / Table S4 per patch/stride: grid, the maps stored of those planned
    (``maps``, ``maps_planned``: an interrupted sweep has fewer; a planned setting with none has
    a row), seconds per map (:func:`map_timing`: median and quartiles, their clock and n;
    ``timed_on``: the devices the maps were computed on) and every metric of the
    ``sweep`` view with CIs; ``shared``: metrics only on the (image, finding) pairs every stored
    setting has (the demo has 32/16 on 240), so points compare (``cases_scored``)."""
    idx = need(
        store.map_index(model_id=model_id, method="occlusion"), store, "occlusion maps", "sweep", model_id
    )
    names = metric_registry.metric_names(view="sweep")
    cases = localization_cases(store, model_id, slice_=slice_, method="occlusion", params_key="*")
    # one fixed order of cases, whatever order the store returns them in: the bootstrap resamples rows
    cases = with_metrics(cases, names).sort_values(["image_id", "label", "params_key"], ignore_index=True)
    if shared:
        common = set.intersection(*(set(zip(g.image_id, g.label)) for _, g in idx.groupby("params_key")))
        cases = cases[[p in common for p in zip(cases.image_id, cases.label)]]
    rows = [_sweep_row(key, g, cases[cases.params_key == key], names) for key, g in idx.groupby("params_key")]
    planned, settings = sweep_plan(store, model_id)
    stored = {(r["patch"], r["stride"]) for r in rows}
    rows += [{"patch": p, "stride": s, "maps": 0, "timed_maps": 0, "cases_scored": 0}
             for p, s in settings if (p, s) not in stored]  # planned, none stored yet
    out = pd.DataFrame(rows).sort_values(["patch", "stride"], ascending=False).reset_index(drop=True)
    out.insert(out.columns.get_loc("maps") + 1, "maps_planned",
               [planned if (p, s) in settings else None for p, s in zip(out.patch, out.stride)])
    return out


FIDELITY_MEASURES = ["faithfulness", "audc_black", "auic_black", "audc_diff_black", "audc_mean", "auic_mean",
                     "audc_diff_mean", "audc_diff_mean_normalized"]


@report("fidelity", "thesis §2.4: faithfulness, deletion / insertion, AUDCdiff")
def fidelity_summary(store: Store, model_id: str, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Thesis §2.4 per measure (faithfulness, AUDC/AUIC, AUDCdiff by fill) and setting: n, mean, 95 % CI."""
    f = need(store.table("fidelity", model_id=model_id), store, "fidelity curves", "fidelity", model_id)
    cols = FIDELITY_MEASURES
    keys = f[["method", "params_key"]].drop_duplicates()
    names = dict(zip(keys.itertuples(index=False, name=None), setting_names(keys)))
    boot = {"n_boot": n_boot, "seed": seed, "bounds": "percentile"}
    out = pd.concat([stats.bootstrap_table(g[cols].reset_index(drop=True), **boot).assign(method=names[key])
                     for key, g in f.groupby(["method", "params_key"], sort=True)]).drop(columns="mean")
    out = out.rename(columns={"name": "measure", "estimate": "mean"}).sort_values(
        ["measure", "method"], key=lambda c: c.map(cols.index) if c.name == "measure" else c
    )[["measure", "method", "n", "mean", "lower", "upper"]]
    return out.reset_index(drop=True)  # n: cases with a value; bootstrap over cases, no interval from < 5
