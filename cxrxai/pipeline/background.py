"""The demo's background build: the costly evidence computed while the app already serves.

``make app`` builds the quick phase (about two minutes) and starts the app; the app calls
:func:`ensure_started`, which launches ``python -m cxrxai demo --phase evidence`` as a detached
process unless the store's evidence is complete or a build is already running. The build
publishes as it goes (the store lets a writer work beside readers), so every page shows new
results at its next rerun; it writes its progress to a small JSON status file next to the store,
which :func:`read_status` reads for the pages (stage, done/total, rate, ETA). Killing the app or
the build loses nothing already published: the next start resumes where it stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["StatusWriter", "ensure_started", "log_path", "read_status", "status_path"]


def status_path(store_path: str | Path) -> Path:
    p = Path(store_path)
    return p.with_name(p.name + ".build.json")


def log_path(store_path: str | Path) -> Path:
    p = Path(store_path)
    return p.with_name(p.name + ".build.log")


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except (OSError, ValueError):
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is not running
        with open(f"/proc/{int(pid)}/stat") as f:
            return f.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return True


class StatusWriter:
    """A build's progress callback (``progress(task, done, total)``) that also keeps the status
    file current: the task, its counts, its rate and the ETA of the task (from its own pace)."""

    def __init__(self, path: str | Path, *, phase: str, every_s: float = 2.0, clock=time.time):
        self.path, self.phase, self.every_s, self.clock = Path(path), phase, every_s, clock
        self.started = clock()
        self.task: str | None = None
        self.task_started = self.started
        self.last_write = 0.0
        self.state = {"pid": os.getpid(), "phase": phase, "started_at": self.started, "state": "running"}
        self._write(force=True)

    def __call__(self, task: str, done: int, total: int) -> None:
        now = self.clock()
        if task != self.task:
            self.task, self.task_started = task, now
        elapsed = now - self.task_started
        rate = done / elapsed if elapsed > 0 and done else None
        eta = (total - done) / rate if rate and total >= done else None
        self.state.update(stage=task, done=int(done), total=int(total), per_s=rate, eta_s=eta)
        self._write(force=done >= total)

    def stage(self, where: dict) -> None:
        """Where the build is (``build_demo``'s ``on_stage``: round, rounds, round_name, stage, stages,
        name, model): kept in the status next to the task's own progress."""
        self.state.update(round=where.get("round"), rounds=where.get("rounds"), round_name=where.get("round_name"),
                          stage_index=where.get("stage"), stages=where.get("stages"), model=where.get("model"),
                          step=where.get("name"))
        self._write(force=True)

    def finish(self, error: str | None = None) -> None:
        self.state.update(state="failed" if error else "finished", error=error, eta_s=None)
        self._write(force=True)

    def _write(self, *, force: bool = False) -> None:
        now = self.clock()
        if not force and now - self.last_write < self.every_s:
            return
        self.last_write = now
        self.state["updated_at"] = now
        _write_json(self.path, self.state)


def _write_json(path: Path, state: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, path)  # readers never see half a file


def read_status(store_path: str | Path) -> dict | None:
    """The background build's last status, with ``running`` (its process is alive); None if none ran."""
    path = status_path(store_path)
    try:
        status = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    status["running"] = status.get("state") == "running" and _alive(status.get("pid"))
    if status.get("state") == "running" and not status["running"]:
        status["state"] = "stopped"  # killed: the next start resumes from what was published
    return status


def ensure_started(store_path: str | Path, *, complete: bool, command: list[str] | None = None) -> dict | None:
    """Start the evidence build for ``store_path`` unless ``complete`` or one is running.

    Returns the status (a fresh one when started now). ``command`` replaces the build command
    (tests); its output goes to :func:`log_path`.
    """
    status = read_status(store_path)
    if complete or (status is not None and status["running"]):
        return status
    command = command or [sys.executable, "-m", "cxrxai", "demo", "--phase", "evidence", "--store", str(store_path),
                          "--status", str(status_path(store_path))]
    with open(log_path(store_path), "ab") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=Path(__file__).resolve().parents[2],  # the repository: ``-m cxrxai`` resolves
                                start_new_session=True)  # outlives a server restart, never killed with it
    status = {"pid": proc.pid, "phase": "evidence", "state": "running", "running": True, "started_at": time.time(),
              "stage": "starting", "done": 0, "total": 0}
    _write_json(status_path(store_path), status)
    return status
