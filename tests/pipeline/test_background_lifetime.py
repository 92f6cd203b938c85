"""The background build's lifetime: it ends with the server that started it (even a ``kill -9`` of it)
unless ``CXRXAI_BACKGROUND=keep``, and the sidebar's Stop ends it cleanly (the store stays as last
published, unlocked, and a later start resumes). The build here is a fake one: a short plan of
steps that each publish one value to a real store, run under :func:`background.stoppable` exactly
as ``python -m cxrxai demo`` runs ``build_demo``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cxrxai.pipeline import background
from cxrxai.store import open_store, write_store
from cxrxai.store.status import same_process

#: Background builds and their servers as processes (not in `make test-quick`).
pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[2]

FAKE_BUILD = """
import sys, time
from cxrxai.pipeline import background
from cxrxai.store import write_store

store, status_file = sys.argv[1], sys.argv[2]
status = background.StatusWriter(status_file, phase="evidence", every_s=0.0)
plan = [[1, "", f"step {k}", "fake"] for k in range(1, 601)]
try:
    with background.stoppable(status, poll_s=0.05), write_store(store) as w:
        for k, entry in enumerate(plan, start=1):
            status.stage({"round": 1, "rounds": 1, "stage": k, "stages": len(plan), "name": entry[2],
                          "model": "fake", "plan": plan if k == 1 else None})
            w.set_meta("fake_step", str(k))
            w.publish()
            time.sleep(0.1)
except background.BuildStopped:
    sys.exit(3)
"""

SERVER = """
import sys, time
from cxrxai.pipeline import background

command = [sys.executable, sys.argv[2], sys.argv[1], str(background.status_path(sys.argv[1]))]
started = background.ensure_started(sys.argv[1], complete=False, command=command)
print(started["pid"], flush=True)
time.sleep(120)
"""


def _script(tmp_path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _wait(predicate, timeout_s: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _stepping(store) -> bool:
    status = background.read_status(store)
    return bool(status and status["running"] and (status.get("stage_index") or 0) >= 2)  # its plan has begun


def _server(tmp_path, store, mode: str) -> tuple[subprocess.Popen, int]:
    """A stand-in for the app's server: starts the build as the app does, then idles."""
    env = {**os.environ, "CXRXAI_BACKGROUND": mode, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen([sys.executable, str(_script(tmp_path, "server.py", SERVER)), str(store),
                               str(_script(tmp_path, "fake_build.py", FAKE_BUILD))],
                              stdout=subprocess.PIPE, cwd=ROOT, env=env, text=True)
    child = int(server.stdout.readline())
    assert _wait(lambda: _stepping(store)), background.read_status(store)
    return server, child


def test_the_build_ends_when_its_server_is_killed(tmp_path):
    store = tmp_path / "demo.duckdb"
    server, child = _server(tmp_path, store, "1")
    server.kill()  # kill -9: no handler of the server runs
    server.wait()
    # it stops at its next step (0.3-0.5 s here) and exits (an interpreter that imported torch and
    # cxrxai.pipeline takes ~5 s to tear down on this loaded 2-core machine)
    assert _wait(lambda: background.read_status(store).get("stopped_by"), timeout_s=3.0), "it went on"
    assert _wait(lambda: not same_process(child), timeout_s=20.0), "the build's process outlived its server"
    status = background.read_status(store)
    assert status["state"] == "stopped" and f"server (pid {server.pid}) exited" in status["stopped_by"]
    with open_store(store) as s:
        assert int(s.meta("fake_step")) >= 2  # what it published stays
    with write_store(store) as w:  # and nothing holds the store: the next start resumes
        w.set_meta("resumed", "1")


def test_keep_lets_the_build_go_on_after_its_server(tmp_path):
    store = tmp_path / "demo.duckdb"
    server, child = _server(tmp_path, store, "keep")
    try:
        server.kill()
        server.wait()
        time.sleep(1.0)  # twenty times the fake build's poll of its parent
        assert same_process(child) and background.read_status(store)["running"]
    finally:
        background.stop(store)
    assert not same_process(child)


def test_stop_ends_the_build_cleanly_and_a_later_start_resumes(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the fake build is a script, not ``-m cxrxai``
    store = tmp_path / "demo.duckdb"
    command = [sys.executable, str(_script(tmp_path, "fake_build.py", FAKE_BUILD)), str(store),
               str(background.status_path(store))]
    first = background.ensure_started(store, complete=False, command=command)
    assert _wait(lambda: _stepping(store)), background.read_status(store)
    status = background.stop(store)
    assert status["state"] == "stopped" and not status["running"] and "asked to stop" in status["stopped_by"]
    assert not same_process(first["pid"])
    assert not store.with_name(store.name + ".staging").exists()  # the unpublished copy is dropped
    with open_store(store) as s:
        stopped_at = int(s.meta("fake_step"))
    assert stopped_at >= 2
    again = background.ensure_started(store, complete=False, command=command)  # Resume
    try:
        assert again["pid"] != first["pid"] and _wait(lambda: _stepping(store))
    finally:
        background.stop(store)


@pytest.mark.parametrize("mode, parent", [("1", True), ("keep", False), ("0", True)])
def test_the_build_is_told_its_parent_unless_keep(tmp_path, mode, parent):
    store = tmp_path / "demo.duckdb"
    env_file = tmp_path / "env.txt"
    command = [sys.executable, "-c", f"import os; open({str(env_file)!r}, 'w').write("
                                     f"os.environ.get({background.PARENT_ENV!r}, ''))"]
    background.ensure_started(store, complete=False, command=command, environ={"CXRXAI_BACKGROUND": mode})
    assert _wait(lambda: env_file.exists() and background.read_status(store)["state"] == "stopped")
    assert env_file.read_text() == (str(os.getpid()) if parent else "")


STUCK_BUILD = """
import sys, time
from cxrxai.pipeline import background

status = background.StatusWriter(sys.argv[1], phase="evidence", every_s=0.0)
with background.stoppable(status, poll_s=0.05, grace_s=0.5):
    status.stage({"round": 1, "rounds": 1, "stage": 1, "stages": 1, "name": "long", "model": "fake", "plan": None})
    print("started", flush=True)
    time.sleep(60)  # one long step: never a point where the build can stop cleanly
"""


def test_a_build_ended_after_its_grace_says_it_was_stopped_and_why(tmp_path):
    status_file = tmp_path / "s.duckdb.build.json"
    build = subprocess.Popen([sys.executable, str(_script(tmp_path, "stuck.py", STUCK_BUILD)), str(status_file)],
                             stdout=subprocess.PIPE, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True)
    assert build.stdout.readline().strip() == "started"
    build.terminate()  # SIGTERM, as the sidebar's Stop sends
    assert build.wait(timeout=30) == 3
    status = background.read_status(tmp_path / "s.duckdb")
    assert status["state"] == "stopped" and not status["running"]
    assert "SIGTERM" in status["stopped_by"] and "within 0.5 s" in status["stopped_by"]
