"""The build-status file beside a store, as readers see it (the writer is
:class:`cxrxai.pipeline.background.StatusWriter`): where it lives, whether the build that wrote it
still runs, and how the app's background build is configured (``CXRXAI_BACKGROUND``).

It sits with the store because every reader of the store may need it: a page or a report that
finds evidence missing says whether a build is computing it now (see
:func:`cxrxai.summaries.fill_hint`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["BACKGROUND_ENV", "BACKGROUND_MODES", "background_mode", "log_path", "process_start",
           "read_status", "same_process", "status_path"]

#: The app's background build: ``1`` (default) starts it and stops it with the server, ``0`` never
#: starts it, ``keep`` starts it and lets it go on after the server exits.
BACKGROUND_ENV = "CXRXAI_BACKGROUND"
BACKGROUND_MODES = {"1": "on", "": "on", "on": "on", "0": "off", "off": "off", "keep": "keep"}


def background_mode(environ: Mapping[str, str] | None = None) -> str:
    """``"on"``, ``"off"`` or ``"keep"`` from ``CXRXAI_BACKGROUND`` (``os.environ`` when not given).
    An unknown value counts as ``"on"`` (the default) — as any value but ``0`` always has."""
    value = (os.environ if environ is None else environ).get(BACKGROUND_ENV, "1").strip().lower()
    return BACKGROUND_MODES.get(value, "on")


def status_path(store_path: str | Path) -> Path:
    p = Path(store_path)
    return p.with_name(p.name + ".build.json")


def log_path(store_path: str | Path) -> Path:
    p = Path(store_path)
    return p.with_name(p.name + ".build.log")


def process_start(pid: int | None) -> int | None:
    """When process ``pid`` started (clock ticks since boot, ``/proc/PID/stat`` field 22), so a pid
    the system reused for another process is not taken for the build; None where unknown."""
    try:
        with open(f"/proc/{int(pid)}/stat") as f:
            return int(f.read().rsplit(") ", 1)[1].split()[19])
    except (OSError, ValueError, IndexError, TypeError):
        return None


def same_process(pid: int | None, started: int | None = None) -> bool:
    """Process ``pid`` runs (not a zombie) and, when ``started`` is given, is the one that started then."""
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except (OSError, ValueError):
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is not running
        with open(f"/proc/{int(pid)}/stat") as f:
            if f.read().rsplit(") ", 1)[1][:1] == "Z":
                return False
    except OSError:
        return True
    return started is None or process_start(pid) in (None, started)


def read_status(store_path: str | Path) -> dict | None:
    """The last build's status, with ``running`` (its process is alive); None if none ran.

    A status left ``running`` by a process that is gone reads ``stopped`` (killed): the next
    start resumes from what was published."""
    try:
        status = json.loads(status_path(store_path).read_text())
    except (OSError, ValueError):
        return None
    alive = same_process(status.get("pid"), status.get("pid_start"))
    status["running"] = status.get("state") == "running" and alive
    if status.get("state") == "running" and not status["running"]:
        status["state"] = "stopped"
    return status
