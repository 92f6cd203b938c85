"""Precompute on Ray: the stages' units of work (prediction chunks, CAM batches, single costly
maps) run as Ray tasks; each writes one immutable Parquet part named by its content; the driver
ingests finished parts into the store through the usual writer (staging, then publish).

Why tasks rather than Ray Data or actors: a unit is already the batch the local engine uses (so
the numbers are the same code on the same inputs), a task that dies with its worker is retried by
Ray (``max_retries``), and the model is deserialised once per worker process and kept there (one
replica per worker). Workers never open the DuckDB file: a killed driver resumes by ingesting the
parts already written and submitting only the units without one; a second run of the same
precompute finds nothing missing in the store and writes nothing.

Ray is optional (``pip install -r requirements-ray.txt``); nothing else imports this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import CxrxaiError
from ..models.inference import sigmoid
from .maps import compute_unit, unit_size

__all__ = ["EngineError", "RayEngine"]

_REPLICAS: dict[str, object] = {}  # per worker process: model key → model (one replica per worker)


class EngineError(CxrxaiError):
    """The distributed engine cannot run: Ray missing, a cluster unreachable, a unit failing for good."""


def _import_ray():
    try:
        import ray
    except ImportError:
        raise EngineError("precompute --engine ray needs Ray, an optional dependency: "
                          "`pip install -r requirements-ray.txt` (or `pip install 'ray>=2.9'`)") from None
    return ray


def unit_key(model_key: str, unit: dict) -> str:
    """Content name of a unit's part: the model's weights and the unit's inputs and parameters."""
    text = json.dumps({"model": model_key, **unit}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _run_unit(model_key: str, model_ref, loader_ref, unit: dict, part: str) -> str:
    """A Ray task: compute one unit on this worker's model replica and write its part atomically."""
    import torch

    model = _REPLICAS.get(model_key)
    if model is None:
        model = model_ref  # Ray resolves the object reference to the LoadedModel
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model.module.to(device)
        model.device = device
        _REPLICAS.clear()
        _REPLICAS[model_key] = model
    if os.environ.get("CXRXAI_RAY_UNIT_DELAY"):  # tests: keep units in flight long enough to kill a worker
        time.sleep(float(os.environ["CXRXAI_RAY_UNIT_DELAY"]))
    rows, _ = compute_unit(model, loader_ref, unit)
    frame = pd.DataFrame(rows)
    if "values" in frame:
        frame["shape"] = [list(np.shape(v)) for v in frame["values"]]
        frame["values"] = [np.asarray(v, np.float32).ravel() for v in frame["values"]]
        frame["params"] = [json.dumps(p, sort_keys=True) for p in frame["params"]]
    if "logits" in frame:
        frame["logits"] = [np.asarray(v, np.float32) for v in frame["logits"]]
    tmp = f"{part}.tmp{os.getpid()}"
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, part)  # a part exists only when complete
    return os.getpid()


def _ingest(ctx, unit: dict, part: Path) -> None:
    frame = pd.read_parquet(part)
    if unit["kind"] == "predictions":
        logits = np.stack(frame["logits"].to_numpy()).astype(np.float32)
        ctx.writer.put_predictions(ctx.model.spec.name, frame["image_id"].tolist(), ctx.model.spec.labels, logits,
                                   sigmoid(logits))
        return
    rows = frame.to_dict("records")
    for r in rows:
        r["params"] = json.loads(r["params"])
        r["values"] = np.asarray(r["values"], np.float32).reshape([int(n) for n in r.pop("shape")])
    ctx.writer.put_maps(rows)


def _reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast on an address nothing listens at (Ray itself retries for minutes)."""
    import socket

    hostport = address.split("://", 1)[-1].rsplit("/", 1)[0]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise EngineError(f"Ray address {address!r} is not HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as err:
        raise EngineError(f"cannot reach the Ray cluster at {address!r}: nothing answers at {host}:{port} "
                          f"({err.strerror or err}). Check the address (ray://HOST:10001 for Ray Client, HOST:6379 "
                          "from a cluster node) or leave --address out to start a local Ray") from None


class RayEngine:
    """Run units of work on Ray (see the module docstring). ``address``: an existing cluster
    (``ray://host:10001`` or ``host:6379``); None starts a local Ray with ``num_cpus``.
    ``parts_dir`` holds the Parquet parts (on a file system every worker sees)."""

    name = "ray"

    def __init__(self, parts_dir: str | Path, *, address: str | None = None, num_cpus: int | None = None,
                 retries: int = 3, progress: Callable[[str, int, int], None] | None = None):
        self.parts_dir = Path(parts_dir)
        self.address, self.num_cpus, self.retries = address, num_cpus, retries
        self._ray = None
        self._task = None
        self.stats = {"units": 0, "from_parts": 0, "worker_pids": set()}

    def start(self):
        if self._ray is not None:
            return self._ray
        ray = _import_ray()
        if self.address is not None and self.address != "auto":
            _reachable(self.address)
        try:
            if self.address is None:
                ray.init(num_cpus=self.num_cpus, include_dashboard=False, ignore_reinit_error=True,
                         logging_level="ERROR", log_to_driver=False)
            else:
                ray.init(address=self.address, ignore_reinit_error=True, logging_level="ERROR", log_to_driver=False)
        except Exception as err:  # Ray raises ConnectionError, RuntimeError or ValueError by version
            where = f"the Ray cluster at {self.address!r}" if self.address else "a local Ray"
            raise EngineError(f"cannot start or reach {where}: {type(err).__name__}: {err}. Check the address "
                              "(ray://HOST:10001 for Ray Client, HOST:6379 from a cluster node) or leave --address "
                              "out to start a local Ray") from None
        self._ray = ray
        self._task = ray.remote(num_cpus=1, max_retries=self.retries, retry_exceptions=False)(_run_unit)
        return ray

    def shutdown(self) -> None:
        if self._ray is not None and self.address is None:
            self._ray.shutdown()
        self._ray = None

    def run(self, ctx, units: list[dict], title: str) -> None:
        """Compute ``units`` (parts already on disk are ingested, not recomputed) and store their rows."""
        if not units:
            return
        ray = self.start()
        self.parts_dir.mkdir(parents=True, exist_ok=True)
        model_key = str(ctx.model.spec.card.get("weights_sha256") or ctx.model.spec.name)
        total, done = sum(unit_size(u) for u in units), 0
        pending: dict = {}
        model_ref = loader_ref = None
        for unit in units:
            part = self.parts_dir / f"{unit['kind']}-{unit_key(model_key, unit)}.parquet"
            if part.is_file():
                _ingest(ctx, unit, part)
                self.stats["from_parts"] += 1
                done += unit_size(unit)
                continue
            if model_ref is None:
                model_ref, loader_ref = ray.put(ctx.model), ray.put(ctx.load_images)
            pending[self._task.remote(model_key, model_ref, loader_ref, unit, str(part))] = (unit, part)
        ctx.progress(title, done, total)
        while pending:
            finished, _ = ray.wait(list(pending), num_returns=1, timeout=None)
            for ref in finished:
                unit, part = pending.pop(ref)
                try:
                    self.stats["worker_pids"].add(ray.get(ref))
                except Exception as err:
                    raise EngineError(f"a {unit['kind']} unit failed on Ray after {self.retries} retries: "
                                      f"{type(err).__name__}: {err}; parts written so far are kept in "
                                      f"{self.parts_dir} and the next run resumes from them") from None
                _ingest(ctx, unit, part)
                self.stats["units"] += 1
                done += unit_size(unit)
                ctx.progress(title, done, total)
                ctx.maybe_publish()
