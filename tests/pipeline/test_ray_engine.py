"""``precompute --engine ray``: a local Ray (2 CPUs) precomputes a small phantom dataset written in
a published layout with two explainers; one worker process is killed by its pid mid-run, and the
finished store equals the local engine's table by table. A second run writes nothing; bad input
(an unreachable address, Ray missing) is a clear error before anything is written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cxrxai.cli import main
from cxrxai.store import open_store

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from e2e import _layouts  # noqa: E402
from e2e.test_published_layouts import _checkpoint  # noqa: E402

#: Columns that say when or where a row was made, not what it holds.
TIMING = {"seconds", "created_at", "device"}


def _argv(layout, root: Path, store: Path) -> list[str]:
    return ["precompute", *layout.args(), "--model", _checkpoint(root, layout.labels), "--store", str(store),
            "--split", "all", "--explainers", "gradcam,occlusion", "--per-label", "2", "--input-size", "64"]


def _tables(store: Path) -> dict[str, pd.DataFrame]:
    with open_store(store) as s:
        names = ["images", "labels", "annotations", "predictions", "thresholds", "maps", "localization", "geometry"]
        out = {}
        for name in names:
            df = s._df(f"SELECT * FROM {name}")
            df = df.drop(columns=[c for c in df.columns if c in TIMING])
            out[name] = df.sort_values(list(df.columns[:5])).reset_index(drop=True)
        return out


def _written(store: Path) -> tuple:
    with open_store(store) as s:
        return tuple(s._rows("SELECT count(*), max(created_at) FROM maps")[0]) + (s.table_counts(),)


def _ray_workers() -> list[int]:
    """Pids of Ray worker processes running one of our units (Ray titles them ray::_run_unit)."""
    found = subprocess.run(["pgrep", "-f", "ray::_run_unit"], capture_output=True, text=True).stdout.split()
    return [int(p) for p in found]


def test_a_killed_worker_is_retried_and_the_store_equals_the_local_engines(world):
    layout, root, env, local = world
    store = root / "ray.duckdb"
    cmd = [sys.executable, "-m", "cxrxai", *_argv(layout, root, store), "--engine", "ray", "--ray-cpus", "2"]
    proc = subprocess.Popen(cmd, cwd=REPO, env={**env, "CXRXAI_RAY_UNIT_DELAY": "0.4"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline and killed is None:
        parts = list(Path(f"{store}.parts").glob("*.parquet"))
        pids = _ray_workers()
        if parts and pids:  # mid-run: some units done, one in flight
            killed = pids[0]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    assert killed is not None, "no worker was caught running a unit"
    report = json.loads(out[out.index("{"):])
    assert report["engine"]["name"] == "ray" and report["engine"]["units"] > 0
    with open_store(store) as s:
        assert s.table_counts()["maps"] > 0
    _assert_same_store(store, local)
    # the same precompute again: every unit is in the store, nothing is computed or written
    before = _written(store)
    again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    report = json.loads(again.stdout[again.stdout.index("{"):])
    assert report["engine"]["units"] == 0 and report["engine"]["from_parts"] == 0
    assert _written(store) == before
    assert report["engine"]["workers"] == 0


def _assert_same_store(store: Path, local: Path) -> None:
    mine, theirs = _tables(store), _tables(local)
    for name, expected in theirs.items():
        got = mine[name]
        if name == "maps":
            for a, b in zip(got["values"], expected["values"]):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
            got, expected = got.drop(columns="values"), expected.drop(columns="values")
        pd.testing.assert_frame_equal(got, expected, check_dtype=False, obj=name)


def test_a_killed_driver_resumes_from_the_parts_already_written(world):
    layout, root, env, local = world
    store = root / "resumed.duckdb"
    cmd = [sys.executable, "-m", "cxrxai", *_argv(layout, root, store), "--engine", "ray", "--ray-cpus", "2"]
    log = root / "killed-driver.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, cwd=REPO, env={**env, "CXRXAI_RAY_UNIT_DELAY": "0.4"}, stdout=subprocess.DEVNULL,
                                stderr=err)
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline:
        if len(list(Path(f"{store}.parts").glob("*.parquet"))) >= 3:
            proc.send_signal(signal.SIGKILL)  # the driver dies mid-run; its workers' parts stay on disk
            break
        time.sleep(0.05)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, f"the driver ended by itself: {log.read_text()[-3000:]}"
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout[done.stdout.index("{"):])
    assert report["engine"]["from_parts"] >= 1  # ingested, not recomputed
    _assert_same_store(store, local)


def test_an_unreachable_address_is_a_clear_error_and_nothing_is_written(world, capsys):
    layout, root, _, _ = world
    store = root / "unreachable.duckdb"
    code = main([*_argv(layout, root, store), "--engine", "ray", "--address", "127.0.0.1:1"])
    assert code != 0
    err = capsys.readouterr().err
    assert "cannot reach the Ray cluster at '127.0.0.1:1': nothing answers at 127.0.0.1:1" in err
    assert not store.exists()


def test_missing_ray_says_how_to_install_it(world, capsys, monkeypatch):
    layout, root, _, _ = world
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    code = main([*_argv(layout, root, root / "noray.duckdb"), "--engine", "ray"])
    assert code != 0 and "requirements-ray.txt" in capsys.readouterr().err
    assert not (root / "noray.duckdb").exists()


def test_a_unit_that_fails_for_good_is_a_clear_error_and_keeps_what_was_stored(tiny_model_path, tmp_path):
    from types import SimpleNamespace

    from cxrxai.data.decode import RowLoader
    from cxrxai.errors import DataError
    from cxrxai.models.registry import load
    from cxrxai.pipeline.ray_engine import EngineError, RayEngine
    from cxrxai.store import write_store

    store = tmp_path / "s.duckdb"
    engine = RayEngine(tmp_path / "parts", num_cpus=1, retries=1)
    try:
        with write_store(store) as w:
            w.put_model(load(tiny_model_path, device="cpu").spec)
            w.publish()
            loader = RowLoader(np.zeros((1, 64, 64), np.uint8), ["a.png"])
            ctx = SimpleNamespace(model=load(tiny_model_path, device="cpu"), load_images=loader, writer=w,
                                  progress=lambda *a: None, maybe_publish=lambda: None)
            # the driver sends each unit its pixels: an image it has not decoded stops the run before Ray
            with pytest.raises(DataError, match=r"no decoded image for \['b.png'\]"):
                engine.run(ctx, [{"kind": "predictions", "ids": ["a.png", "b.png"]}], "predictions")
            # a unit the worker cannot compute fails after its retries, with the worker's reason
            with pytest.raises(EngineError, match=r"cams unit failed on Ray(.|\n)*unknown explainer"):
                engine.run(ctx, [{"kind": "cams", "ids": ["a.png"], "methods": {"no-such": {"params": {},
                                                                                         "wanted": {}}}}], "maps")
    finally:
        engine.shutdown()
    with open_store(store) as s:
        assert list(s.models().model_id) == ["tiny-densenet121"]  # what was published stays
    assert not list((tmp_path / "parts").glob("*.parquet"))  # no part for a failed unit
