"""What an exported table was computed from: model, thresholds, explainer parameters, seed and
interval method, written as ``# key: value`` lines above the CSV (``read_export`` reads both back).

A table that leaves the app without these cannot be compared with anything: the same report on
another model, threshold rule or occlusion setting gives other numbers with the same columns.
"""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pandas as pd

from ..errors import DataError
from ..explain import method_names
from ..store import main_settings

__all__ = ["INTERVALS", "read_export", "report_provenance", "store_provenance", "table_provenance",
           "with_header"]

_BOOT = "percentile bootstrap over cases, {n_boot} resamples, seed {seed}, 95 %"
_CHEXLOCALIZE = ("case bootstrap as CheXlocalize's eval.py (legacy NumPy RandomState, seed {seed}, {n_boot} "
                 "resamples jointly over labels, sorted replicates 24 and 974), 95 %")
#: How each report's intervals are made; ``{option}`` is filled from the report's options.
INTERVALS: dict[str, str] = {
    "performance": "AUROC: " + _BOOT,
    "explainers": "none (mean and sd per explainer × finding)",
    "explainer-ranking": "paired "
    + _BOOT
    + " of the difference to the best explainer; none from fewer than 5 pairs",
    "occlusion-sweep": _CHEXLOCALIZE,
    "localization": _CHEXLOCALIZE,
    "human-benchmark": "paired " + _CHEXLOCALIZE + " of the % decrease",
    "subgroup-tpr": "rates: {ci} 95 % interval per group; AUROC: Hanley–McNeil 95 %",
    "underdiagnosis": "rates: Wilson 95 % interval per group",
    "explanation-auc-subgroups": _BOOT,
    "geometry": "OLS 95 % CI (unadjusted); p Bonferroni-adjusted over the regressions",
    "confidence": "OLS 95 % CI; Spearman ρ with a Fisher-z 95 % CI",
    "trust": "one-sample t-tests at alpha {alpha} (Arun et al.'s PASS/FAIL)",
    "randomization": "none (mean SSIM per randomized layer)",
    "similarity": "none (mean SSIM per pair of models)",
    "fidelity": _BOOT + " per measure and setting; none from fewer than 5 cases",
    "shortcut": "paired "
    + _BOOT
    + " of the marker-share difference (shortcut − control); none from fewer than 5 pairs",
    "shortcut-reliance": "percentile bootstrap over cases, 1000 resamples, seed 0, 95 %",
}
#: Seeds of reports that resample without exposing a ``seed`` option.
_FIXED_SEED = {
    "shortcut-reliance": 0,
    "occlusion-sweep": 0,
    "localization": 0,
    "human-benchmark": 0,
    "performance": 0,
    "explanation-auc-subgroups": 0,
}


#: Reports over every stored setting of one explainer (the sweep compares them).
_EVERY_SETTING = {"occlusion-sweep": "occlusion"}
#: Reports whose settings are those of the stored rows they summarise (that table's name).
_SCORED_ROWS = {"fidelity": "fidelity"}


def _explainer_params(store, model_id: str, name: str, table: pd.DataFrame, options: dict) -> str:
    """The explainer settings behind the table: its own (method, params_key) pairs; every setting
    of a sweep; the settings of the rows a summary rests on; the setting the reports score of the
    ``method`` option (its default, else its most stored); else that of each stored method (of a
    table of explainers, each with a row in it: :func:`_no_rows` says why another has none)."""
    if name in _SCORED_ROWS:
        scored = store.scored_settings(_SCORED_ROWS[name], model_id)
        if scored.empty:
            return f"none scored (table {_SCORED_ROWS[name]} has no rows for {model_id})"
        return "; ".join(f"{r.method} {r.params_key} ({r.n:,} rows)" for r in scored.itertuples())
    if {"method", "params_key"} <= set(table.columns):
        pairs = table[["method", "params_key"]].drop_duplicates().itertuples(index=False)
        return "; ".join(f"{m} {k}" for m, k in pairs)
    counts, method = _stored_settings(store, model_id, name, options)
    if counts.empty:
        return f"{method}: no stored maps" if method else "no stored maps"
    gone = _without_rows(counts, table)
    listed = "; ".join(f"{r.method} {r.params_key} ({r.n:,} {r.unit})" for r in counts.itertuples()
                       if r.method not in gone)
    return listed or "none with a row in this table (see: explainers without rows)"


def _stored_settings(store, model_id: str, name: str, options: dict) -> tuple[pd.DataFrame, str | None]:
    """(method, params_key, n maps) of the settings a report scores, and its ``method`` option."""
    method = _EVERY_SETTING.get(name, options.get("method"))
    counts = _with_scored(store, model_id, store.map_settings(model_id, method=method), method)
    if not (name in _EVERY_SETTING or options.get("settings") == "all"):
        counts = main_settings(counts, store.default_settings(model_id))
    return counts, method


def _with_scored(store, model_id: str, maps: pd.DataFrame, method: str | None) -> pd.DataFrame:
    """``maps`` (method, params_key, n maps) with a ``unit``, and the explainer settings scored in
    ``localization`` that have no stored map (a build may score a map and not keep it: IG and
    GradientSHAP at full resolution), counted in scored rows."""
    scored = store.scored_settings("localization", model_id)
    have = set(zip(maps["method"], maps["params_key"]))
    keep = [m in method_names() and (m, k) not in have and method in (None, m)  # not a baseline or reader
            for m, k in zip(scored["method"], scored["params_key"])]
    return pd.concat([maps.assign(unit="maps"), scored[keep].assign(unit="scored rows; maps not stored")],
                     ignore_index=True)


