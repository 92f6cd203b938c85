"""Importing the shipped evidence snapshot when the code has moved on: a contributor's new stage
with a table of its own leaves every shipped step imported (the table is created on its first
write, no schema version changes); a snapshot of an older schema version is migrated as an old
store is; a step whose sources changed since the snapshot was built is the only one recomputed.
Each imports the real snapshot (seconds); none recomputes its numbers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from _scratch import run_in, scratch_copy
from test_evidence import SNAPSHOT, _new_store

from cxrxai import paths
from cxrxai.pipeline.evidence import (
    PROVENANCE,
    SNAPSHOT_META,
    covered_steps,
    export_snapshot,
    import_snapshot,
)
from cxrxai.pipeline.evidence.step_sources import stage_hashes
from cxrxai.store import SCHEMA_VERSION, open_store, write_store
from cxrxai.store._schema import LOCALIZATION_KEY, WIDE_METRICS

#: The toy stage a contributor adds: one new module in the pipeline package, nothing else.
TOY_MODULE = '''
"""A toy analysis: predictions per model and label, in a table of its own."""
import pandas as pd

from ..store import StageTable
from .stages import stage


@stage("toy counts", reads=("predictions",), writes=("toy_counts",), help="predictions per label",
       analysis="toy-counts",
       tables=(StageTable("toy_counts", {"model_id": "VARCHAR", "label": "VARCHAR", "n": "BIGINT"},
                          key=("model_id", "label")),))
def toy_counts(ctx) -> dict:
    preds = ctx.writer.table_counts()  # any read; the rows below are what the test checks
    rows = pd.DataFrame({"model_id": ["m"], "label": ["Nodule"], "n": [preds["predictions"]]})
    return {"rows": ctx.writer.put_table("toy_counts", rows)}
'''

#: Run in a scratch copy of the package holding the toy module: import the snapshot, run the toy
#: stage on the store, export it again and import that export into a new store.
IMPORT_WITH_TOY = '''
import json, sys
from pathlib import Path
from types import SimpleNamespace
from cxrxai.pipeline.evidence import export_snapshot, import_snapshot
from cxrxai.pipeline.stages import analysis_names, get_stage
from cxrxai.store import DECLARED_TABLES, SCHEMA_VERSION, open_store, write_store

snapshot, models, tmp = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
prov = json.loads((snapshot / "provenance.json").read_text())
out = {"schema_version": SCHEMA_VERSION, "analyses": list(analysis_names()),
       "declared": list(DECLARED_TABLES)}
for name, folder in (("first", snapshot), ("again", tmp / "export")):
    store = tmp / f"{name}.duckdb"
    with write_store(store) as w:
        w.put_dataset("demo", source="test", labels=["Nodule"], config=prov["phantom_config"])
    with write_store(store) as w:
        got = import_snapshot(w, folder, models_dir=models, phantom_config=prov["phantom_config"])
        out[name] = {k: got.get(k) for k in ("rows", "steps", "recomputed_steps", "refused", "left_out")}
        out[name]["had_toy_table"] = w.has_table("toy_counts")
        if name == "first":
            get_stage("toy counts").run(SimpleNamespace(writer=w))
    with open_store(store) as s:
        out[name]["toy_rows"] = s.table("toy_counts").to_dict("records")
    if name == "first":
        export_snapshot(store, tmp / "export")
print(json.dumps(out, default=str))
'''


def _stamped(tmp_path: Path, prov: dict, **changes) -> Path:
    """The shipped snapshot (its files linked) with a provenance that records the hash of each
    step's sources in this checkout (``changes``: stage → another hash)."""
    folder = tmp_path / "stamped"
    folder.mkdir()
    for path in SNAPSHOT.iterdir():
        (folder / path.name).symlink_to(path)
    (folder / PROVENANCE).unlink()
    hashes = {**stage_hashes(prov["steps"]), **changes}
    (folder / PROVENANCE).write_text(json.dumps({**prov, "step_sources": hashes}))
    return folder


@pytest.fixture(scope="module")
def prov():
    return json.loads((SNAPSHOT / PROVENANCE).read_text())


