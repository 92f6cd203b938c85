"""A stored map's seconds are its computation's own time, named (issue 42, item 3): the CPU time of
the pass on a CPU (time spent waiting on a busy machine is not in it), and a store written before
the clock was named says its seconds are wall-clock time."""

from __future__ import annotations

from types import SimpleNamespace

import duckdb
import numpy as np
import pandas as pd
import torch

from cxrxai.pipeline import units
from cxrxai.store import SCHEMA_VERSION, open_store, write_store


def _clock(*ticks: float):
    it = iter(ticks)
    return lambda: next(it)


def test_a_map_unit_stores_the_cpu_time_of_its_pass_and_names_the_clock(monkeypatch):
    spec = SimpleNamespace(name="m", label_index={"A": 0, "B": 1}.__getitem__)
    model = SimpleNamespace(spec=spec, device=torch.device("cpu"))
    monkeypatch.setattr(units, "preprocess", lambda x, spec: torch.as_tensor(x))
    monkeypatch.setattr(units, "store_values", lambda model, x, targets, setting: [
        (np.zeros((2, 2), np.float32), "occlusion_grid") for _ in targets])
    # the machine is busy: 1,000 s pass on the wall while the pass itself computes 3 CPU seconds
    monkeypatch.setattr(units.time, "process_time", _clock(10.0, 13.0))
    monkeypatch.setattr(units.time, "perf_counter", _clock(0.0, 1000.0))
    unit = {"kind": "map", "image_id": "i", "labels": ["A", "B"], "method": "occlusion",
            "params": {"patch": 32, "stride": 16, "baseline": "black", "output": "logit"}}
    rows, _ = units.compute_unit(model, lambda ids: np.zeros((1, 8, 8), np.float32), unit)
    # occlusion computes both labels in the same passes: each map took the whole pass
    assert [(r["seconds"], r["timing"]) for r in rows] == [(3.0, "cpu"), (3.0, "cpu")]


def _v6_store(path) -> None:
    """A store as schema v6 wrote it: one occlusion map with its (wall-clock) seconds, one without."""
    from cxrxai.store._schema import MIGRATIONS

    con = duckdb.connect(str(path))
    for v in range(1, 7):
        for ddl in MIGRATIONS[v]:
            con.execute(ddl)
    con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', '6')")
    for image_id, seconds in (("i1", 2599.2), ("i2", None)):
        con.execute("""INSERT INTO maps (model_id, image_id, label, method, params_key, params, target,
                       kind, height, width, "values", seconds, device) VALUES ('m', ?, 'A', 'occlusion',
                       '{}', '{}', 'logit', 'occlusion_grid', 1, 1, [0.5], ?, 'cpu')""", [image_id, seconds])
    con.close()


def test_a_store_from_before_the_clock_was_named_says_its_seconds_are_wall_clock(tmp_path):
    path = tmp_path / "v6.duckdb"
    _v6_store(path)
    with open_store(path) as s:  # read as it is: no column yet, the report's reader names it
        assert "timing" not in s.map_index(model_id="m")
    with write_store(path) as w:
        assert w.schema_version() == SCHEMA_VERSION
        idx = w.map_index(model_id="m").set_index("image_id")
        assert idx.loc["i1", "timing"] == "wall" and idx.loc["i1", "seconds"] == 2599.2
        assert pd.isna(idx.loc["i2", "timing"])  # no time, no clock
        w.put_maps([{"model_id": "m", "image_id": "i3", "label": "A", "method": "occlusion", "params": {},
                     "target": "logit", "kind": "occlusion_grid", "values": np.ones((1, 1)), "seconds": 3.0,
                     "timing": "cpu", "device": "cpu"}])
        assert w.map_index(model_id="m").set_index("image_id").loc["i3", "timing"] == "cpu"


def test_the_evidence_checks_compare_a_map_not_the_clock_it_was_timed_with():
    from cxrxai.pipeline.evidence.recompute import differences

    key = ("model_id", "image_id")
    shipped = pd.DataFrame({"model_id": ["m"], "image_id": ["i"], "values": [[0.5]], "seconds": [2599.2],
                            "timing": ["wall"], "device": ["cpu"]})
    recomputed = shipped.assign(seconds=3.1, timing="cpu")  # a shipped wall time, recomputed on the CPU clock
    assert differences(shipped, recomputed, key) == []
    assert differences(shipped, recomputed.assign(values=[[0.6]]), key) != []
