"""Live recomputation for interactive use: one device worker, a queue, cancellable jobs.

The app submits "recompute this map" jobs; a single background thread runs them one at a time
on the device (so GPU memory and CPU cores are not oversubscribed), newest-first within a
viewer (a viewer's newer request supersedes its queued older ones), with progress, partial
results (the coarse occlusion grid before the fine one) and cancellation. Results are kept in
a small LRU cache keyed by everything that determines the map, so moving a slider back is
instant. No Streamlit here: pages poll :class:`Job` objects.

With ``LiveWorker(process=True)`` (the app's choice) the maps are computed in one spawned
child process: torch releases the GIL inside each operator and must win it back after, so in
a busy server process (page reruns, websockets) every forward waits on other threads. The
worker thread then only relays progress and partial results, and a job that knows its model's
weights file runs there; others run in the thread. The app submits :func:`case_job` s (store
path, image id, label, weights path): the child reads and preprocesses the image itself.
"""

from __future__ import annotations

import atexit
import collections
import json
import multiprocessing as mp
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import CxrxaiError
from .explain import Cancelled, explain, get
from .store import params_key

__all__ = ["ChildError", "Job", "JobState", "LiveWorker", "case_job", "explain_job"]


class JobState:
    QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"


@dataclass
class Job:
    """A unit of live work: ``run(progress, cancelled)`` yields ``(stage, result)`` pairs."""

    key: tuple
    owner: str
    run: Callable[[Callable[[int, int], None], Callable[[], bool]], Iterator[tuple[str, Any]]]
    spec: dict | None = None  # picklable description for the child process (see explain_job)
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

    #: GIL switch interval while a thread worker exists. Torch releases the GIL inside every operator
    #: and must win it back after each; with the default 5 ms a busy server thread (a page
    #: rerun, a websocket) makes it wait that long hundreds of times per forward. Measured on
    #: 2 cores against one spinning Python thread: occlusion 32/12 at 224 px took 141 s with
    #: 5 ms and 38 s with 0.2 ms (10.5 s alone).
    SWITCH_INTERVAL_S = 0.0002

    def __init__(self, *, cache_size: int = 64, process: bool = False):
        if not process:  # a process worker's thread only relays messages: leave the interpreter alone
            sys.setswitchinterval(min(sys.getswitchinterval(), self.SWITCH_INTERVAL_S))
        self._child = _Child() if process else None
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
        from .models.registry import best_device

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

        try:
            remote = self._child is not None and job.spec is not None
            stages = self._child.run(job.spec, progress, job._cancel.is_set) if remote else job.run(
                progress, job._cancel.is_set)
            for stage, value in stages:
                job.stage, job.partial = stage, value
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


def _stages(model, image, target: int, method: str, params: dict, progress, cancelled) -> Iterator[tuple[str, Any]]:
    """``(stage, partial)`` pairs: the method's progressive runner when the registry has one
    (occlusion: the coarse grid, then the fine one), else one final map."""
    meth = get(method)
    if meth.progressive is not None:
        own = {"output": model.spec.explained_output} if "output" in meth.defaults else {}
        full = {**meth.stored_defaults, **own, **meth.check(params)}
        yield from meth.progressive(model, image, target, full, progress, cancelled)
    else:
        yield "final", explain(model, image, target, method, **params)


def explain_job(model, image, target: int, method: str, params: dict, *, owner: str, case_key: tuple,
                weights_path: str | None = None) -> Job:
    """A job computing one map: occlusion yields its coarse grid (stride = patch) first.

    ``case_key`` identifies the image (e.g. store path and image id) for the result cache; the
    result of occlusion is an :class:`~cxrxai.explain.OcclusionGrid`, of the rest a 2-D array.
    With ``weights_path`` (the file ``model`` was loaded from) a process worker runs it in its
    child process.
    """
    key = (model.spec.name, *case_key, int(target), method, params_key(params))
    spec = None
    if weights_path is not None:
        spec = {"weights_path": str(weights_path), "model_spec": model.spec.to_json(),
                "image": image.detach().cpu().contiguous().numpy(),
                "target": int(target), "method": method, "params": dict(params)}
    return Job(key=key, owner=owner, run=lambda progress, cancelled: _stages(
        model, image, target, method, params, progress, cancelled), spec=spec)


