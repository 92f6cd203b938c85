"""Overlap of a segmentation with the ground truth: IoU under both of Saporta et al.'s conventions
(the true-positive slice and the full evaluation), the pixel counts it is computed from, mIoU; and
the stored overlap and area metrics of the registry (:mod:`.registry`), registered here.
"""

from __future__ import annotations

import numpy as np

from ..errors import UnknownNameError
from ._maps import _mask, _same
from .registry import SAPORTA, Metric, register

__all__ = ["IOU_CONVENTIONS", "iou", "iou_from_counts", "miou", "overlap_counts"]

IOU_CONVENTIONS = ("true_positive", "full")


def iou(pred, truth, *, convention: str = "true_positive") -> float:
    """Intersection over union of two binary masks of equal shape.

    Parameters
    ----------
    pred, truth : (H, W) array_like of bool or 0/1
        Predicted and ground-truth masks.
    convention : {"true_positive", "full"}
        How empty masks are scored (see Notes).

    Returns
    -------
    iou : float
        In [0, 1], or NaN.

    Notes
    -----
    IoU = |P ∩ T| / |P ∪ T|. ``"true_positive"`` (default; Saporta et al.'s true-positive slice,
    CheXlocalize's ``true_pos_only=True``): NaN unless both are non-empty. ``"full"`` (the full-dataset
    evaluation): NaN only if both are empty, 0 for a false positive or a false negative. Unequal shapes
    or non-binary values raise :class:`~cxrxai.errors.MetricError`.

    References
    ----------
    .. [1] Saporta A. et al. (2022) Benchmarking saliency methods for chest X-ray interpretation. Nat. Mach.
           Intell. doi:10.1038/s42256-022-00536-x

    Examples
    --------
    >>> a = np.array([[1, 1, 0, 0]]); b = np.array([[0, 1, 1, 0]])
    >>> iou(a, b)
    0.3333333333333333
    >>> iou(a, np.zeros((1, 4))), iou(a, np.zeros((1, 4)), convention="full")
    (nan, 0.0)
    >>> iou(np.zeros((1, 4)), np.zeros((1, 4)), convention="full")
    nan
    """
    p, t = _mask(pred, "predicted mask"), _mask(truth, "ground-truth mask")
    _same(p, t)
    return iou_from_counts(*overlap_counts(p, t), convention=convention)


def overlap_counts(p: np.ndarray, t: np.ndarray) -> tuple[int, int, int]:
    """``(|P|, |T|, |P ∩ T|)`` of two bool masks of one shape: set bytes counted, and one byte-wise
    AND (as uint8: SIMD) for the intersection, at film size several times faster than bool sums or
    an OR for the union."""
    both = np.count_nonzero(np.bitwise_and(p.view(np.uint8), t.view(np.uint8)))
    return int(np.count_nonzero(p)), int(np.count_nonzero(t)), int(both)


def iou_from_counts(n_pred: int, n_truth: int, n_both: int, *, convention: str = "true_positive") -> float:
    """:func:`iou` of masks of ``n_pred`` and ``n_truth`` pixels sharing ``n_both``
    (:func:`overlap_counts`)."""
    if convention not in IOU_CONVENTIONS:
        raise UnknownNameError("IoU convention", convention, IOU_CONVENTIONS)
    if convention == "true_positive" and (n_pred == 0 or n_truth == 0):
        return float("nan")
    if n_pred + n_truth == 0:
        return float("nan")
    return float(n_both / (n_pred + n_truth - n_both))


def miou(values) -> float:
    """Mean of per-case IoUs, NaNs skipped (CheXlocalize's mIoU).

    Parameters
    ----------
    values : iterable of float
        Per-case IoUs (:func:`iou`), NaN for cases the convention does not score.

    Returns
    -------
    miou : float
        NaN when all values are NaN or there are none.

    Notes
    -----
    mIoU = (1 / |S|) Σ_{i ∈ S} IoU_i, S the cases whose IoU is not NaN: a mean of per-case ratios, not
    of pooled pixels (Saporta et al.). Which cases are NaN is :func:`iou`'s ``convention``.

    References
    ----------
    .. [1] Saporta A. et al. (2022) Benchmarking saliency methods for chest X-ray interpretation. Nat. Mach.
           Intell. doi:10.1038/s42256-022-00536-x

    Examples
    --------
    >>> miou([0.5, float("nan"), 0.25]), miou([float("nan")]), miou([])
    (0.375, nan, nan)
    """
    v = np.asarray(list(values), dtype=float)
    return float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")



register(Metric(
    "iou", "IoU (Otsu)", lambda s: iou_from_counts(*s.overlap), "overlap",
    "overlap of the Otsu segmentation with the ground truth (true-positive slice: NaN without a lesion)",
    SAPORTA, needs_truth=False, conventions=("true_positive",),
    views=("table1", "ranking", "sweep", "localization", "subgroups", "geometry", "cases"),
))
register(Metric(
    "iou_full", "IoU (full)", lambda s: iou_from_counts(*s.overlap, convention="full"), "overlap",
    "IoU scoring a segmentation without a lesion (or a lesion without a segmentation) 0",
    SAPORTA, needs_truth=False, conventions=("full",), views=("confidence",),
))
register(Metric(
    "iou_gated", "IoU (gated)", lambda s: iou_from_counts(*s.gated_overlap, convention="full"), "overlap",
    "full IoU after emptying the segmentation when the probability is below the threshold",
    SAPORTA, needs_truth=False, conventions=("full", "probability_gate"), views=("confidence",),
))
register(Metric(
    "pred_area", "Segmented area", lambda s: s.overlap[0] / s.segmentation.size, "area",
    "fraction of the image the Otsu segmentation covers",
    SAPORTA, higher_is_better=None, needs_truth=False,
))
register(Metric(
    "gt_area", "Lesion area", lambda s: s.overlap[1] / s.truth.size, "area",
    "fraction of the image the ground truth covers",
    SAPORTA, higher_is_better=None, needs_truth=False,
))
