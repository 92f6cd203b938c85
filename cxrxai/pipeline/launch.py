"""A build as the command line starts it: the engine, the status file the app reads, the build.

:func:`precompute` is the one call for a dataset: it opens the engine (:data:`ENGINES`), keeps the
status file beside the store current (the app's sidebar) through :func:`reporting`, runs
:func:`~cxrxai.pipeline.dataset.build_dataset` and records how it ended. The demo build reports
through :func:`reporting` too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import paths
from ..errors import CxrxaiError, UnknownNameError
from .background import BuildStopped, StatusWriter, status_path
from .dataset import build_dataset
from .plan import BuildPlan
from .runner import ProgressFn, _quiet

__all__ = ["ENGINES", "Reporter", "open_engine", "precompute", "reporting"]

#: Where predictions and maps are computed: here, or on Ray (sharded over workers that write
#: Parquet parts beside the store, ``STORE.parts/``, for the driver to ingest).
ENGINES = ("local", "ray")


def open_engine(kind: str, store_path: str | Path, *, address: str | None = None,
                num_cpus: int | None = None):
    """The engine of ``kind`` (``None`` for ``local``), ready to run: a missing Ray or an unreachable
    ``address`` fails here, before anything is written (:meth:`~.ray_engine.RayEngine.ready`)."""
    if kind not in ENGINES:
        raise UnknownNameError("engine", kind, ENGINES)
    if kind == "local":
        if address:
            raise CxrxaiError("--address joins a Ray cluster: add --engine ray")
        return None
    from .ray_engine import RayEngine

    engine = RayEngine(Path(f"{store_path}.parts"), address=address, num_cpus=num_cpus)
    engine.ready()
    return engine


class Reporter:
    """A build's progress callback (``progress(task, done, total)``) that tells both the caller's
    ``progress`` (the terminal's bars) and the ``status`` file (``None``: none)."""

    def __init__(self, progress: ProgressFn, status: StatusWriter | None):
        self.progress, self.status = progress, status

    def __call__(self, task: str, done: int, total: int) -> None:
        self.progress(task, done, total)
        if self.status is not None:
            self.status(task, done, total)

    def stage(self, where: dict) -> None:
        """Where the build is (``build_demo``'s ``on_stage``), kept in the status."""
        if self.status is not None:
            self.status.stage(where)


@contextmanager
def reporting(path: str | Path | None, *, phase: str, progress: ProgressFn = _quiet) -> Iterator[Reporter]:
    """A :class:`Reporter` keeping the status file at ``path`` current; on leaving, the status
    ends ``finished``, or ``failed`` with the error (a :class:`BuildStopped` build's status is
    already ``stopped``: :func:`~cxrxai.pipeline.background.stoppable`)."""
    status = StatusWriter(path, phase=phase) if path is not None else None
    try:
        yield Reporter(progress, status)
    except BuildStopped:
        raise
    except BaseException as err:
        if status is not None:
            status.finish(error=f"{type(err).__name__}: {err}")
        raise
    if status is not None:
        status.finish()


def precompute(store_path: str | Path, tables, model, plan: BuildPlan, *, engine: str = "local",
               address: str | None = None, ray_cpus: int | None = None, progress: ProgressFn = _quiet,
               cache_dir: str | Path | None = None, **build) -> dict:
    """Run :func:`~cxrxai.pipeline.dataset.build_dataset` of ``plan`` on ``engine`` (see
    :func:`open_engine`), reporting to ``progress`` and to the status file beside the store
    (:func:`reporting`). ``cache_dir``: decoded images (default: the data cache's ``decoded``);
    ``build``: the rest of :func:`build_dataset`'s keywords. A store path that cannot be written
    (:func:`~cxrxai.paths.check_path`) is refused before the engine or the status file."""
    paths.check_path(store_path, "store to write", option="store")
    opened = open_engine(engine, store_path, address=address, num_cpus=ray_cpus)
    with reporting(status_path(store_path), phase=f"precompute ({engine} engine)", progress=progress) as rep:
        return build_dataset(store_path, tables, model, plan, engine=opened, progress=rep,
                             cache_dir=cache_dir or paths.data_cache() / "decoded", **build)
