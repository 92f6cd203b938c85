"""The stage runner: a build is a list of :class:`Stage` s run in order against one :class:`BuildContext`.

Every stage first asks the store what is already done and computes only the rest, so re-running a
build skips finished work; long stages publish every ``publish_every`` seconds, so an interrupted
build loses at most that much. Progress goes to a callback ``progress(task, done, total)`` — the
CLI draws bars from it; the library never prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..models.registry import LoadedModel
from ..store import StoreWriter

__all__ = ["BuildContext", "ProgressFn", "Stage", "run_stages"]

ProgressFn = Callable[[str, int, int], None]


def _quiet(task: str, done: int, total: int) -> None:
    return None


@dataclass
class BuildContext:
    """What stages share: the writer, the dataset, the model and how to load images."""

    writer: StoreWriter
    dataset: str
    model: LoadedModel
    load_images: Callable[[list[str]], np.ndarray]
    progress: ProgressFn = _quiet
    publish_every: float = 60.0
    options: dict = field(default_factory=dict)
    _last_publish: float = field(default_factory=time.monotonic)

    def maybe_publish(self) -> None:
        if time.monotonic() - self._last_publish >= self.publish_every:
            self.writer.publish()
            self._last_publish = time.monotonic()


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[BuildContext], dict]


def run_stages(ctx: BuildContext, stages, report: dict) -> dict:
    """Run ``stages`` in order, publishing after each; ``report[stage.name]`` gets its summary and seconds."""
    for stage in stages:
        s0 = time.monotonic()
        report[stage.name] = {**stage.run(ctx), "seconds": round(time.monotonic() - s0, 1)}
        ctx.writer.publish()
    return report
