"""Ranking metrics: how well the map's values rank ground-truth pixels above the rest.

Part of :mod:`cxrxai.metrics.localization` (which re-exports these); conventions there.
"""

from __future__ import annotations

import numpy as np

from ..errors import UnknownNameError
from ._maps import _mask, _prepare, _same
from .labelled_sort import LabelledSort, Ranks, as_float32_if_exact, labelled_sort
from .registry import ARUN, THESIS, Metric, register

__all__ = ["PR_VARIANTS", "pr_auc", "ranking_from_sorted", "ranking_metrics", "roc_auc"]

PR_VARIANTS = ("trapezoid", "average_precision")


def _ranks(m: np.ndarray, t: np.ndarray, ordered: np.ndarray | LabelledSort | None = None) -> Ranks:
    """The ranking's counts: read off the map's labelled sort (``ordered`` when the caller has it)
    when the map is non-negative and float32 holds it (every upsampled positive part), else every
    score sorted once (NumPy's SIMD sort; ``ordered`` when the caller has it), the lesion's apart,
    then one search of the lesion's distinct scores among all: the background pixels below a score
    are all pixels below it less the lesion's."""
    if isinstance(ordered, LabelledSort):
        return ordered.ranks()
    scores, truth = as_float32_if_exact(m.ravel()), t.ravel().astype(bool)
    labelled = labelled_sort(scores, truth) if ordered is None else None
    if labelled is not None:
        return labelled.ranks()
    ordered = np.sort(scores) if ordered is None else ordered
    lesion = np.sort(scores[truth])
    first = np.flatnonzero(np.r_[True, lesion[1:] != lesion[:-1]])
    values, counts = lesion[first], np.diff(np.r_[first, lesion.size])
    below = np.searchsorted(ordered, values, side="left")
    # a score's pixels run from ``below``, its lesion pixels at least: search the run's end only where
    # the background ties the score too (rare in an upsampled map)
    ends = below + counts
    more = ends < ordered.size
    more[more] = ordered[ends[more]] == values[more]
    ends[more] = np.searchsorted(ordered, values[more], side="right")
    tied = ends - below
    return Ranks(counts, below - first, tied - counts, int(lesion.size), int(scores.size - lesion.size))


def _roc_from(r: Ranks) -> float:
    """Mann–Whitney: the share of (lesion, background) pixel pairs the map orders right, ties half,
    summed in integers (exact), which is the ROC curve's trapezoidal area."""
    lesion = r.lesion.astype(np.int64, copy=False)
    pairs = 2 * int(np.dot(lesion, r.below.astype(np.int64, copy=False))) + int(np.dot(lesion, r.tied))
    return pairs / (2 * r.n1 * r.n0)


def _pr_from(r: Ranks, variant: str) -> float:
    """:func:`_pr_areas`' area of ``variant``."""
    trapezoid, average_precision = _pr_areas(r)
    return average_precision if variant == "average_precision" else trapezoid


_CHUNK = 1 << 14  # distinct scores per step of :func:`_pr_areas`: its arrays stay in the CPU's cache


def _pr_areas(r: Ranks) -> tuple[float, float]:
    """Both areas (trapezoid, average precision) under the precision–recall curve over distinct
    scores (descending), as scikit-learn's ``precision_recall_curve`` draws it, ending at (recall 0,
    precision 1). Recall moves only at scores some lesion pixel has: at such a score v the point is
    (R(v), P(v)) with R(v) = TP≥v / n1, P(v) = TP≥v / (TP≥v + FP≥v), and the next point up the curve
    is the next higher distinct score's, whose TP and FP are those strictly above v (the end point
    when nothing scores above v). The counts are integers; the areas are summed a cache-sized run
    of scores at a time (a film's lesion has ~10⁶ distinct scores), which moves them by ~1e-16."""
    trapezoid = average_precision = 0.0
    lower = 0  # lesion pixels scoring below the run
    for lo in range(0, r.lesion.size, _CHUNK):
        lesion, run = r.lesion[lo:lo + _CHUNK], slice(lo, lo + _CHUNK)
        up_to = np.cumsum(lesion)  # the run's lesion pixels scoring ≤ each value
        tp = (r.n1 - lower) - up_to
        tp += lesion  # lesion pixels scoring ≥ each value
        lower += int(up_to[-1])
        scored = r.n0 - r.below[run]
        scored += tp  # pixels scoring ≥ each value
        precision = tp / scored
        step = lesion / r.n1
        area = step * precision
        average_precision += float(np.sum(area))
        tp -= lesion  # now strictly above each value, as are (after the next line) the pixels
        scored -= lesion
        scored -= r.tied[run]
        area.fill(1.0)
        np.divide(tp, scored, out=area, where=scored > 0)
        area += precision
        area /= 2
        area *= step
        trapezoid += float(np.sum(area))
    return trapezoid, max(0.0, average_precision)


