"""The demo's background build: the costly evidence computed while the app already serves.

``make app`` builds the quick phase (about two minutes) and starts the app; the app calls
:func:`ensure_started`, which launches ``python -m cxrxai demo --phase evidence`` as a separate
process unless the store's evidence is complete or a build is already running. The build
publishes as it goes (the store lets a writer work beside readers), so every page shows new
results at its next rerun; it writes its progress to a small JSON status file next to the store,
which :func:`read_status` reads for the pages (stage, done/total, rate, ETA, the plan of steps).
The build ends with the server that started it (it watches its parent pid; ``CXRXAI_BACKGROUND=keep``
lets it go on) or at :func:`stop` (the sidebar's Stop). Stopping or killing the app or the build
loses nothing already published: the next start resumes where it stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ..store.status import (
    BACKGROUND_ENV,
    background_mode,
    log_path,
    process_start,
    read_status,
    same_process,
    status_path,
)

__all__ = ["BACKGROUND_ENV", "PARENT_ENV", "BuildStopped", "StatusWriter", "background_mode",
           "ensure_started", "log_path", "read_status", "status_path", "stop", "stoppable"]

#: Set by :func:`ensure_started` to the server's pid: the build stops when that process is gone.
PARENT_ENV = "CXRXAI_BUILD_PARENT"


class BuildStopped(BaseException):
    """The build was asked to stop (SIGTERM: the sidebar's Stop) or the server that started it exited.

    A ``BaseException`` like ``KeyboardInterrupt``: no stage's error handling swallows it; the
    store's writer drops its unpublished staging copy, so the store stays as last published."""


class StatusWriter:
    """A build's progress callback (``progress(task, done, total)``) that also keeps the status
    file current: the task, its counts, its rate and the ETA of the task (from its own pace)."""

    def __init__(self, path: str | Path, *, phase: str, every_s: float = 2.0, clock=time.time):
        self.path, self.phase, self.every_s, self.clock = Path(path), phase, every_s, clock
        self.started = clock()
        self.task: str | None = None
        self.task_started = self.started
        self.last_write = 0.0
        self.stop_reason: str | None = None  # set by :func:`stoppable`: the next report raises BuildStopped
        self.state = {"pid": os.getpid(), "pid_start": process_start(os.getpid()), "phase": phase,
                      "started_at": self.started, "state": "running"}
        self._write(force=True)

    def __call__(self, task: str, done: int, total: int) -> None:
        self._stop_here()
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
        name, model, and once the whole plan: ``[round, round name, step name, model]`` per step), kept
        in the status next to the task's own progress."""
        self._stop_here()
        self.state.update(
            round=where.get("round"),
            rounds=where.get("rounds"),
            round_name=where.get("round_name"),
            stage_index=where.get("stage"),
            stages=where.get("stages"),
            model=where.get("model"),
            step=where.get("name"),
        )
        if where.get("plan") is not None:
            self.state["plan"] = where["plan"]
        self._write(force=True)

    def finish(self, error: str | None = None, *, stopped: str | None = None) -> None:
        """The build's end: ``finished``, ``failed`` (``error``) or ``stopped`` (why: the Stop button...)."""
        state = "failed" if error else "stopped" if stopped else "finished"
        self.state.update(state=state, error=error, stopped_by=stopped, eta_s=None, ended_at=self.clock())
        self._write(force=True)

    def _stop_here(self) -> None:
        if self.stop_reason is not None:
            raise BuildStopped(self.stop_reason)

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


