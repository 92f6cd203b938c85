"""Live recomputation for interactive use: one device worker, a queue, cancellable jobs.

The app submits "recompute this map" jobs; a single background thread runs them one at a time
on the device (so GPU memory and CPU cores are not oversubscribed), newest-first within a
viewer (a viewer's newer request supersedes its queued older ones), with progress, partial
results (the coarse occlusion grid before the fine one) and cancellation. Results are kept in
a small LRU cache keyed by everything that determines the map, so moving a slider back is
instant. No Streamlit here: pages poll :class:`Job` objects.
"""

from __future__ import annotations

import atexit
import collections
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .explain import explain, occlusion_progressive
from .explain._common import baseline_tensor
from .store import params_key

__all__ = ["Job", "JobState", "LiveWorker", "explain_job"]


class JobState:
    QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"


@dataclass
class Job:
    """A unit of live work: ``run(progress, cancelled)`` yields ``(stage, result)`` pairs."""

    key: tuple
    owner: str
    run: Callable[[Callable[[int, int], None], Callable[[], bool]], Iterator[tuple[str, Any]]]
    state: str = JobState.QUEUED
    progress: tuple[int, int] = (0, 0)
    stage: str = ""
    partial: Any = None
    result: Any = None
    error: str | None = None
    seconds: float | None = None
    submitted: float = field(default_factory=time.monotonic)
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    _finished: threading.Event = field(default_factory=threading.Event, repr=False)

    def cancel(self) -> None:
        self._cancel.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job has finished (or ``timeout`` seconds); True if it finished."""
        return self._finished.wait(timeout)

    @property
    def finished(self) -> bool:
        return self.state in (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


class LiveWorker:
    """One thread, one queue, an LRU of finished results (see the module docstring)."""

    #: GIL switch interval while a worker exists. Torch releases the GIL inside every operator
    #: and must win it back after each; with the default 5 ms a busy server thread (a page
    #: rerun, a websocket) makes it wait that long hundreds of times per forward. Measured on
    #: 2 cores against one spinning Python thread: occlusion 32/12 at 224 px took 141 s with
    #: 5 ms and 38 s with 0.2 ms (10.5 s alone).
    SWITCH_INTERVAL_S = 0.0002

    def __init__(self, *, cache_size: int = 64):
        sys.setswitchinterval(min(sys.getswitchinterval(), self.SWITCH_INTERVAL_S))
        self._queue: collections.deque[Job] = collections.deque()
        self._cache: collections.OrderedDict[tuple, Job] = collections.OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Condition()
        self._current: Job | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="cxrxai-live", daemon=True)
        self._thread.start()
        # A daemon thread still inside torch when the interpreter exits aborts the process
        # ("terminate called without an active exception"): stop cleanly first.
        atexit.register(self.close)

    def close(self, timeout: float = 10.0) -> None:
        """Cancel queued and running jobs and stop the thread (waits up to ``timeout`` s)."""
        with self._lock:
            self._closed = True
            for job in [*self._queue, *([self._current] if self._current else [])]:
                job.cancel()
            self._lock.notify_all()
        self._thread.join(timeout)

    def submit(self, job: Job) -> Job:
        """Queue ``job`` unless an identical one is cached, queued or running; the owner's older
        jobs, queued or running, are cancelled (they would only delay what the viewer now
        wants: a presenter dragging the stride slider gets the last setting, not every one)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("this LiveWorker is closed; create a new one")
            if job.key in self._cache:
                self._cache.move_to_end(job.key)
                return self._cache[job.key]
            for queued in self._queue:
                if queued.key == job.key:
                    return queued
            current = self._current
            if current is not None and current.key == job.key and not current._cancel.is_set():
                return current
            if current is not None and current.owner == job.owner:
                current.cancel()
            for queued in list(self._queue):
                if queued.owner == job.owner:
                    queued.cancel()
                    queued.state = JobState.CANCELLED
                    queued._finished.set()
                    self._queue.remove(queued)
            self._queue.append(job)
            self._lock.notify()
            return job

    def cached(self, key: tuple) -> Job | None:
        with self._lock:
            return self._cache.get(key)

    def queue_length(self) -> int:
        with self._lock:
            return len(self._queue)

    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._lock.wait()
                if self._closed:
                    for job in self._queue:
                        job.state = JobState.CANCELLED
                        job._finished.set()
                    self._queue.clear()
                    return
                job = self._current = self._queue.popleft()
            self._execute(job)
            with self._lock:
                self._current = None

    def _execute(self, job: Job) -> None:
        if job._cancel.is_set():
            job.state = JobState.CANCELLED
            job._finished.set()
            return
        job.state = JobState.RUNNING
        t0 = time.monotonic()

        def progress(done: int, total: int) -> None:
            job.progress = (done, total)

        try:
            for stage, value in job.run(progress, job._cancel.is_set):
                job.stage, job.partial = stage, value
            job.result = job.partial
            job.state = JobState.DONE
            with self._lock:
                self._cache[job.key] = job
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        except Exception as err:  # noqa: BLE001 — the worker must survive any job's failure and report it
            job.state = JobState.CANCELLED if job._cancel.is_set() else JobState.FAILED
            job.error = f"{type(err).__name__}: {err}"
        finally:
            job.seconds = time.monotonic() - t0
            job._finished.set()


def explain_job(model, image, target: int, method: str, params: dict, *, owner: str, case_key: tuple) -> Job:
    """A job computing one map: occlusion yields its coarse grid (stride = patch) first.

    ``case_key`` identifies the image (e.g. store path and image id) for the result cache; the
    result of occlusion is an :class:`~cxrxai.explain.OcclusionGrid`, of the rest a 2-D array.
    """
    key = (model.spec.name, *case_key, int(target), method, params_key(params))

    def run(progress, cancelled):
        if method == "occlusion":
            p = {"patch": 32, "stride": 16, "baseline": "black", **params}
            base = baseline_tensor(p["baseline"], image, model.spec)
            yield from occlusion_progressive(model.module, image, target, base, patch=p["patch"], stride=p["stride"],
                                             output=p.get("output", model.spec.explained_output), progress=progress,
                                             cancel=cancelled, baseline_name=str(p["baseline"]))
        else:
            yield "final", explain(model, image, target, method, **params)

    return Job(key=key, owner=owner, run=run)
