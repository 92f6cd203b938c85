"""The localization metric registry: what each stored number is, how it is computed, which way is better.

:func:`segment_and_score` prepares one map against one mask once (positive part, bilinear
upsampling to the mask, Otsu segmentation, the probability gate), computes every registered
:class:`Metric` from it and returns the segmentation with the scores: the localization stage
stores those scores, and the explorer draws that very mask beside them (:mod:`cxrxai.present.panel`);
pages take each metric's label and explanation from here, and ranking/plots read
``higher_is_better``. Adding a metric is one module of this package: its function and a
:func:`register` call (found by :func:`_load`, as the built-in ones in ``overlap``, ``pointing`` and
``ranking`` are): the store keeps localization scores long (one row per map, reader and metric),
reads one column per registered metric, and the localization stage scores the metrics an existing store lacks
(``only=``), without recomputing a map; see docs/extending.md.

>>> import numpy as np
>>> truth = np.zeros((4, 4), bool); truth[:2, :2] = True
>>> heat = np.zeros((4, 4)); heat[:2, :2] = 1.0
>>> s = score_map(heat, truth)
>>> s["iou"], s["hit"], s["roc_auc"], s["gt_area"]
(1.0, 1.0, 1.0, 0.25)
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from ..discovery import discover
from ..errors import MetricError, UnknownNameError

if TYPE_CHECKING:
    from .scored import Scored

__all__ = ["CATEGORIES", "METRICS", "VIEWS", "Metric", "Scored", "Segmented", "get", "label", "metric_names",
           "register", "score_map", "segment_and_score", "unregister"]

CATEGORIES = ("overlap", "pointing", "ranking", "area")
#: Where a metric is shown (a metric declares its views; every table, chart and picker of a view
#: takes its list from :func:`metric_names`): the view → what shows it.
VIEWS = {
    "table1": "thesis Table 1 (report explainers): mean, sd and n per explainer × finding; its heat map",
    "ranking": "report explainer-ranking (which explainer finds the lesion) and its picker",
    "sweep": "report occlusion-sweep (thesis Fig. 3, Table S4) and its chart",
    "localization": "reports localization and human-benchmark (Saporta Fig. 2) and their picker",
    "subgroups": "report explanation-auc-subgroups (thesis Fig. 5) and its picker",
    "geometry": "report geometry (Saporta Table 1): each one regressed on lesion geometry; the scatter",
    "confidence": "report confidence (Saporta Table 2) and its picker",
    "utility": "report trust: Arun et al.'s utility criterion (map vs the average mask)",
    "cases": "the explorer's case table (summaries.case_table), its filter and a panel's scores",
}

#: The references of the built-in metrics (each registered in the module that defines it).
SAPORTA = "Saporta et al., Nat. Mach. Intell. 2022, doi:10.1038/s42256-022-00536-x"
THESIS = "Bel Bordes, explainability of chest X-ray classifiers (master's thesis, 2023)"
ARUN = "Arun et al., Radiol. Artif. Intell. 2021, doi:10.1148/ryai.2021200267"


@dataclass(frozen=True)
class Metric:
    """A stored localization metric: ``compute(scored) -> float``; ``needs_truth`` metrics are NaN
    when the mask is empty; ``higher_is_better`` is ``None`` for descriptive numbers (areas);
    ``views`` (names of :data:`VIEWS`) are where it is shown: every report, table, chart and picker
    of a view lists the metrics :func:`metric_names` gives for it (none: stored, shown nowhere)."""

    name: str
    label: str
    compute: Callable[[Scored], float] = field(repr=False)
    category: str
    help: str
    reference: str
    higher_is_better: bool | None = True
    needs_truth: bool = True
    conventions: tuple[str, ...] = ()
    views: tuple[str, ...] = ()

    def __post_init__(self):
        if self.category not in CATEGORIES:
            raise UnknownNameError("metric category", self.category, CATEGORIES)
        for view in self.views:
            if view not in VIEWS:
                raise UnknownNameError("metric view", view, VIEWS)


_REGISTERED: dict[str, Metric] = {}


class _Registry(MutableMapping):
    """The registered metrics, by name: reading it first imports the package's registering modules
    (:func:`_load`); writing is :func:`register`'s."""

    def __getitem__(self, name: str) -> Metric:
        _load()
        return _REGISTERED[name]

    def __setitem__(self, name: str, metric: Metric) -> None:
        _REGISTERED[name] = metric

    def __delitem__(self, name: str) -> None:
        del _REGISTERED[name]

    def __iter__(self) -> Iterator[str]:
        _load()
        return iter(list(_REGISTERED))

    def __len__(self) -> int:
        _load()
        return len(_REGISTERED)