# --------------------------------------------------------------------------- stopping
@contextmanager
def stoppable(status: StatusWriter | None, *, environ: Mapping[str, str] | None = None,
              poll_s: float = 0.5, grace_s: float = 60.0) -> Iterator[None]:
    """Run a build that stops cleanly: SIGTERM (:func:`stop`, the sidebar's Stop) asks it to, and so
    does the exit of the server that started it (:data:`PARENT_ENV`, set by :func:`ensure_started`;
    a ``kill -9`` of the server too: the build watches its parent pid). The build stops at its next
    progress report or step (``status`` raises :class:`BuildStopped` there, never inside a store
    query) and ``status`` records ``stopped`` and why; one that has not stopped ``grace_s`` after
    being asked exits hard (its store stays as last published). Without ``status``, or outside the
    main thread (a signal handler cannot be installed there), the block runs as it is."""
    if status is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    timers: list[threading.Timer] = []

    def request(reason: str) -> None:
        if status.stop_reason is None:
            status.stop_reason = reason
            timers.append(threading.Timer(grace_s, _forced_exit, args=(status, reason, grace_s)))
            timers[-1].daemon = True
            timers[-1].start()

    previous = signal.signal(signal.SIGTERM, lambda signum, frame: request(
        "asked to stop (SIGTERM, e.g. the sidebar's Stop)"))
    parent = (os.environ if environ is None else environ).get(PARENT_ENV)
    if parent:
        threading.Thread(target=_follow_parent, args=(int(parent), request, poll_s), daemon=True,
                         name="cxrxai-parent-watch").start()
    try:
        yield
    except BuildStopped as err:
        status.finish(stopped=str(err))
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        for timer in timers:
            timer.cancel()


def _forced_exit(status: StatusWriter, reason: str, grace_s: float) -> None:
    """End a build that was asked to stop and did not reach a step where it could: its status says
    ``stopped`` and why first (else it would read ``running`` with no process behind it)."""
    try:
        status.finish(stopped=f"{reason}; it reached no step where it could stop within {grace_s:g} s and "
                              "was ended there (its store stays as last published)")
    finally:
        os._exit(3)


def _follow_parent(parent: int, request, poll_s: float) -> None:
    """Ask this process to stop once its parent (the server) is gone (it is re-parented)."""
    while os.getppid() == parent:
        time.sleep(poll_s)
    request(f"the app's server (pid {parent}) exited ({BACKGROUND_ENV}=keep lets the build go on)")


def stop(store_path: str | Path, *, wait_s: float = 10.0) -> dict | None:
    """Stop the build writing ``store_path`` (SIGTERM; it stops cleanly at once, see
    :func:`stoppable`) and wait up to ``wait_s`` for it to end. Returns the status then; a later
    :func:`ensure_started` resumes where it stopped."""
    status = read_status(store_path)
    if status is None or not status["running"]:
        return status
    try:
        os.kill(int(status["pid"]), signal.SIGTERM)
    except OSError:
        return read_status(store_path)
    deadline = time.monotonic() + wait_s
    while same_process(status["pid"], status.get("pid_start")) and time.monotonic() < deadline:
        time.sleep(0.1)
    return read_status(store_path)


def ensure_started(store_path: str | Path, *, complete: bool, command: list[str] | None = None,
                   environ: Mapping[str, str] | None = None) -> dict | None:
    """Start the evidence build for ``store_path`` unless ``complete`` or one is running.

    Returns the status (a fresh one when started now). ``command`` replaces the build command
    (tests); its output goes to :func:`log_path`. The build stops when this process exits
    (:func:`stoppable`) unless ``CXRXAI_BACKGROUND=keep`` (in ``environ``, default ``os.environ``).
    """
    status = read_status(store_path)
    if complete or (status is not None and status["running"]):
        return status
    command = command or [
        sys.executable,
        "-m",
        "cxrxai",
        "demo",
        "--phase",
        "evidence",
        "--store",
        str(store_path),
        "--status",
        str(status_path(store_path)),
    ]
    env = dict(os.environ if environ is None else environ)
    env.pop(PARENT_ENV, None)
    if background_mode(env) != "keep":
        env[PARENT_ENV] = str(os.getpid())
    with open(log_path(store_path), "ab") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env,
                                # the repository: ``-m cxrxai`` resolves
                                cwd=Path(__file__).resolve().parents[2],
                                start_new_session=True)  # no Ctrl-C of the server's terminal mid-publish
    status = {"pid": proc.pid, "pid_start": process_start(proc.pid), "phase": "evidence", "state": "running",
              "running": True, "started_at": time.time(), "stage": "starting", "done": 0, "total": 0}
    _write_json(status_path(store_path), status)
    return status
