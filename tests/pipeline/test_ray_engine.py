"""``precompute --engine ray``: a local Ray (2 CPUs) precomputes a small phantom dataset written in
a published layout with two explainers; one worker process is killed by its pid mid-run, and the
finished store equals the local engine's table by table. A second run writes nothing; bad input
(an unreachable address, Ray missing) is a clear error before anything is written."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
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
pytestmark = [pytest.mark.ray, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
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


def test_a_killed_worker_is_retried_and_the_store_equals_the_local_engines(world, monkeypatch, capsys):
    layout, root, env, local = world
    store = root / "ray.duckdb"
    argv = [*_argv(layout, root, store), "--engine", "ray", "--ray-cpus", "2"]
    cmd = [sys.executable, "-m", "cxrxai", *argv]
    proc = subprocess.Popen(cmd, cwd=REPO, env={**env, "CXRXAI_RAY_UNIT_DELAY": "0.4"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline and killed is None:
        # mid-run: some units done, one in flight (the process table is read only once a part is
        # written: a scan of every process, 20 times a second, cost seconds of CPU while Ray started)
        pids = _ray_workers() if any(Path(f"{store}.parts").glob("*.parquet")) else []
        if pids:
            killed = pids[0]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    assert killed is not None, "no worker was caught running a unit"
    report = json.loads(out[out.index("{"):])
    assert report["engine"]["name"] == "ray" and report["engine"]["units"] > 0 and report["engine"]["ray"] == "local"
    with open_store(store) as s:
        assert s.table_counts()["maps"] > 0
    _assert_same_store(store, local)
    # the same precompute again (in this process: a second interpreter importing torch cost ~5 s of
    # CPU): every unit is in the store, nothing is computed or written
    before = _written(store)
    monkeypatch.setenv("CXRXAI_DATA_CACHE", env["CXRXAI_DATA_CACHE"])
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{"):])
    assert report["engine"]["units"] == 0 and report["engine"]["from_parts"] == 0
    assert _written(store) == before
    assert report["engine"]["workers"] == 0
    assert report["engine"]["ray"] is None  # nothing to compute: no local Ray was started


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
    # one Ray worker per run: each worker imports torch (~5 s of CPU), and the parts a killed driver
    # leaves are the same whether one worker wrote them or two
    cmd = [sys.executable, "-m", "cxrxai", *_argv(layout, root, store), "--engine", "ray", "--ray-cpus", "1"]
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


# --------------------------------------------------------------------------- a cluster of two nodes
# ``precompute --engine ray --address`` on a Ray cluster of two nodes started as a lab starts them
# (``ray start --head``, then ``ray start --address`` for the second node, each its own processes, on
# this machine's loopback), with token authentication as Ray 2.60 enables it.
#
# What a real cluster would break is asserted from inside the workers: a task pinned to each node,
# and every unit, reports where its ``cxrxai`` was imported from (the package Ray shipped with the
# job, never the driver's checkout) and each unit where its pixels came from (by value through the
# object store, never a path into the driver's decode cache). The second node's raylet is killed
# while it computes a unit; the unit is retried on the head, and the store equals the local engine's.

def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray(env: dict, *args: str) -> None:
    ray_bin = shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"
    out = subprocess.run([ray_bin, *args], env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]


def _raylets(temp_dir: Path) -> dict[str, int]:
    """{"head" | "worker": pid} of this cluster's raylets (by their command lines)."""
    found = {}
    for pid in subprocess.run(["pgrep", "-f", "raylet/raylet"], capture_output=True, text=True).stdout.split():
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"--temp_dir={temp_dir}".encode() in args:
            found["head" if b"--head" in args else "worker"] = int(pid)
    return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = Path(tmp_path_factory.mktemp("cluster"))
    temp_dir = Path("/tmp") / f"cxr-ray-{os.getpid()}"  # Ray's socket paths must stay short
    token = root / "token"
    token.write_text(secrets.token_hex(32))
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    port = _port()
    common = ["--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
    try:
        _ray(env, "start", "--head", "--port", str(port), "--temp-dir", str(temp_dir), "--include-dashboard",
             "false", *common)
        _ray(env, "start", "--address", f"127.0.0.1:{port}", *common)
        yield f"127.0.0.1:{port}", env, temp_dir
    finally:
        _stop(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _ours(pid: Path, temp_dir: Path) -> bool:
    """Whether process ``pid`` (its ``/proc`` folder) is this cluster's: its command line names the
    temp dir, or (a node's agents, which retitle themselves ``ray::DashboardAgent``) a file it has
    open lies there."""
    ours = str(temp_dir).encode()  # never a prefix of another worker's cluster (cxr-ray-12 in cxr-ray-123)
    try:
        args = (pid / "cmdline").read_bytes().split(b"\0")
        if any(a == ours or a.endswith(b"=" + ours) or ours + b"/" in a for a in args):
            return True
        fds = list((pid / "fd").iterdir())
    except OSError:  # ended meanwhile, or not ours to read
        return False
    return any(_opens(fd, temp_dir) for fd in fds)


def _opens(fd: Path, temp_dir: Path) -> bool:
    try:
        return os.readlink(fd).startswith(f"{temp_dir}/")
    except OSError:  # closed meanwhile
        return False


def _stop(temp_dir: Path) -> None:
    """End this cluster's processes only (:func:`_ours`): ``ray stop`` would end every Ray on the
    machine, a local engine's included. Matched by command line alone, the agents of the node whose
    raylet the test killed outlived the run."""
    for pid in Path("/proc").glob("[0-9]*"):
        if int(pid.name) != os.getpid() and _ours(pid, temp_dir):
            try:
                os.kill(int(pid.name), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue


def _unit_workers(raylet: int) -> list[int]:
    """Worker processes of one node (children of its raylet) running one of our units: the raylet's
    children only (``/proc/PID/task/*/children``), not every process of the machine (polled every
    20 ms, a scan of them all cost seconds of CPU)."""
    out = []
    for children in Path(f"/proc/{raylet}/task").glob("*/children"):
        try:
            pids = children.read_text().split()
        except OSError:
            continue
        for pid in pids:
            try:
                if b"ray::_run_unit" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    out.append(int(pid))
            except OSError:
                continue
    return out


def test_both_nodes_import_the_shipped_package_not_the_checkout(cluster):
    address, ray_env, _ = cluster
    script = ("import json; from cxrxai.pipeline.ray_engine import RayEngine; "
              f"e = RayEngine('unused', address={address!r}); print(json.dumps(e.probe_nodes())); e.shutdown()")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, env={**os.environ, **ray_env}, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    modules = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(modules) == 2  # the head and the second node, each asked by a task pinned to it
    assert all("runtime_resources" in m and not m.startswith(str(REPO)) for m in modules.values()), modules


def test_two_nodes_pixels_by_value_a_node_killed_mid_unit_and_the_store_equals_local(world, cluster, tmp_path):
    layout, root, env, local = world
    address, ray_env, temp_dir = cluster
    raylets = _raylets(temp_dir)
    assert set(raylets) == {"head", "worker"}
    store = tmp_path / "cluster.duckdb"
    cmd = [sys.executable, "-m", "cxrxai", *_argv(layout, root, store), "--engine", "ray", "--address", address]
    proc = subprocess.Popen(cmd, cwd=REPO, env={**env, **ray_env, "CXRXAI_RAY_UNIT_DELAY": "0.5"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed, deadline = False, time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline and not killed:
        if _unit_workers(raylets["worker"]):  # the second node is computing a unit: kill the node under it
            os.kill(raylets["worker"], signal.SIGKILL)
            killed = True
        time.sleep(0.02)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    assert killed, "the second node never ran a unit"
    engine = json.loads(out[out.index("{"):])["engine"]
    assert engine["units"] > 0 and engine["ray"] == address  # its unit was retried on the head
    assert engine["modules"] and all("runtime_resources" in m and not m.startswith(str(REPO)) for m in engine["modules"])
    assert engine["pixels_from"] == ["memory"]  # no unit named a file of the driver's decode cache
    with open_store(store) as s:
        assert s.table_counts()["maps"] > 0
    _assert_same_store(store, local)
