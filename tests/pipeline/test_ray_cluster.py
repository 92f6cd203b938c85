"""``precompute --engine ray --address`` on a Ray cluster of two nodes started as a lab starts them
(``ray start --head``, then ``ray start --address`` for the second node, each its own processes, on
this machine's loopback), with token authentication as Ray 2.60 enables it.

What a real cluster would break is asserted from inside the workers: a task pinned to each node,
and every unit, reports where its ``cxrxai`` was imported from (the package Ray shipped with the
job, never the driver's checkout) and each unit where its pixels came from (by value through the
object store, never a path into the driver's decode cache). The second node's raylet is killed
while it computes a unit; the unit is retried on the head, and the store equals the local engine's.
"""

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

import pytest

from cxrxai.store import open_store

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from pipeline.test_ray_engine import _argv, _assert_same_store  # noqa: E402


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
        subprocess.run([sys.executable, "-m", "ray.scripts.scripts", "stop", "--force"], env=env,
                       capture_output=True, timeout=120)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _unit_workers(raylet: int) -> list[int]:
    """Worker processes of one node (children of its raylet) running one of our units."""
    found = subprocess.run(["pgrep", "-f", "ray::_run_unit"], capture_output=True, text=True).stdout.split()
    out = []
    for pid in found:
        try:
            if int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]) == raylet:
                out.append(int(pid))
        except (OSError, IndexError, ValueError):
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
    assert engine["units"] > 0  # its unit was retried on the head
    assert engine["modules"] and all("runtime_resources" in m and not m.startswith(str(REPO)) for m in engine["modules"])
    assert engine["pixels_from"] == ["memory"]  # no unit named a file of the driver's decode cache
    with open_store(store) as s:
        assert s.table_counts()["maps"] > 0
    _assert_same_store(store, local)
