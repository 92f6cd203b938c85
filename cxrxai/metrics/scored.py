"""One map against one mask, prepared once for every registered localization metric
(:func:`~cxrxai.metrics.registry.segment_and_score`): the positive part, the bilinear upsampling to
the mask, one sort for the Otsu histogram and every ranking metric, the Otsu segmentation, the
probability gate and the overlap counts, each computed when a metric first asks for it."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .. import postprocess
from .labelled_sort import LabelledSort, labelled_sort
from .localization import probability_gate
from .otsu import otsu_from_sorted
from .overlap import overlap_counts
from .ranking import ranking_from_sorted

__all__ = ["Scored"]


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
        """Segmented, lesion and shared pixels (:func:`~cxrxai.metrics.overlap.overlap_counts`),
        counted once for every IoU and area."""
        return overlap_counts(self.segmentation, self.truth)

    @cached_property
    def gated_overlap(self) -> tuple[int, int, int]:
        if self.gated is self.segmentation:
            return self.overlap
        return overlap_counts(self.gated, self.truth)