def _without_rows(counts: pd.DataFrame, table: pd.DataFrame) -> list[str]:
    """The methods with stored maps (``counts``) of which a table with an ``explainer`` column (the
    :func:`~cxrxai.explain.setting_names` of its rows: "ig", "occlusion 32/16") has no row."""
    if "explainer" not in table.columns or counts.empty:
        return []
    names = {str(e) for e in table["explainer"].dropna().unique()}
    return [m for m in dict.fromkeys(counts["method"])
            if not any(e == m or e.startswith(f"{m} ") for e in names)]


def _no_rows(store, model_id: str, name: str, table: pd.DataFrame, options: dict) -> dict[str, str]:
    """Why an explainer with stored maps has no row in a table of explainers (none of its maps was
    scored on a case the report counts: another slice, another split...); nothing when every one has."""
    if name in _SCORED_ROWS or {"method", "params_key"} <= set(table.columns):
        return {}
    counts, _ = _stored_settings(store, model_id, name, options)
    gone = _without_rows(counts, table)
    if not gone:
        return {}
    cases = (f"a {str(options['slice']).replace('_', '-')} case" if options.get("slice")
             else "a case this report counts")
    maps = counts[counts.method.isin(gone)].groupby("method", sort=False).agg(n=("n", "sum"),
                                                                               unit=("unit", "first"))
    return {"explainers without rows": "; ".join(f"{m} ({r.n:,} {r.unit}): no row, none of its maps was "
                                                 f"scored on {cases}" for m, r in maps.iterrows())}


def _thresholds(store, model_id: str, spec: dict) -> str:
    t = store.thresholds(model_id)
    rule = spec.get("card", {}).get("threshold_method", "stored thresholds")
    if t.empty:
        return f"none stored ({rule})"
    return f"{rule}: " + ", ".join(f"{r.label}={r.threshold:.4g}" for r in t.itertuples())


def report_provenance(
    store, name: str, model_id: str, table: pd.DataFrame | None = None, **options
) -> dict[str, str]:
    """The header of report ``name``'s export: report, store, model, thresholds, explainer
    parameters, options (defaults filled in), seed and interval method."""
    from ..reports import REPORTS, report_options, split_used

    opts = {**report_options(name), **{k.rstrip("_"): v for k, v in options.items()}}
    if "split" in opts:  # the split evaluated, by name, not the default's None
        opts["split"] = split_used(store, model_id, opts["split"])
    models = store.models()
    row = models[models.model_id == model_id]
    spec = json.loads(row.spec.iloc[0]) if len(row) and isinstance(row.spec.iloc[0], str) else {}
    model = (
        (
            f"{model_id} ({row.arch.iloc[0]}, explains the {row.explained_output.iloc[0]}, weights sha256 "
            f"{store.model_identity(model_id).short})"
        )
        if len(row)
        else f"{model_id} (not registered in the store)"
    )
    seed = opts.get("seed", _FIXED_SEED.get(name))
    fill = {"n_boot": 1000, **opts, "seed": seed}  # reports without the option resample 1000 times
    table = table if table is not None else pd.DataFrame()
    return {
        "report": f"{name} — {REPORTS[name].reproduces}",
        **store_provenance(store),
        "model": model,
        "thresholds": _thresholds(store, model_id, spec),
        "explainer parameters": _explainer_params(store, model_id, name, table, opts),
        **_no_rows(store, model_id, name, table, opts),
        "options": json.dumps({k: v for k, v in opts.items()}, default=str),
        "seed": "none (no resampling)" if seed is None else str(seed),
        "interval": INTERVALS.get(name, "none").format(**fill),
        "computed": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def store_provenance(store) -> dict[str, str]:
    """Which store a table was read from and which published version of it (a store is rebuilt and
    republished in place: the same name can hold other numbers tomorrow)."""
    built = store.meta("built_at")
    return {"store": Path(str(store.path)).name,
            "store version": f"published {built} (schema v{store.schema_version()})" if built
            else f"never published (schema v{store.schema_version()})"}


def table_provenance(store, table: str, **context) -> dict[str, str]:
    """The header of an exported table that is not a report (the Overview's cohort, labels,
    problems): what it is, the store and its version, its models (each with its weights' sha256),
    what it was cut to (``dataset=...``), when."""
    ids = store.models().get("model_id", [])
    models = "; ".join(f"{m} (weights sha256 {store.model_identity(m).short})" for m in ids) or "none"
    return {"table": table, **store_provenance(store), "models": models,
            **{k: str(v) for k, v in context.items()},
            "exported": time.strftime("%Y-%m-%dT%H:%M:%S%z")}  # stamped as the page draws its button


def with_header(table: pd.DataFrame, provenance: dict[str, str] | None) -> str:
    """``table`` as CSV under ``# key: value`` lines (none without ``provenance``)."""
    head = "".join(f"# {k}: {' '.join(str(v).splitlines())}\n" for k, v in (provenance or {}).items())
    return head + table.to_csv(index=False)


def read_export(path_or_text: str | Path) -> tuple[dict[str, str], pd.DataFrame]:
    """The header and the table of a CSV written by :func:`with_header`."""
    text = Path(path_or_text).read_text() if isinstance(path_or_text, Path) else str(path_or_text)
    lines = text.splitlines(keepends=True)
    head: dict[str, str] = {}
    k = 0
    while k < len(lines) and lines[k].startswith("# "):
        key, sep, value = lines[k][2:].rstrip("\n").partition(": ")
        if not sep:
            raise DataError(f"export header line {k + 1} is not '# key: value': {lines[k]!r}")
        head[key] = value
        k += 1
    return head, pd.read_csv(io.StringIO("".join(lines[k:])))
