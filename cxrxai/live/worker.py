"""The live worker: one queue, one device, newest-first per viewer, an LRU of finished maps."""

from __future__ import annotations

import atexit
import collections
import os
import sys
import threading
import time

from .child import ChildError, _Child
from .jobs import PARTIAL, Job, JobState

__all__ = ["LiveWorker"]


class LiveWorker:
    """One thread, one queue, an LRU of finished results (see the module docstring)."""

    #: GIL switch interval while a thread worker exists. Torch releases the GIL inside every operator
    #: and must win it back after each; with the default 5 ms a busy server thread (a page
    #: rerun, a websocket) makes it wait that long hundreds of times per forward. Measured on
    #: 2 cores against one spinning Python thread: occlusion 32/12 at 224 px took 141 s with
    #: 5 ms and 38 s with 0.2 ms (10.5 s alone).
    SWITCH_INTERVAL_S = 0.0002

    def __init__(self, *, cache_size: int = 64, process: bool = False, threads: int | None = None):
        """``process``: compute in a spawned child with ``threads`` torch threads (default
        ``CXRXAI_LIVE_THREADS``, else all cores but one, so the server keeps one for its pages)."""
        if not process:  # a process worker's thread only relays messages: leave the interpreter alone
            sys.setswitchinterval(min(sys.getswitchinterval(), self.SWITCH_INTERVAL_S))
        if process and threads is None:
            threads = int(os.environ.get("CXRXAI_LIVE_THREADS", 0)) or max(1, (os.cpu_count() or 2) - 1)
        self.threads = threads
        self._child = _Child(threads) if process else None
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

    @staticmethod
    def device_name() -> str:
        """The device maps are computed on ("CPU", "CUDA", "MPS"): the one every loaded model picks."""
        from ..models.registry import best_device

        return best_device().type.upper()

    def close(self, timeout: float = 10.0) -> None:
        """Cancel queued and running jobs and stop the thread (waits up to ``timeout`` s)."""
        with self._lock:
            self._closed = True
            for job in [*self._queue, *([self._current] if self._current else [])]:
                job.cancel()
            self._lock.notify_all()
        self._thread.join(timeout)
        if self._child is not None:
            self._child.close(timeout)

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
            job.counts = (job.stage, done, total)

        try:
            remote = self._child is not None and job.spec is not None
            stages = self._child.run(job.spec, progress, job._cancel.is_set) if remote else job.run(
                progress, job._cancel.is_set)
            for stage, value in stages:
                job.partial = value
                if stage != PARTIAL:  # a pass has ended; a partial map belongs to the pass running
                    job.stage = stage
                    job.counts = (stage, 0, 0)  # the next pass has counted nothing yet
            job.result = job.partial
            job.state = JobState.DONE
            with self._lock:
                self._cache[job.key] = job
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        except Exception as err:  # noqa: BLE001 — the worker must survive any job's failure and report it
            job.state = JobState.CANCELLED if job._cancel.is_set() else JobState.FAILED
            job.error = str(err) if isinstance(err, ChildError) else f"{type(err).__name__}: {err}"
        finally:
            job.seconds = time.monotonic() - t0
            job._finished.set()
