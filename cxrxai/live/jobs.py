"""Live jobs: what a map request is, and the generators that compute it (anywhere: thread or child)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..explain import Cancelled, Setting, explain
from ..explain.params import PARTIAL
from ..models.spec import ModelSpec
from .windows import known_windows

__all__ = ["PARTIAL", "Job", "JobState", "case_job", "explain_job", "pass_label", "warm_job"]


class JobState:
    QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"


@dataclass
class Job:
    """A unit of live work: ``run(progress, cancelled)`` yields ``(stage, result)`` pairs; a
    :data:`PARTIAL` stage is a partial map of the pass running (it updates ``partial`` only)."""

    key: tuple
    owner: str
    run: Callable[[Callable[[int, int], None], Callable[[], bool]], Iterator[tuple[str, Any]]]
    spec: dict | None = None  # picklable description for the child process (see explain_job)
    state: str = JobState.QUEUED
    progress: tuple[int, int] = (0, 0)
    stage: str = ""
    #: ``(stage finished before this pass, done, total)`` of the pass running now, in one assignment:
    #: ``progress`` alone still holds the last pass's counts for a moment after that pass yields.
    counts: tuple[str, int, int] = ("", 0, 0)
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


def pass_label(counts: tuple[str, int, int], *, two_pass: bool, unit: str = "windows") -> str:
    """What a progressive job's counts are counting, from :attr:`Job.counts`: the coarse pass
    (stride = patch) until its grid has been yielded, the fine pass after; one pass is its ``unit``.

    >>> pass_label(("", 49, 49), two_pass=True), pass_label(("coarse", 0, 0), two_pass=True)
    ('coarse pass (stride = patch) · 49/49', 'fine pass · starting')
    """
    finished, done, total = counts
    stage = ("fine pass" if finished == "coarse" else "coarse pass (stride = patch)") if two_pass else unit
    return f"{stage} · {done}/{total}" if total else f"{stage} · starting"


def _stages(model, image, target: int, setting: Setting, runtime: dict, progress, cancelled
            ) -> Iterator[tuple[str, Any]]:
    """``(stage, partial)`` pairs: the method's progressive runner when the registry has one
    (occlusion: the coarse grid, then the fine one, with ``("partial", map)`` while a pass
    computes), else one final map."""
    meth, kwargs = setting.method_, setting.kwargs(**runtime)
    if meth.progressive is not None:
        if "known" in kwargs:  # windows computed before at another setting are reused (see .windows)
            kwargs["known"] = known_windows(model.module, image, target, dict(setting.params))
        yield from meth.progressive(model, image, target, kwargs, progress, cancelled)
    else:
        # one forward checks the target against the model's outputs, then the method's own
        total = 1 + (meth.passes(kwargs) if meth.passes is not None else 1)
        with _watched(model.module, progress, cancelled, total):
            yield "final", explain(model, image, target, setting.method, **kwargs)


@contextmanager
def _watched(module, progress, cancelled, total: int) -> Iterator[None]:
    """Count the model's forward passes as progress and stop at the next one once cancelled."""
    done = [0]

    def before_forward(_module, _inputs):
        if cancelled():
            raise Cancelled("cancelled")
        done[0] += 1
        progress(done[0], max(total, done[0]))

    handle = module.register_forward_pre_hook(before_forward)
    try:
        yield
    finally:
        handle.remove()


def explain_job(model, image, target: int, method: str, params: dict, *, owner: str, case_key: tuple,
                weights_path: str | None = None) -> Job:
    """A job computing one map: occlusion yields its coarse grid (stride = patch) first.

    ``case_key`` identifies the image (e.g. store path and image id) for the result cache; the
    result of occlusion is an :class:`~cxrxai.explain.OcclusionGrid`, of the rest a 2-D array.
    With ``weights_path`` (the file ``model`` was loaded from) a process worker runs it in its
    child process. The result cache keys on the resolved setting: ``params`` given or left at
    their defaults are one job; runtime parameters (batch sizes, engine) only change how it runs.
    """
    setting, runtime = Setting.split(method, params, spec=model.spec)
    key = (model.spec.name, *case_key, int(target), method, setting.key)
    spec = None
    if weights_path is not None:
        spec = {"weights_path": str(weights_path), "model_spec": model.spec.to_json(),
                "image": image.detach().cpu().contiguous().numpy(),
                "target": int(target), "method": method, "params": dict(setting.params),
                "runtime": runtime}
    return Job(key=key, owner=owner, run=lambda progress, cancelled: _stages(
        model, image, target, setting, runtime, progress, cancelled), spec=spec)


def case_job(store_path, image_id: str, label: str, method: str, params: dict, *, model_spec: str,
             weights_path: str | None, owner: str) -> Job:
    """A job computing one map of a stored case from ids only: the image is read from the store,
    preprocessed and explained where the job runs — the worker's child process when the model has
    a weights file — so the server process never loads the model.

    ``model_spec`` is the store's JSON spec of the model; ``weights_path`` its weights (``None``:
    built-in weights, computed in the worker thread)."""
    model = ModelSpec.from_json(model_spec)
    setting = Setting.of(method, params, spec=model)
    key = (model.name, str(store_path), image_id, label, method, setting.key)
    spec = {"store": str(store_path), "image_id": image_id, "label": label, "model_spec": model_spec,
            "weights_path": weights_path, "method": method, "params": dict(setting.params)}
    return Job(key=key, owner=owner, run=lambda progress, cancelled: _case_stages(spec, progress, cancelled),
               spec=spec if weights_path is not None else None)


_MODELS: dict[tuple[str | None, str], Any] = {}  # models this process has loaded for case jobs


def _loaded(model_spec: str, weights_path: str | None):
    from ..models.stored import load_stored

    key = (weights_path, model_spec)
    if key not in _MODELS:
        _MODELS[key] = load_stored(ModelSpec.from_json(model_spec), weights_path)
    return _MODELS[key]


def _case_stages(spec: dict, progress, cancelled) -> Iterator[tuple[str, Any]]:
    from ..data.cases import case_image
    from ..models.spec import preprocess
    from ..store import open_store

    model = _loaded(spec["model_spec"], spec["weights_path"])
    with open_store(spec["store"]) as store:
        row = store.image(spec["image_id"])
        pixels = case_image(row, store.datasets().set_index("dataset").loc[row["dataset"]].to_dict())
    x = preprocess(pixels, model.spec).to(model.device)
    setting = Setting.stored(spec["method"], spec["params"])
    yield from _stages(model, x, model.spec.label_index(spec["label"]), setting, {}, progress, cancelled)


def warm_job(model_spec: str, weights_path: str | None) -> Job:
    """Load a model where live maps are computed and run one forward, so the first map a viewer asks
    for does not pay for it (submitted when the explorer opens; cached like any finished job)."""
    name = json.loads(model_spec)["name"]
    spec = {"warm": True, "model_spec": model_spec, "weights_path": weights_path}
    return Job(key=("warm", name, weights_path), owner="warm", run=lambda progress, cancelled: _warm(spec),
               spec=spec if weights_path is not None else None)


def _warm(spec: dict) -> Iterator[tuple[str, Any]]:
    import torch

    model = _loaded(spec["model_spec"], spec["weights_path"])
    size = model.spec.input_size
    with torch.inference_mode():
        model.module(torch.zeros(1, 3, size, size, device=model.device))
    yield "final", None
