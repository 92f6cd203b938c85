"""Reading the localization table wide: ``store.table("localization")`` on a store of ~50 k rows,
scores as columns (schema v5) and stored long (schema v6: one row per map, reader and metric,
pivoted back to one column per registered metric on read).

    .venv/bin/python -m benchmarks.localization_read [--rows 50000] [--repeat 5]

Builds a v5 store of ``--rows`` random localization rows (one model, 8 labels, 4 explainers, the
reference reader), times ``table("localization")`` and a filtered read (one explainer) on it,
then, when the running cxrxai writes v6, migrates it (timed) and times the same reads. Run it
with the previous cxrxai first (``PYTHONPATH=<old checkout>``) for the read before v6.
Results go to ``benchmarks/results/localization-read-<schema>.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np

from cxrxai.cli.bench import machine
from cxrxai.store import SCHEMA_VERSION, open_store, write_store
from cxrxai.store._queries import Queries
from cxrxai.store._schema import MIGRATIONS

OUT = Path(__file__).resolve().parent / "results"
V5_METRICS = ("iou", "iou_full", "iou_gated", "hit", "pla", "roc_auc", "pr_auc", "ap", "pred_area", "gt_area")
METHODS = ("gradcam", "gradcam++", "ig", "occlusion")
LABELS = 8


def build_v5(path: Path, rows: int, seed: int = 0) -> None:
    """``rows`` localization rows as schema v5 stored them (every metric a column)."""
    rng = np.random.default_rng(seed)
    con = duckdb.connect(str(path))
    for v in range(1, 6):
        for ddl in MIGRATIONS[v]:
            con.execute(ddl)
    con.execute("INSERT INTO meta VALUES ('schema_version', '5')")
    n = -(-rows // (LABELS * len(METHODS)))
    values = ", ".join(f"random() AS {m}" for m in V5_METRICS)
    con.execute(f"SELECT setseed({rng.random() - 0.5})")
    con.execute(
        f"""INSERT INTO localization (model_id, image_id, label, source, method, params_key, reader,
                prob, gt_positive, predicted, {", ".join(V5_METRICS)})
            SELECT 'm', 'img' || i, 'L' || l, 'explainer', m, '{{}}', 'gt', random(), random() < 0.3,
                   random() < 0.5, {values}
            FROM range({n}) t(i), range({LABELS}) u(l), unnest(?::VARCHAR[]) v(m) LIMIT {rows}""",
        [list(METHODS)],
    )
    con.close()


def timed(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def reads(path: Path, repeat: int) -> dict:
    """Median seconds of a read computed from the store (``Queries.table``, what the first call
    of a published version costs), and of the ``Store.table`` call a page repeats (kept per
    version since v6)."""
    with open_store(path) as s:
        whole, df = timed(lambda: Queries.table(s, "localization"), repeat)
        one, sub = timed(lambda: Queries.table(s, "localization", model_id="m", method="gradcam"), repeat)
        again, _ = timed(lambda: s.table("localization"), repeat)
        return {"schema": s.schema_version(), "rows": len(df), "columns": len(df.columns),
                "table_s": round(whole, 4), "one_method_rows": len(sub), "one_method_s": round(one, 4),
                "store_table_repeated_s": round(again, 4)}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "loc.duckdb"
        build_v5(path, args.rows)
        result = {"machine": machine(), "cxrxai_schema": SCHEMA_VERSION, "v5": reads(path, args.repeat)}
        if SCHEMA_VERSION >= 6:
            t0 = time.perf_counter()
            with write_store(path):
                pass
            result["migrate_s"] = round(time.perf_counter() - t0, 3)
            result["v6"] = reads(path, args.repeat)
    OUT.mkdir(exist_ok=True)
    (OUT / f"localization-read-{SCHEMA_VERSION}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
