"""The localization metric registry: what each stored number is, how it is computed, which way is better.

:func:`segment_and_score` prepares one map against one mask once (positive part, bilinear
upsampling to the mask, Otsu segmentation, the probability gate), computes every registered
:class:`Metric` from it and returns the segmentation with the scores: the localization stage
stores those scores, and the explorer draws that very mask beside them (:mod:`cxrxai.present.panel`);
pages take each metric's label and explanation from here, and ranking/plots read
``higher_is_better``. Adding a metric is its function plus one :func:`register` call: the store
keeps localization scores long (one row per map, reader and metric), reads one column per
registered metric, and the localization stage scores the metrics an existing store lacks
(``only=``), without recomputing a map; see "Add a metric" in the README.

>>> import numpy as np
>>> truth = np.zeros((4, 4), bool); truth[:2, :2] = True
>>> heat = np.zeros((4, 4)); heat[:2, :2] = 1.0
>>> s = score_map(heat, truth)
>>> s["iou"], s["hit"], s["roc_auc"], s["gt_area"]
(1.0, 1.0, 1.0, 0.25)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .. import postprocess
from ..errors import MetricError, UnknownNameError
from .labelled_sort import LabelledSort, labelled_sort
from .localization import iou_from_counts, overlap_counts, peak_hit, probability_gate
from .otsu import otsu_from_sorted
from .pointing import centre_hit
from .ranking import ranking_from_sorted

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


class Scored:
    """One map against one mask, prepared once for every metric (lazy where costly)."""

    def __init__(self, native: np.ndarray, truth: np.ndarray, *, prob: float | None = None,
                 threshold: float | None = None):
        # a copy in row-major order, as the map: a decoded RLE mask is column-major, and every pass
        # pairing it with the map (AND, boolean indexing, ravel) would stride across memory
        self.native, self.truth = native, np.array(truth, dtype=bool, order="C")
        self.prob, self.threshold = prob, threshold
        self.has_truth = bool(self.truth.any())

    @cached_property
    def positive(self) -> np.ndarray:
        return postprocess.positive(self.native)

    @cached_property
    def upsampled(self) -> np.ndarray:
        return postprocess.upsample(self.positive, self.truth.shape)

    @cached_property
    def ordered(self) -> LabelledSort | np.ndarray:
        """The upsampled map's values sorted ascending, each labelled by the mask when there is a
        lesion (:func:`~cxrxai.metrics.labelled_sort.labelled_sort`; the positive part is never
        negative): one sort for the Otsu histogram and every ranking metric."""
        if self.has_truth:
            labelled = labelled_sort(self.upsampled, self.truth)
            if labelled is not None:
                return labelled
        return np.sort(self.upsampled, axis=None)

    @cached_property
    def segmentation(self) -> np.ndarray:
        return otsu_from_sorted(self.upsampled, self.ordered)

    @cached_property
    def gated(self) -> np.ndarray:
        if self.prob is None or self.threshold is None:
            return self.segmentation
        return probability_gate(self.segmentation, self.prob, self.threshold)

    @cached_property
    def ranking(self) -> dict[str, float]:
        return ranking_from_sorted(self.upsampled, self.truth, self.ordered)

    @cached_property
    def overlap(self) -> tuple[int, int, int]:
        """Segmented, lesion and shared pixels (:func:`~cxrxai.metrics.localization.overlap_counts`),
        counted once for every IoU and area."""
        return overlap_counts(self.segmentation, self.truth)

    @cached_property
    def gated_overlap(self) -> tuple[int, int, int]:
        if self.gated is self.segmentation:
            return self.overlap
        return overlap_counts(self.gated, self.truth)


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


METRICS: dict[str, Metric] = {}


def register(metric: Metric, *, replace: bool = False) -> Metric:
    if metric.name in METRICS and not replace:
        raise MetricError(f"a metric named {metric.name!r} is already registered")
    METRICS[metric.name] = metric
    return metric


def unregister(name: str) -> None:
    METRICS.pop(name, None)


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


SAPORTA = "Saporta et al., Nat. Mach. Intell. 2022, doi:10.1038/s42256-022-00536-x"
THESIS = "Bel Bordes, explainability of chest X-ray classifiers (master's thesis, 2023)"
ARUN = "Arun et al., Radiol. Artif. Intell. 2021, doi:10.1148/ryai.2021200267"

for _m in (
    Metric(
        "iou",
        "IoU (Otsu)",
        lambda s: iou_from_counts(*s.overlap),
        "overlap",
        "overlap of the Otsu segmentation with the ground truth (true-positive slice: NaN without a lesion)",
        SAPORTA,
        needs_truth=False,
        conventions=("true_positive",),
        views=("table1", "ranking", "sweep", "localization", "subgroups", "geometry", "cases"),
    ),
    Metric(
        "iou_full",
        "IoU (full)",
        lambda s: iou_from_counts(*s.overlap, convention="full"),
        "overlap",
        "IoU scoring a segmentation without a lesion (or a lesion without a segmentation) 0",
        SAPORTA,
        needs_truth=False,
        conventions=("full",),
        views=("confidence",),
    ),
    Metric(
        "iou_gated",
        "IoU (gated)",
        lambda s: iou_from_counts(*s.gated_overlap, convention="full"),
        "overlap",
        "full IoU after emptying the segmentation when the probability is below the threshold",
        SAPORTA,
        needs_truth=False,
        conventions=("full", "probability_gate"),
        views=("confidence",),
    ),
    Metric(
        "pred_area",
        "Segmented area",
        lambda s: s.overlap[0] / s.segmentation.size,
        "area",
        "fraction of the image the Otsu segmentation covers",
        SAPORTA,
        higher_is_better=None,
        needs_truth=False,
    ),
    Metric(
        "gt_area",
        "Lesion area",
        lambda s: s.overlap[1] / s.truth.size,
        "area",
        "fraction of the image the ground truth covers",
        SAPORTA,
        higher_is_better=None,
        needs_truth=False,
    ),
    Metric(
        "hit",
        "Hit",
        lambda s: peak_hit(s.upsampled, s.truth),
        "pointing",
        "pointing game: 1 when the map's maximum lies inside the ground truth",
        SAPORTA,
        views=("table1", "ranking", "localization", "subgroups", "geometry", "confidence", "cases"),
    ),
    Metric(
        "pla",
        "PLA",
        lambda s: centre_hit(s.positive, s.truth),
        "pointing",
        "the thesis's point localization: the centre pixel of the map's most important cell lies in the "
        "lesion",
        THESIS,
        views=("table1", "sweep"),
    ),
    Metric(
        "roc_auc",
        "AUC",
        lambda s: s.ranking["roc_auc"],
        "ranking",
        "explanation AUC: how well map values rank lesion pixels above the rest (0.5 = chance)",
        THESIS,
        views=("table1", "ranking", "sweep", "subgroups", "cases"),
    ),
    Metric(
        "pr_auc",
        "PR AUC",
        lambda s: s.ranking["pr_auc"],
        "ranking",
        "area under the pixel precision–recall curve (trapezoidal)",
        ARUN,
        conventions=("trapezoid",),
        views=("utility",),
    ),
    Metric(
        "ap",
        "Average precision",
        lambda s: s.ranking["ap"],
        "ranking",
        "average precision of the pixel ranking",
        ARUN,
        conventions=("average_precision",),
        views=("utility",),
    ),
):
    register(_m)
