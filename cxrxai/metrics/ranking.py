"""Ranking metrics: how well the map's values rank ground-truth pixels above the rest.

Part of :mod:`cxrxai.metrics.localization` (which re-exports these); conventions there.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import auc as trapezoid_auc
from sklearn.metrics import confusion_matrix_at_thresholds

from ..errors import UnknownNameError
from ._maps import _mask, _prepare, _same

__all__ = ["PR_VARIANTS", "pr_auc", "ranking_metrics", "roc_auc"]

PR_VARIANTS = ("trapezoid", "average_precision")


def _curve(m: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """False and true positive counts at each distinct score, highest first (one sort)."""
    _, fps, _, tps, _ = confusion_matrix_at_thresholds(t.ravel(), m.ravel())
    return np.asarray(fps, np.float64), np.asarray(tps, np.float64)


def _roc_from(fps: np.ndarray, tps: np.ndarray) -> float:
    return float(trapezoid_auc(np.r_[0.0, fps] / fps[-1], np.r_[0.0, tps] / tps[-1]))


def _pr_from(fps: np.ndarray, tps: np.ndarray, variant: str) -> float:
    # scikit-learn's precision_recall_curve: recall decreasing, ending at (recall 0, precision 1).
    precision = np.r_[(tps / (tps + fps))[::-1], 1.0]
    recall = np.r_[(tps / tps[-1])[::-1], 0.0]
    if variant == "average_precision":
        return float(max(0.0, -np.sum(np.diff(recall) * precision[:-1])))
    return float(trapezoid_auc(recall, precision))


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
    return _roc_from(*_curve(m, t))


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
    return _pr_from(*_curve(m, t), variant)


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
    m, t = _ranked(saliency, truth, size)
    if not t.any():
        return {"roc_auc": float("nan"), "pr_auc": float("nan"), "ap": float("nan")}
    fps, tps = _curve(m, t)
    return {"roc_auc": float("nan") if t.all() else _roc_from(fps, tps), "pr_auc": _pr_from(fps, tps, "trapezoid"),
            "ap": _pr_from(fps, tps, "average_precision")}
