"""Recompute a seeded random sample of a snapshot's rows from scratch, so that a change that alters
any shipped number is caught until the snapshot is rebuilt (``make demo-evidence``).

Each checked table names the build stages that compute its rows (:data:`CHECKS`); the sample's rows
are recomputed in a new store from the phantoms and the weights, with the same stages, over the
sampled cases only. What a row rests on that another check covers is taken from the snapshot (the
thresholds from the shipped predictions, the scores from the shipped predictions and thresholds).
A table with rows but no check (:func:`unchecked`) is itself a failure: a snapshot ships only
numbers a test recomputes.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ...data.phantom import PhantomConfig
from ...explain import method_names
from ...store import LOCALIZATION_KEY, export_table, import_table, open_store
from ..maps import MapPlan, cam_stage
from ..predict import predictions_stage, thresholds_stage
from ..runner import Stage
from ..scoring import localization_stage
from . import provenance

__all__ = ["CHECKS", "Check", "differences", "recompute", "sample", "unchecked"]


@dataclass(frozen=True)
class Check:
    """How rows of one table are recomputed: their key columns, which of them can be (``rows`` picks
    them), and the stages over the sampled images (``shipped``: tables taken from the snapshot first)."""

    key: tuple[str, ...]
    stages: tuple[Stage, ...]
    shipped: tuple[str, ...] = ()
    rows: str | None = None  # a pandas query of the rows this check recomputes (None: all)


_CHEAP = tuple(method_names(cost="cheap"))
_SCORED = (Stage("cams", lambda ctx: cam_stage(ctx, MapPlan(split=None))),
           Stage("localization", localization_stage))
CHECKS = {
    "predictions": Check(("model_id", "image_id", "label"), (Stage("predictions", predictions_stage),)),
    "thresholds": Check(("model_id", "label"), (Stage("thresholds", thresholds_stage),), ("predictions",)),
    # per map: probability and decision; per (map, metric): the score (schema v6, stored long)
    "localization": Check(LOCALIZATION_KEY, _SCORED, ("predictions", "thresholds"),
                          rows=f"source == 'explainer' and method in {list(_CHEAP)}"),
    "localization_scores": Check((*LOCALIZATION_KEY, "metric"), _SCORED, ("predictions", "thresholds"),
                                 rows=f"source == 'explainer' and method in {list(_CHEAP)}"),
}
#: Tables that are the snapshot's own record, checked otherwise (the weights by sha256).
_RECORDS = ("meta", "models")


def _rows(folder: Path, table: str) -> pd.DataFrame:
    return pd.read_parquet(folder / f"{table}.parquet")


def unchecked(folder: str | Path) -> dict[str, int]:
    """Rows of the snapshot in ``folder`` that no check recomputes, per table (empty: every row is)."""
    folder = Path(folder)
    out = {}
    for table, n in provenance.read(folder)["tables"].items():
        if not n or table in _RECORDS:
            continue
        check = CHECKS.get(table)
        rows = _rows(folder, table)
        left = len(rows) if check is None else len(rows) - len(rows.query(check.rows) if check.rows else rows)
        if left:
            out[table] = left
    return out


def sample(folder: str | Path, table: str, n: int, seed: int) -> pd.DataFrame:
    """A seeded random sample of ``n`` checkable rows of ``table`` (fewer when it has fewer)."""
    check, rows = CHECKS[table], _rows(Path(folder), table)
    rows = rows.query(check.rows) if check.rows else rows
    return rows.sample(n=min(n, len(rows)), random_state=seed).reset_index(drop=True)


def _over(stage: Stage, image_ids: list[str]) -> Stage:
    """``stage`` run over ``image_ids`` only (the stages' ``image_ids`` option)."""
    def run(ctx) -> dict:
        return stage.run(replace(ctx, options={**ctx.options, "image_ids": image_ids}))

    return Stage(stage.name, run)


def _taken(folder: Path, tables: tuple[str, ...], model_id: str) -> Stage:
    def run(ctx) -> dict:
        return {t: import_table(ctx.writer, t, folder / f"{t}.parquet", models={model_id}) for t in tables}

    return Stage("from the snapshot", run)


def recompute(folder: str | Path, rows: pd.DataFrame, table: str, *, models_dir: str | Path,
              data_dir: str | Path) -> pd.DataFrame:
    """``rows`` of ``table`` (from :func:`sample`) recomputed from scratch: for each model, a new
    store with the phantoms and the model's weights, the check's stages over the rows' images."""
    from ..demo import build_demo  # the demo build imports this package

    folder, check = Path(folder), CHECKS[table]
    prov = provenance.read(folder)
    config = PhantomConfig.from_json(json.dumps(prov["phantom_config"]))
    out = []
    for model_id, group in rows.groupby("model_id", sort=True):
        ids = sorted(set(group.image_id)) if "image_id" in group else []
        stages = [_taken(folder, check.shipped, model_id)] if check.shipped else []
        stages += [_over(st, ids) if ids else st for st in check.stages]
        with tempfile.TemporaryDirectory(prefix="cxrxai-recompute-") as tmp:
            store = Path(tmp) / "store.duckdb"
            build_demo(store, model_path=Path(models_dir) / prov["models"][model_id]["file"],
                       data_dir=data_dir, config=config, stages=stages, phase="quick")
            with open_store(store) as s:
                export_table(s, table, Path(tmp) / "got.parquet")
            got = pd.read_parquet(Path(tmp) / "got.parquet")
        out.append(group[list(check.key)].merge(got, on=list(check.key), how="left"))
    return pd.concat(out, ignore_index=True)[list(rows.columns)]


def differences(shipped: pd.DataFrame, recomputed: pd.DataFrame, key: tuple[str, ...], *,
                rtol: float = 1e-5, atol: float = 1e-6) -> list[str]:
    """Each cell where ``recomputed`` differs from ``shipped`` (numbers beyond ``rtol``/``atol``, NaN
    equal to NaN; anything else exactly), as ``"table key: column shipped → recomputed"``."""
    a = shipped.sort_values(list(key)).reset_index(drop=True)
    b = recomputed.sort_values(list(key)).reset_index(drop=True)
    out = []
    for col in a.columns:
        x, y = a[col], b[col]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y) and x.dtype != bool:
            same = np.isclose(x.to_numpy(float), y.to_numpy(float), rtol=rtol, atol=atol, equal_nan=True)
        else:
            same = (x.astype(object) == y.astype(object)).to_numpy() | (x.isna() & y.isna()).to_numpy()
        out += [f"{tuple(a.loc[i, list(key)])}: {col} {x[i]!r} → {y[i]!r}" for i in np.flatnonzero(~same)]
    return out