def case_job(store_path, image_id: str, label: str, method: str, params: dict, *, model_spec: str,
             weights_path: str | None, owner: str) -> Job:
    """A job computing one map of a stored case from ids only: the image is read from the store,
    preprocessed and explained where the job runs — the worker's child process when the model has
    a weights file — so the server process never loads the model.

    ``model_spec`` is the store's JSON spec of the model; ``weights_path`` its weights (``None``:
    built-in weights, computed in the worker thread)."""
    name = json.loads(model_spec)["name"]
    key = (name, str(store_path), image_id, label, method, params_key(params))
    spec = {"store": str(store_path), "image_id": image_id, "label": label, "model_spec": model_spec,
            "weights_path": weights_path, "method": method, "params": dict(params)}
    return Job(key=key, owner=owner, run=lambda progress, cancelled: _case_stages(spec, progress, cancelled),
               spec=spec if weights_path is not None else None)


_MODELS: dict[tuple[str | None, str], Any] = {}  # models this process has loaded for case jobs


def _loaded(model_spec: str, weights_path: str | None):
    from .models.spec import ModelSpec
    from .models.stored import load_stored

    key = (weights_path, model_spec)
    if key not in _MODELS:
        _MODELS[key] = load_stored(ModelSpec.from_json(model_spec), weights_path)
    return _MODELS[key]


def _case_stages(spec: dict, progress, cancelled) -> Iterator[tuple[str, Any]]:
    from .data.cases import case_image
    from .models.spec import preprocess
    from .store import open_store

    model = _loaded(spec["model_spec"], spec["weights_path"])
    with open_store(spec["store"]) as store:
        row = store.image(spec["image_id"])
        pixels = case_image(row, store.datasets().set_index("dataset").loc[row["dataset"]].to_dict())
    x = preprocess(pixels, model.spec).to(model.device)
    yield from _stages(model, x, model.spec.label_index(spec["label"]), spec["method"], spec["params"], progress,
                       cancelled)


# --------------------------------------------------------------------------- child process
class ChildError(CxrxaiError):
    """A job failed in the worker's child process (the message names the original error)."""


class _Child:
    """One spawned process that computes maps for :class:`LiveWorker` (see the module docstring).

    Messages carry a job number, so output of an abandoned job is never taken for the next
    one's; cancelling sets a shared number the child polls between batches. A child that died
    (killed, out of memory) fails its job with a clear message and is restarted on the next.
    """

    def __init__(self):
        self._ctx = mp.get_context("spawn")  # never fork a process that has started torch threads
        self._proc = None
        self._conn = None
        self._cancel = self._ctx.Value("q", 0)
        self._seq = 0
        self._start()

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_child_main, args=(child, self._cancel), name="cxrxai-live-child",
                                       daemon=True)
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
                raise ChildError(f"the live worker's process ended (exit code {self._proc.exitcode}) while computing "
                                 "this map; it restarts with the next request") from None
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


def _child_main(conn, cancel) -> None:
    import torch

    from .models.spec import ModelSpec
    from .models.stored import load_stored

    models: dict[str, Any] = {}
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        jid, spec = msg
        send_progress = lambda done, total: conn.send((jid, "progress", done, total))  # noqa: E731
        try:
            if "store" in spec:  # a case job: read, preprocess and explain here
                for stage, value in _case_stages(spec, send_progress, lambda: cancel.value == jid):
                    conn.send((jid, "stage", stage, value))
                conn.send((jid, "done"))
                continue
            if spec["weights_path"] not in models:
                models[spec["weights_path"]] = load_stored(ModelSpec.from_json(spec["model_spec"]), spec["weights_path"])
            model = models[spec["weights_path"]]
            image = torch.from_numpy(spec["image"]).to(model.device).contiguous(memory_format=torch.channels_last)
            stages = _stages(model, image, spec["target"], spec["method"], spec["params"], send_progress,
                             lambda: cancel.value == jid)
            for stage, value in stages:
                conn.send((jid, "stage", stage, value))
            conn.send((jid, "done"))
        except Cancelled:
            conn.send((jid, "cancelled"))
        except Exception as err:  # noqa: BLE001 — reported to the waiting page, the child lives on
            conn.send((jid, "error", f"{type(err).__name__}: {err}"))