def _ranked(saliency, truth, size) -> tuple[np.ndarray, np.ndarray]:
    t = _mask(truth, "ground-truth mask")
    m = _prepare(saliency, size or t.shape)
    _same(m, t)
    return m, t


def roc_auc(saliency, truth, *, size: tuple[int, int] | None = None) -> float:
    """ROC AUC of the map's pixel ranking against the mask (the thesis's explanation AUC).

    Parameters
    ----------
    saliency : (h, w) array_like
        Finite saliency map (the score).
    truth : (H, W) array_like of bool or 0/1
        Ground-truth mask (the label).
    size : (int, int), optional
        Evaluation resolution; the mask's shape by default (the map is upsampled bilinearly).

    Returns
    -------
    auc : float
        In [0, 1], 0.5 being chance; NaN when the mask is empty or full.

    Notes
    -----
    Every pixel is a sample (Bel Bordes 2023 flattens map and box mask to 1-D):
    AUC = P(s_i > s_j) + ½ P(s_i = s_j) for a lesion pixel i and a background pixel j, computed as the
    trapezoidal area under the ROC curve over distinct scores, equal to scikit-learn's
    ``roc_auc_score`` and to the Mann–Whitney statistic (Hanley & McNeil). A constant map gives 0.5.

    References
    ----------
    .. [1] Bel Bordes G. (2023) Fairness and Explainability in Chest X-ray Image Classifiers. MSc
           thesis, Utrecht University.
    .. [2] Hanley J.A., McNeil B.J. (1982) The meaning and use of the area under a receiver operating
           characteristic (ROC) curve. Radiology. doi:10.1148/radiology.143.1.7063747

    Examples
    --------
    >>> s = np.array([[0.9, 0.8, 0.3, 0.1]]); t = np.array([[1, 0, 1, 0]])
    >>> roc_auc(s, t), roc_auc(np.full((1, 4), 0.5), t), roc_auc(s, np.ones((1, 4)))
    (0.75, 0.5, nan)
    """
    m, t = _ranked(saliency, truth, size)
    if not t.any() or t.all():
        return float("nan")
    return _roc_from(_ranks(m, t))


def pr_auc(saliency, truth, *, variant: str = "trapezoid", size: tuple[int, int] | None = None) -> float:
    """Area under the precision–recall curve of the map's pixel ranking against the mask.

    Parameters
    ----------
    saliency, truth, size
        As in :func:`roc_auc`.
    variant : {"trapezoid", "average_precision"}
        Area rule (see Notes).

    Returns
    -------
    auc : float
        In [0, 1]; NaN for an empty mask.

    Notes
    -----
    At each distinct score (descending), precision P = TP / (TP + FP) and recall R = TP / (TP + FN);
    the curve ends at (R, P) = (0, 1) as scikit-learn's ``precision_recall_curve``.
    ``"trapezoid"`` (default) is Arun et al.'s ``auc(recall, precision)``,
    Σ_k (R_k − R_{k−1})(P_k + P_{k−1}) / 2; ``"average_precision"`` is scikit-learn's step-wise
    AP = Σ_k (R_k − R_{k−1}) P_k. The trapezoid is optimistic on ties: a constant map scores
    (1 + prevalence) / 2, AP the prevalence. A full mask scores 1.0.

    References
    ----------
    .. [1] Arun N. et al. (2021) Assessing the trustworthiness of saliency maps for localizing
           abnormalities in medical imaging. Radiol. Artif. Intell. doi:10.1148/ryai.2021200267

    Examples
    --------
    >>> s = np.array([[0.9, 0.8, 0.3, 0.1]]); t = np.array([[1, 0, 1, 0]])
    >>> pr_auc(s, t), pr_auc(s, t, variant="average_precision")
    (0.7916666666666666, 0.8333333333333333)
    >>> c = np.full((1, 4), 0.5)  # prevalence 1/2
    >>> pr_auc(c, t), pr_auc(c, t, variant="average_precision")
    (0.75, 0.5)
    """
    if variant not in PR_VARIANTS:
        raise UnknownNameError("PR AUC variant", variant, PR_VARIANTS)
    m, t = _ranked(saliency, truth, size)
    if not t.any():
        return float("nan")
    return _pr_from(_ranks(m, t), variant)