#: Every registered metric, in module-name order of the modules that register them, then in the
#: order each registers them (a metric registered from elsewhere, a test's toy, comes last).
METRICS = _Registry()


@cache
def _load() -> None:
    """Import every module of this package that calls ``register(`` (a new metric's module is found
    without being listed; the torch, scipy and skimage modules are not imported), then order the
    registry by those modules' names, whatever order they were first imported in."""
    rank = {name: i for i, name in enumerate(discover(sys.modules[__package__], "register("))}
    ordered = sorted(_REGISTERED.values(), key=lambda m: rank.get(m.compute.__module__, len(rank)))
    _REGISTERED.clear()
    _REGISTERED.update((m.name, m) for m in ordered)


def register(metric: Metric, *, replace: bool = False) -> Metric:
    """Add ``metric`` where it is defined (``replace=True`` to redefine a name)."""
    if metric.name in _REGISTERED and not replace:
        raise MetricError(f"a metric named {metric.name!r} is already registered")
    _REGISTERED[metric.name] = metric
    return metric


def unregister(name: str) -> None:
    _REGISTERED.pop(name, None)


def get(name: str) -> Metric:
    if name not in METRICS:
        raise UnknownNameError("metric", name, METRICS)
    return METRICS[name]


def metric_names(*, category: str | None = None, view: str | None = None) -> list[str]:
    """The registered metrics (in registration order) of ``category`` and shown in ``view``."""
    if view is not None and view not in VIEWS:
        raise UnknownNameError("metric view", view, VIEWS)
    return [m.name for m in METRICS.values()
            if (category is None or m.category == category) and (view is None or view in m.views)]


def label(name: str) -> str:
    """What a reader sees for column ``name``: a registered metric's label, else the name itself."""
    return METRICS[name].label if name in METRICS else name


@dataclass(frozen=True)
class Segmented:
    """One map scored against one mask: ``mask`` is the Otsu segmentation (bool, the mask's shape)
    the overlap metrics in ``scores`` were computed from — the array itself, read-only, so a viewer
    draws exactly what was scored."""

    mask: np.ndarray = field(repr=False)
    scores: dict


def segment_and_score(native: np.ndarray, truth: np.ndarray, *, prob: float | None = None,
                      threshold: float | None = None, only: Iterable[str] | None = None) -> Segmented:
    """Every registered metric of one native map against one mask (plus ``gt_positive``), and the
    segmentation they were computed from; ``only``: just these metrics (the ones a store lacks
    when scoring resumes), computing nothing the others alone need."""
    from .scored import Scored

    metrics = list(METRICS.values()) if only is None else [get(name) for name in only]
    scored = Scored(native, truth, prob=prob, threshold=threshold)
    out: dict = {"gt_positive": scored.has_truth}
    for m in metrics:
        out[m.name] = float(m.compute(scored)) if scored.has_truth or not m.needs_truth else np.nan
    scored.segmentation.flags.writeable = False  # what is drawn cannot drift from what was scored
    return Segmented(scored.segmentation, out)


def score_map(native: np.ndarray, truth: np.ndarray, *, prob: float | None = None,
              threshold: float | None = None) -> dict:
    """The scores of :func:`segment_and_score` alone."""
    return segment_and_score(native, truth, prob=prob, threshold=threshold).scores


def __getattr__(name: str):
    if name == "Scored":  # defined beside the metric modules it prepares for, which import this one
        from .scored import Scored

        return Scored
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