def test_a_new_stage_with_a_table_leaves_every_shipped_step_imported(tmp_path, prov):
    scratch = scratch_copy(tmp_path, {"cxrxai/pipeline/toy_counts.py": TOY_MODULE})
    folder = _stamped(tmp_path, prov)
    run = run_in(scratch, IMPORT_WITH_TOY, str(folder), str(paths.shipped_models_dir()), str(tmp_path),
                 home=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["schema_version"] == SCHEMA_VERSION  # no migration for a toy (the snapshot's may be older)
    assert "toy-counts" in out["analyses"] and "toy_counts" in out["declared"]
    first = out["first"]
    assert first["refused"] is None and first["recomputed_steps"] == [] and first["left_out"] == []
    assert first["rows"] == prov["tables"] and first["steps"] == len(prov["steps"])
    assert first["had_toy_table"] is False  # created by the stage's first write
    assert first["toy_rows"] == [{"model_id": "m", "label": "Nodule",
                                  "n": prov["tables"]["predictions"]}]
    again = out["again"]  # the toy's table travels in a snapshot exported from that store (and meta
    assert again["rows"] == {**prov["tables"], "toy_counts": 1,  # with the import's provenance)
                             "meta": prov["tables"]["meta"] + 1}
    assert again["toy_rows"] == first["toy_rows"]


def test_only_the_step_whose_sources_changed_is_recomputed(tmp_path, prov):
    folder = _stamped(tmp_path, prov, geometry="0" * 64)
    store = _new_store(tmp_path, prov)
    with write_store(store) as w:
        got = import_snapshot(w, folder, models_dir=paths.shipped_models_dir(),
                              phantom_config=prov["phantom_config"])
    stale = [s for s in prov["steps"] if s[2] == "geometry"]
    assert stale and got["recomputed_steps"] == stale
    assert got["rows"] == prov["tables"]  # its rows are imported, and replaced when it is recomputed
    with open_store(store) as s:
        assert covered_steps(s) == {(n, st, m) for _r, n, st, m in prov["steps"] if st != "geometry"}
        assert json.loads(s.meta(SNAPSHOT_META))["recomputed_steps"] == stale


def _as_v5(tmp_path: Path, prov: dict) -> Path:
    """The shipped snapshot as schema version 5 wrote it: scores as columns of ``localization``."""
    folder = tmp_path / "v5"
    shutil.copytree(SNAPSHOT, folder)
    key = ", ".join(LOCALIZATION_KEY)
    picks = ", ".join(f"max(s.value) FILTER (WHERE s.metric = '{m}') AS {m}" for m in WIDE_METRICS)
    con = duckdb.connect()
    wide = (f"SELECT l.*, {picks} FROM '{folder}/localization.parquet' l "
            f"LEFT JOIN '{folder}/localization_scores.parquet' s USING ({key}) GROUP BY ALL ORDER BY ALL")
    con.execute(f"COPY ({wide}) TO '{tmp_path}/wide.parquet' (FORMAT parquet)")
    shutil.move(tmp_path / "wide.parquet", folder / "localization.parquet")
    (folder / "localization_scores.parquet").unlink()
    tables = {t: n for t, n in prov["tables"].items() if t != "localization_scores"}
    (folder / PROVENANCE).write_text(json.dumps({**prov, "schema_version": 5, "tables": tables}))
    return folder


def test_a_snapshot_of_an_older_schema_is_migrated(tmp_path, prov):
    store = _new_store(tmp_path, prov)
    with write_store(store) as w:
        got = import_snapshot(w, _as_v5(tmp_path, prov), models_dir=paths.shipped_models_dir(),
                              phantom_config=prov["phantom_config"])
    assert "refused" not in got and got["steps"] == len(prov["steps"])
    export_snapshot(store, tmp_path / "out")
    for table in prov["tables"]:
        a, b = (pd.read_parquet(f / f"{table}.parquet") for f in (SNAPSHOT, tmp_path / "out"))
        if table == "meta":
            a, b = (d[d.key != SNAPSHOT_META].reset_index(drop=True) for d in (a, b))
        if table == "localization_scores":  # v5 scored every metric of a row: the migration says so
            assert b.value.notna().sum() == a.value.notna().sum() and len(b) >= len(a)
            a, b = (d[d.value.notna()].reset_index(drop=True) for d in (a, b))
        if table == "maps" and "timing" not in a:  # v7: every time stored before it is wall-clock time
            assert (b.timing[b.seconds.notna()] == "wall").all() and b.timing[b.seconds.isna()].isna().all()
            b = b.drop(columns="timing")
        pd.testing.assert_frame_equal(a, b, check_dtype=True)


def test_a_snapshot_that_says_an_older_schema_but_is_not_is_refused(tmp_path, prov):
    folder = _stamped(tmp_path, prov)
    (folder / PROVENANCE).write_text(json.dumps({**prov, "schema_version": 5}))
    store = _new_store(tmp_path, prov)
    with write_store(store) as w:
        got = import_snapshot(w, folder, models_dir=paths.shipped_models_dir(),
                              phantom_config=prov["phantom_config"])
    assert "cannot be migrated" in got["refused"] and "schema version 5" in got["refused"]
    with open_store(store) as s:
        assert s.table_counts()["predictions"] == 0 and s.meta(SNAPSHOT_META) is None
