"""Precompute on Ray: the stages' units of work (prediction chunks, CAM batches, single costly
maps) run as Ray tasks; each writes one immutable Parquet part named by its content; the driver
ingests finished parts into the store through the usual writer (staging, then publish).

Why tasks rather than Ray Data or actors: a unit is already the batch the local engine uses (so
the numbers are the same code on the same inputs), a task that dies with its worker (or its node)
is retried by Ray (``max_retries``), and the model is deserialised once per worker process and kept
there (one replica per worker). Workers never open the DuckDB file: a killed driver resumes by
ingesting the parts already written and submitting only the units without one; a second run of
the same precompute finds nothing missing in the store and writes nothing.

Nothing on a worker's node is assumed to exist (a real cluster shares no disk with the driver):

* **Code** travels with the job: ``runtime_env`` ships the driver's ``cxrxai`` package
  (``py_modules``) and an empty working directory, so no worker imports a copy of its own or the
  driver's checkout by path (Ray otherwise puts the driver's directory on the workers' path).
* **Images** travel through Ray's object store: each unit carries its own decoded pixels (at the
  model's input size, 50 kB an image at 224 px), never a path into the driver's decode cache.
  At most :attr:`RayEngine.window` units are in flight, so the object store holds a few units'
  images, not a dataset's.
* **Results** come back as the task's return value (a Parquet part's bytes); the driver writes the
  part beside the store and ingests it.

Ray is optional (``pip install -r requirements-ray.txt``); nothing else imports this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.decode import RowLoader
from ..errors import CxrxaiError
from ..models.inference import sigmoid
from .maps import compute_unit, unit_image_ids, unit_size

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


def _run_unit(model_key: str, model_ref, images: RowLoader, unit: dict) -> dict:
    """A Ray task: compute one unit on this worker's model replica from the pixels it was sent;
    returns the unit's Parquet part as bytes and where it ran (process, node, which ``cxrxai``)."""
    import io

    import ray
    import torch

    import cxrxai

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
    rows, _ = compute_unit(model, images, unit)
    frame = pd.DataFrame(rows)
    if "values" in frame:
        frame["shape"] = [list(np.shape(v)) for v in frame["values"]]
        frame["values"] = [np.asarray(v, np.float32).ravel() for v in frame["values"]]
        frame["params"] = [json.dumps(p, sort_keys=True) for p in frame["params"]]
    if "logits" in frame:
        frame["logits"] = [np.asarray(v, np.float32) for v in frame["logits"]]
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return {"part": buffer.getvalue(), "pid": os.getpid(), "node": ray.get_runtime_context().get_node_id(),
            "module": cxrxai.__file__, "pixels_from": images.source()}


