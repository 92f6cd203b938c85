"""Recompute a seeded random sample of a snapshot's rows from scratch, so that a change that alters
any shipped number is caught until the snapshot is rebuilt (``make demo-evidence``).

Each check (:data:`CHECKS`, :mod:`.checks`) names the build stages that compute its rows; the
sample's rows are recomputed in a new store from the phantoms and the weights, with the same
stages, over the sampled rows' unit only (their images, maps or case). What a row rests on that
another check covers is taken from the snapshot (the thresholds from the shipped predictions,
the scores from the shipped predictions and thresholds). A table with rows but no check
(:func:`unchecked`) is itself a failure: a snapshot ships only numbers a test recomputes.
"""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ...data.phantom import PhantomConfig
from ...errors import EvidenceSnapshotError, UnknownNameError
from ...store import export_table, import_table, open_store
from ..runner import Stage
from . import provenance
from .checks import CHECKS, Check, Sampled, checks_of, cohort

__all__ = ["CHECKS", "RUN_COLUMNS", "Check", "cohort", "differences", "partners", "recompute",
           "recompute_together", "sample", "sample_together", "unchecked"]

#: Columns that describe the run that wrote a row (how long a map took, by which clock, on what,
#: when), not its result: never compared.
RUN_COLUMNS = ("seconds", "timing", "device", "created_at")


def _rows(folder: Path, table: str) -> pd.DataFrame:
    return pd.read_parquet(folder / f"{table}.parquet")


def _check(name: str) -> Check:
    if name not in CHECKS:
        raise UnknownNameError("evidence check", name, tuple(CHECKS))
    return CHECKS[name]


def unchecked(folder: str | Path) -> dict[str, int]:
    """Rows of the snapshot in ``folder`` that no check recomputes, per table (empty: every row is)."""
    folder = Path(folder)
    out = {}
    for table, n in provenance.read(folder)["tables"].items():
        if not n or table in provenance.RECORDS:
            continue
        rows = _rows(folder, table)
        covered = np.zeros(len(rows), bool)
        for check in checks_of(table).values():
            covered |= rows.index.isin(check.rows(rows).index)
        if (~covered).sum():
            out[table] = int((~covered).sum())
    return out


def sample(folder: str | Path, name: str, n: int, seed: int) -> pd.DataFrame:
    """A seeded random sample of ``n`` rows that the check ``name`` (:data:`CHECKS`: a table's name
    for its first check) recomputes (fewer when it has fewer). A check whose stage computes several
    rows at once (its :attr:`~.checks.Check.unit`) gets whole units: the units in a seeded random
    order, each unit's rows together, the first ``n`` rows (a fidelity case's methods recomputed as
    the build computed them, at the cost of one case instead of one per row)."""
    check = _check(name)
    rows = check.rows(_rows(Path(folder), check.table))
    if check.unit is None:
        return rows.sample(n=min(n, len(rows)), random_state=seed).reset_index(drop=True)
    units = pd.MultiIndex.from_frame(rows[list(check.unit)])
    order = units.unique().to_frame(index=False).sample(frac=1, random_state=seed)
    rank = pd.MultiIndex.from_frame(order).get_indexer(units)
    return rows.iloc[np.argsort(rank, kind="stable")].head(n).reset_index(drop=True)


#: What one map is, in the rows that rest on it: a check's rows share these columns with its
#: partners' (a localization row and its metrics' scores rest on one map, computed once)
MAP_UNIT = ("model_id", "image_id", "label", "source", "method", "params_key")


def sample_together(folder: str | Path, names: list[str] | tuple[str, ...], n: int, seed: int
                    ) -> dict[str, pd.DataFrame]:
    """Each check's seeded sample of ``n`` rows, for checks recomputed together (:func:`partners`):
    a map is the unit a recomputation pays for, so a check whose rows rest on maps a check before it
    drew (its rows have :data:`MAP_UNIT`) draws its ``n`` rows among the rows on those maps when they
    hold ``n``; otherwise it draws as :func:`sample` does, and its maps join the drawn ones. Every
    check still gets ``n`` rows (fewer when it has fewer); the localization rows and their metrics'
    scores of one setting then rest on the same maps, half the maps computed."""
    drawn: set[tuple] = set()
    out = {}
    for name in names:
        check = _check(name)
        rows = check.rows(_rows(Path(folder), check.table))
        if not set(MAP_UNIT) <= set(rows.columns):
            out[name] = sample(folder, name, n, seed)
            continue
        on = rows[pd.MultiIndex.from_frame(rows[list(MAP_UNIT)]).isin(drawn)] if drawn else rows.iloc[:0]
        pool = on if len(on) >= n else rows
        out[name] = pool.sample(n=min(n, len(pool)), random_state=seed).reset_index(drop=True)
        drawn |= set(out[name][list(MAP_UNIT)].itertuples(index=False, name=None))
    return out


def _taken(folder: Path, tables: tuple[str, ...], model_id: str) -> Stage:
    def run(ctx) -> dict:
        return {t: import_table(ctx.writer, t, folder / f"{t}.parquet", models={model_id}) for t in tables}

    return Stage("from the snapshot", run)


def _groups(check: Check, rows: pd.DataFrame, prov: dict) -> list[tuple[str, pd.DataFrame]]:
    """``(the model a run builds with, its rows)``: one run per model, or one over the demo model
    (the first step's) for a check that is not per model."""
    if check.per_model:
        return list(rows.groupby("model_id", sort=True))
    steps = prov.get("steps") or []
    return [(steps[0][3] if steps else sorted(prov["models"])[0], rows)]