def ranking_metrics(saliency, truth, *, size: tuple[int, int] | None = None) -> dict[str, float]:
    """:func:`roc_auc` and both :func:`pr_auc` variants from one sort of the pixels.

    Parameters
    ----------
    saliency, truth, size
        As in :func:`roc_auc`.

    Returns
    -------
    metrics : dict
        ``{"roc_auc", "pr_auc" (trapezoid), "ap" (average precision)}``: what a precompute scores for
        every map.

    Notes
    -----
    Same formulas and conventions as :func:`roc_auc` (the thesis's explanation AUC) and :func:`pr_auc`
    (Arun et al.'s trapezoid, and average precision). All NaN for an empty mask; ROC AUC also NaN for a
    full one (both PR values are then 1.0).

    References
    ----------
    .. [1] Bel Bordes G. (2023) Fairness and Explainability in Chest X-ray Image Classifiers. MSc
           thesis, Utrecht University.
    .. [2] Arun N. et al. (2021) Assessing the trustworthiness of saliency maps for localizing
           abnormalities in medical imaging. Radiol. Artif. Intell. doi:10.1148/ryai.2021200267

    Examples
    --------
    >>> ranking_metrics(np.array([[0.9, 0.8, 0.3, 0.1]]), np.array([[1, 0, 1, 0]]))
    {'roc_auc': 0.75, 'pr_auc': 0.7916666666666666, 'ap': 0.8333333333333333}
    """
    return ranking_from_sorted(*_ranked(saliency, truth, size))


def ranking_from_sorted(m: np.ndarray, t: np.ndarray, ordered: np.ndarray | LabelledSort | None = None
                        ) -> dict[str, float]:
    """:func:`ranking_metrics` of a checked map ``m`` and bool mask ``t`` of one shape, reusing the map's
    values already sorted when given (``np.sort(m, axis=None)``, or its
    :func:`~cxrxai.metrics.labelled_sort.labelled_sort` against ``t``): the sort
    :class:`~cxrxai.metrics.registry.Scored` shares with the Otsu segmentation."""
    if not t.any():
        return {"roc_auc": float("nan"), "pr_auc": float("nan"), "ap": float("nan")}
    r = _ranks(m, t, ordered)
    trapezoid, average_precision = _pr_areas(r)
    return {"roc_auc": float("nan") if t.all() else _roc_from(r), "pr_auc": trapezoid,
            "ap": average_precision}


register(Metric(
    "roc_auc", "AUC", lambda s: s.ranking["roc_auc"], "ranking",
    "explanation AUC: how well map values rank lesion pixels above the rest (0.5 = chance)",
    THESIS, views=("table1", "ranking", "sweep", "subgroups", "cases"),
))
register(Metric(
    "pr_auc", "PR AUC", lambda s: s.ranking["pr_auc"], "ranking",
    "area under the pixel precision–recall curve (trapezoidal)",
    ARUN, conventions=("trapezoid",), views=("utility",),
))
register(Metric(
    "ap", "Average precision", lambda s: s.ranking["ap"], "ranking",
    "average precision of the pixel ranking",
    ARUN, conventions=("average_precision",), views=("utility",),
))