def _write_part(part: Path, data: bytes) -> None:
    tmp = part.with_name(f"{part.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, part)  # a part exists only when complete


def _ingest(ctx, unit: dict, part: Path) -> None:
    frame = pd.read_parquet(part)
    if unit["kind"] == "predictions":
        logits = np.stack(frame["logits"].to_numpy()).astype(np.float32)
        ctx.writer.put_predictions(
            ctx.model.spec.name, frame["image_id"].tolist(), ctx.model.spec.labels, logits, sigmoid(logits)
        )
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
        raise EngineError(
            f"cannot reach the Ray cluster at {address!r}: nothing answers at {host}:{port} "
            f"({err.strerror or err}). Check the address (ray://HOST:10001 for Ray Client, HOST:6379 "
            "from a cluster node) or leave --address out to start a local Ray"
        ) from None


class RayEngine:
    """Run units of work on Ray (see the module docstring). ``address``: an existing cluster
    (``ray://host:10001`` or ``host:6379``); None starts a local Ray with ``num_cpus``.
    ``parts_dir`` holds the Parquet parts, on the driver's disk."""

    name = "ray"

    def __init__(self, parts_dir: str | Path, *, address: str | None = None, num_cpus: int | None = None,
                 retries: int = 3, progress: Callable[[str, int, int], None] | None = None):
        self.parts_dir = Path(parts_dir)
        self.address, self.num_cpus, self.retries = address, num_cpus, retries
        self._ray = None
        self._task = None
        self._working_dir: tempfile.TemporaryDirectory | None = None
        self.window = 4
        self.stats = {"units": 0, "from_parts": 0, "worker_pids": set(), "nodes": set(), "modules": set(),
                      "pixels_from": set(), "ray": None}

    def runtime_env(self) -> dict:
        """What every worker gets: this ``cxrxai`` package, an empty working directory (so the
        driver's own directory is not put on the workers' path) and the test hook's variable."""
        self._working_dir = self._working_dir or tempfile.TemporaryDirectory(prefix="cxrxai-ray-")
        env = {
            "py_modules": [str(Path(__file__).resolve().parents[1])],
            "working_dir": self._working_dir.name,
            "excludes": ["__pycache__", "*.pyc"],
        }
        if os.environ.get("CXRXAI_RAY_UNIT_DELAY"):
            env["env_vars"] = {"CXRXAI_RAY_UNIT_DELAY": os.environ["CXRXAI_RAY_UNIT_DELAY"]}
        return env

    def ready(self) -> None:
        """Fail now, before anything is written, where Ray cannot run: not installed, or an ``address``
        that does not answer or refuses this client (joined here). A local Ray starts with the first
        unit to compute (:meth:`run`): a run whose every unit is stored starts none."""
        if self.address is None:
            _import_ray()
        else:
            self.start()

    def start(self):
        if self._ray is not None:
            return self._ray
        ray = _import_ray()
        if self.address is not None and self.address != "auto":
            _reachable(self.address)
        common = {"ignore_reinit_error": True, "logging_level": "ERROR", "log_to_driver": False,
                  "runtime_env": self.runtime_env()}
        try:
            # "local": a new Ray of its own, never a `ray start` cluster found on this machine
            if self.address is None:
                ray.init(address="local", num_cpus=self.num_cpus, include_dashboard=False, **common)
            else:
                ray.init(address=self.address, **common)
        except Exception as err:  # Ray raises ConnectionError, RuntimeError or ValueError by version
            where = f"the Ray cluster at {self.address!r}" if self.address else "a local Ray"
            raise EngineError(
                f"cannot start or reach {where}: {type(err).__name__}: {err}. Check the address "
                "(ray://HOST:10001 for Ray Client, HOST:6379 from a cluster node), and with token "
                "authentication (RAY_AUTH_MODE=token) the cluster's token (RAY_AUTH_TOKEN_PATH), or "
                "leave --address out to start a local Ray"
            ) from None
        self._ray = ray
        self.stats["ray"] = self.address or "local"  # the Ray this run used (None: it needed none)
        self._task = ray.remote(num_cpus=1, max_retries=self.retries, retry_exceptions=False)(_run_unit)
        self.window = max(4, 2 * int(ray.cluster_resources().get("CPU", 2)))
        return ray

    def probe_nodes(self) -> dict[str, str]:
        """``{node id: the file its workers import cxrxai from}`` for every alive node, each from a
        task pinned to that node: what a unit there would run."""
        ray = self.start()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from .ray_probe import where

        probe = ray.remote(num_cpus=0)(where)
        nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
        refs = [probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote()
                for n in nodes]
        return dict(zip(nodes, ray.get(refs)))

    def shutdown(self) -> None:
        # a driver joined to a cluster disconnects too (the cluster keeps running); left connected,
        # Ray's exit handlers print the dead nodes' log lines after the report on stdout
        if self._ray is not None:
            self._ray.shutdown()
        self._ray = None
        if self._working_dir is not None:
            self._working_dir.cleanup()
            self._working_dir = None

    def run(self, ctx, units: list[dict], title: str) -> None:
        """Compute ``units`` (parts already on disk are ingested, not recomputed) and store their rows."""
        if not units:
            return
        self.parts_dir.mkdir(parents=True, exist_ok=True)
        model_key = str(ctx.model.spec.card.get("weights_sha256") or ctx.model.spec.name)
        total, done, todo = sum(unit_size(u) for u in units), 0, []
        for unit in units:
            part = self.parts_dir / f"{unit['kind']}-{unit_key(model_key, unit)}.parquet"
            if part.is_file():
                _ingest(ctx, unit, part)
                self.stats["from_parts"] += 1
                done += unit_size(unit)
            else:
                todo.append((unit, part))
        ctx.progress(title, done, total)
        if todo:
            self._compute(ctx, todo, model_key, title, done, total)

    def _compute(self, ctx, todo: list, model_key: str, title: str, done: int, total: int) -> None:
        ray = self.start()
        model_ref, pending, queue = ray.put(ctx.model), {}, list(reversed(todo))
        while queue or pending:
            # the images of a few units in the object store at once
            while queue and len(pending) < self.window:
                unit, part = queue.pop()
                ids = unit_image_ids(unit)
                images = RowLoader(np.array(ctx.load_images(ids)), ids)  # a copy: never a memmap's path
                pending[self._task.remote(model_key, model_ref, images, unit)] = (unit, part)
            finished, _ = ray.wait(list(pending), num_returns=1, timeout=None)
            for ref in finished:
                unit, part = pending.pop(ref)
                self._finish(ray, ref, ctx, unit, part)
                done += unit_size(unit)
                ctx.progress(title, done, total)
                ctx.maybe_publish()

    def _finish(self, ray, ref, ctx, unit: dict, part: Path) -> None:
        try:
            out = ray.get(ref)
        except Exception as err:
            raise EngineError(f"a {unit['kind']} unit failed on Ray after {self.retries} retries: "
                              f"{type(err).__name__}: {err}; parts written so far are kept in "
                              f"{self.parts_dir} and the next run resumes from them") from None
        _write_part(part, out["part"])
        _ingest(ctx, unit, part)
        self.stats["units"] += 1
        self.stats["worker_pids"].add(out["pid"])
        self.stats["nodes"].add(out["node"])
        self.stats["modules"].add(out["module"])
        self.stats["pixels_from"].add(out["pixels_from"])