def partners(name: str) -> tuple[str, ...]:
    """The checks whose rows one build recomputes with ``name``'s (the same stages, shipped tables
    and grouping: a table's localization rows and their metrics' scores), ``name`` among them."""
    check = _check(name)
    return tuple(n for n, c in CHECKS.items()
                 if (c.stages, c.shipped, c.per_model) == (check.stages, check.shipped, check.per_model))


@functools.cache
def _dataset_store(data_dir: str, config: str, snapshot: str) -> Path:
    """A store holding the demo's cases alone (images, labels, masks, the second reader), written
    once per process and copied as each recomputation's new store: registering the 4,300 cases
    took most of a second of every recomputed model's build. Removed when the process ends."""
    from ..demo import demo_dataset_store  # the demo build imports this package

    folder = Path(tempfile.mkdtemp(prefix="cxrxai-recompute-cases-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    config_ = PhantomConfig.from_json(config)
    return demo_dataset_store(folder / "cases.duckdb", data_dir=data_dir, config=config_,
                              data=cohort(config_, data_dir, snapshot))


def recompute(folder: str | Path, rows: pd.DataFrame, name: str, *, models_dir: str | Path,
              data_dir: str | Path) -> pd.DataFrame:
    """``rows`` of the check ``name`` (from :func:`sample`) recomputed from scratch: for each model,
    a new store with the phantoms and the model's weights, the check's stages over the rows' unit."""
    return recompute_together(folder, {name: rows}, models_dir=models_dir, data_dir=data_dir)[name]


def recompute_together(folder: str | Path, samples: dict[str, pd.DataFrame], *, models_dir: str | Path,
                       data_dir: str | Path) -> dict[str, pd.DataFrame]:
    """Each check's sampled rows (``samples``: check name → rows from :func:`sample`, the checks
    :func:`partners` of one another) recomputed by one build per model over the union of their
    units, as :func:`recompute` gives each alone: every sampled map is computed, once."""
    from ..demo import build_demo  # the demo build imports this package

    folder, names = Path(folder), list(samples)
    if not names:
        raise EvidenceSnapshotError("no check to recompute: give at least one check's sampled rows")
    check = _check(names[0])
    if stray := sorted(set(names) - set(partners(names[0]))):
        raise EvidenceSnapshotError(f"the checks {stray} are not recomputed by the build of {names[0]!r}; "
                                    f"together only: {list(partners(names[0]))}")
    prov = provenance.read(folder)
    config = PhantomConfig.from_json(json.dumps(prov["phantom_config"]))
    union = pd.concat(list(samples.values()), join="inner", ignore_index=True)  # the stages dedupe units
    out: dict[str, list[pd.DataFrame]] = {n: [] for n in names}
    for model_id, group in _groups(check, union, prov):
        stages = [_taken(folder, check.shipped, model_id)] if check.shipped else []
        stages += check.stages(Sampled(group, folder, Path(models_dir), Path(data_dir)))
        with tempfile.TemporaryDirectory(prefix="cxrxai-recompute-") as tmp:
            store = Path(tmp) / "store.duckdb"
            shutil.copyfile(_dataset_store(str(data_dir), config.to_json(), str(folder)), store)
            build_demo(store, model_path=Path(models_dir) / prov["models"][model_id]["file"],
                       data_dir=data_dir, config=config, stages=stages, phase="quick",
                       data=cohort(config, data_dir, folder))
            got = {}
            with open_store(store) as s:
                for table in sorted({CHECKS[n].table for n in names}):
                    export_table(s, table, Path(tmp) / f"{table}.parquet")
                    got[table] = pd.read_parquet(Path(tmp) / f"{table}.parquet")
            for n in names:
                mine, key = samples[n], list(CHECKS[n].key)
                if check.per_model:
                    mine = mine[mine.model_id == model_id]
                out[n].append(mine[key].merge(got[CHECKS[n].table], on=key, how="left"))
    return {n: pd.concat(out[n], ignore_index=True)[list(samples[n].columns)] for n in names}


def differences(shipped: pd.DataFrame, recomputed: pd.DataFrame, key: tuple[str, ...], *,
                rtol: float = 1e-5, atol: float = 1e-6) -> list[str]:
    """Each cell where ``recomputed`` differs from ``shipped`` (numbers, and the arrays of a curve, a
    thumbnail or a map, beyond ``rtol``/``atol``, NaN equal to NaN; anything else exactly; the
    :data:`RUN_COLUMNS` not at all), as ``"table key: column shipped → recomputed"``."""
    a = shipped.sort_values(list(key)).reset_index(drop=True)
    b = recomputed.sort_values(list(key)).reset_index(drop=True)
    out = []
    for col in (c for c in a.columns if c not in RUN_COLUMNS):
        x, y = a[col], b[col]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y) and x.dtype != bool:
            same = np.isclose(x.to_numpy(float), y.to_numpy(float), rtol=rtol, atol=atol, equal_nan=True)
        elif any(isinstance(v, list | np.ndarray) for v in x):
            same = np.array([_same_array(u, v, rtol, atol) for u, v in zip(x, y)], bool)
        else:
            same = (x.astype(object) == y.astype(object)).to_numpy() | (x.isna() & y.isna()).to_numpy()
        out += [f"{tuple(a.loc[i, list(key)])}: {col} {x[i]!r} → {y[i]!r}" for i in np.flatnonzero(~same)]
    return out


def _same_array(u, v, rtol: float, atol: float) -> bool:
    """Whether two array cells (a curve, a thumbnail) are equal in shape and close in value."""
    if u is None or v is None:
        return u is None and v is None
    u, v = np.asarray(u, float), np.asarray(v, float)
    return u.shape == v.shape and bool(np.allclose(u, v, rtol=rtol, atol=atol, equal_nan=True))
