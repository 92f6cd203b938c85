"""The live worker's child process: maps are computed here, away from the server's threads."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections.abc import Iterator
from typing import Any

from ..errors import CxrxaiError
from ..explain import Cancelled, Setting
from .jobs import _case_stages, _loaded, _stages, _warm

__all__ = ["ChildError"]


class ChildError(CxrxaiError):
    """A job failed in the worker's child process (the message names the original error)."""


class _Child:
    """One spawned process that computes maps for :class:`LiveWorker` (see the module docstring).

    Messages carry a job number, so output of an abandoned job is never taken for the next
    one's; cancelling sets a shared number the child polls between batches. A child that died
    (killed, out of memory) fails its job with a clear message and is restarted on the next.
    """

    def __init__(self, threads: int | None = None):
        self._threads = threads
        self._ctx = mp.get_context("spawn")  # never fork a process that has started torch threads
        self._proc = None
        self._conn = None
        self._cancel = self._ctx.Value("q", 0)
        self._seq = 0
        self._start()

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(
            target=_child_main,
            args=(child, self._cancel, self._threads),
            name="cxrxai-live-child",
            daemon=True,
        )
        self._proc.start()
        child.close()
        self._conn = parent

    def run(self, spec: dict, progress, cancelled) -> Iterator[tuple[str, Any]]:
        if not self._proc.is_alive():
            self._start()
        self._seq += 1
        jid = self._seq
        self._conn.send((jid, spec))
        while True:
            if cancelled():
                self._cancel.value = jid
            try:
                if not self._conn.poll(0.05):
                    if not self._proc.is_alive():
                        raise EOFError
                    continue
                msg_jid, kind, *rest = self._conn.recv()
            except (EOFError, OSError):
                self._proc.join(1.0)
                raise ChildError(
                    f"the live worker's process ended (exit code {self._proc.exitcode}) while computing "
                    "this map; it restarts with the next request"
                ) from None
            if msg_jid != jid:
                continue  # the tail of an abandoned job
            if kind == "progress":
                progress(*rest)
            elif kind == "stage":
                yield rest[0], rest[1]
            elif kind == "done":
                return
            elif kind == "cancelled":
                raise Cancelled("cancelled")
            else:
                raise ChildError(rest[0])

    def close(self, timeout: float = 10.0) -> None:
        if self._proc is None:
            return
        self._cancel.value = self._seq
        try:
            self._conn.send(None)
        except (OSError, ValueError):
            pass
        self._proc.join(timeout)
        if self._proc.is_alive():
            self._proc.terminate()
        self._proc = None


#: Seconds a live job waits after each progress report (default 0): a presenter can slow a map
#: down to show its progress and Cancel, and the browser tests use it so that a click on Cancel
#: always lands while the map still computes.
PACE_ENV = "CXRXAI_LIVE_PACE"


def _paced(send):
    pace = float(os.environ.get(PACE_ENV) or 0)
    if pace <= 0:
        return send

    def paced(done, total):
        send(done, total)
        time.sleep(pace)

    return paced


def _child_main(conn, cancel, threads: int | None = None) -> None:
    import torch

    if threads:  # leave the server process a core: its pages must answer while a map computes
        torch.set_num_threads(threads)

    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        jid, spec = msg
        send_progress = _paced(lambda done, total: conn.send((jid, "progress", done, total)))
        cancelled = lambda: cancel.value == jid  # noqa: E731
        try:
            if spec.get("warm"):
                stages = _warm(spec)
            elif "store" in spec:  # a case job: read, preprocess and explain here
                stages = _case_stages(spec, send_progress, cancelled)
            else:  # an image sent by explain_job
                model = _loaded(spec["model_spec"], spec["weights_path"])  # one model cache per process
                image = (
                    torch.from_numpy(spec["image"])
                    .to(model.device)
                    .contiguous(memory_format=torch.channels_last)
                )
                setting = Setting.stored(spec["method"], spec["params"])
                stages = _stages(model, image, spec["target"], setting, spec.get("runtime", {}),
                                 send_progress, cancelled)
            for stage, value in stages:
                conn.send((jid, "stage", stage, value))
            conn.send((jid, "done"))
        except Cancelled:
            conn.send((jid, "cancelled"))
        except Exception as err:  # noqa: BLE001 — reported to the waiting page, the child lives on
            conn.send((jid, "error", f"{type(err).__name__}: {err}"))
