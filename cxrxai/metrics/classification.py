"""Classifier performance: ROC AUC per label, with a seeded bootstrap confidence interval."""

from __future__ import annotations

import numpy as np

from ..errors import MetricError
from ..stats import MIN_CI_N

__all__ = ["auprc_ci", "auroc", "auroc_ci", "bootstrap_aurocs", "roc_points"]


def auroc(y_true, score) -> float:
    """Area under the ROC curve of one label's scores (NaN when ``y_true`` lacks positives or negatives).

    Parameters
    ----------
    y_true : (n,) array_like
        Labels 1/0; NaN (missing or uncertain) labels are dropped with their scores.
    score : (n,) array_like
        Finite scores (e.g. probabilities), higher meaning positive.

    Returns
    -------
    auc : float
        In [0, 1], 0.5 being chance.

    Notes
    -----
    AUC = P(s⁺ > s⁻) + ½ P(s⁺ = s⁻) = U / (n₊ n₋), the Mann–Whitney statistic over all positive–negative
    pairs (Hanley & McNeil), computed by scikit-learn's ``roc_auc_score``. A single class after dropping
    missing labels gives NaN. NaN scores, labels other than 0/1 or unequal lengths raise
    :class:`~cxrxai.errors.MetricError`.

    References
    ----------
    .. [1] Hanley J.A., McNeil B.J. (1982) The meaning and use of the area under a receiver operating
           characteristic (ROC) curve. Radiology. doi:10.1148/radiology.143.1.7063747

    Examples
    --------
    >>> auroc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])  # 3 of 4 pairs ordered
    0.75
    >>> auroc([0, 1, np.nan], [0.2, 0.2, 0.9]), auroc([1, 1], [0.2, 0.3])  # a tie counts ½
    (0.5, nan)
    """
    y, s = _check(y_true, score)
    if len(y) == 0 or y.min() == y.max():  # no labelled case, or one class only
        return float("nan")
    from sklearn.metrics import roc_auc_score  # here: scikit-learn costs a process 0.9 s to import

    return float(roc_auc_score(y, s))


def bootstrap_aurocs(y: np.ndarray, s: np.ndarray, *, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """AUROC of ``n_boot`` case-resampled replicates, all at once.

    Parameters
    ----------
    y : (n,) ndarray of int
        Labels 0/1, already checked (as :func:`auroc_ci` passes them; not validated here).
    s : (n,) ndarray of float
        Scores.
    n_boot, seed : int
        Number of replicates; seed of ``np.random.default_rng``.

    Returns
    -------
    aurocs : (n_boot,) ndarray
        One AUROC per replicate; NaN for a replicate that drew a single class.

    Notes
    -----
    Resampling with replacement gives each case a count c_i; a replicate's AUROC is the Mann–Whitney
    statistic with those weights: Σ_pos c_i (negatives below s_i + ½ tied) / (C_pos C_neg), equal to
    ``roc_auc_score`` on the resampled cases. Scores are sorted once and tie groups summed with
    ``reduceat``, so the replicates cost a few passes over a (n_boot × n) count matrix instead of n_boot
    sorts.

    References
    ----------
    .. [1] Hanley J.A., McNeil B.J. (1982) The meaning and use of the area under a receiver operating
           characteristic (ROC) curve. Radiology. doi:10.1148/radiology.143.1.7063747

    Examples
    --------
    >>> reps = bootstrap_aurocs(np.array([0, 0, 1, 1]), np.array([0.1, 0.2, 0.8, 0.9]), n_boot=200)
    >>> reps.shape, np.unique(reps[np.isfinite(reps)]).tolist()  # separable: every usable replicate is 1
    ((200,), [1.0])
    """
    n = len(y)
    rng = np.random.default_rng(seed)
    order = np.argsort(s, kind="stable")
    ys, ss = y[order], s[order]
    starts = np.flatnonzero(np.r_[True, ss[1:] != ss[:-1]])
    rank_of = np.empty(n, np.int64)
    rank_of[order] = np.arange(n)
    draws = rank_of[rng.integers(0, n, (n_boot, n))]
    counts = np.bincount((draws + (np.arange(n_boot) * n)[:, None]).ravel(), minlength=n_boot * n).reshape(
        n_boot, n
    )
    pos = np.add.reduceat(counts * (ys == 1), starts, axis=1).astype(np.float64)
    neg = np.add.reduceat(counts * (ys == 0), starts, axis=1).astype(np.float64)
    below = np.cumsum(neg, axis=1) - neg
    p_tot, n_tot = pos.sum(1), neg.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            (p_tot > 0) & (n_tot > 0), (pos * (below + 0.5 * neg)).sum(1) / (p_tot * n_tot), np.nan
        )


def auroc_ci(
    y_true, score, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float]:
    """``(auroc, lower, upper)``: percentile bootstrap over cases (resampled with replacement).

    Parameters
    ----------
    y_true, score : (n,) array_like
        As in :func:`auroc` (NaN labels dropped).
    n_boot, seed : int
        Number of replicates (1,000) and their seed.
    level : float
        Coverage of the interval (0.95).

    Returns
    -------
    auroc, lower, upper : float
        The point estimate on all cases and the interval's bounds.

    Notes
    -----
    Replicates are drawn by :func:`bootstrap_aurocs`; the bounds are the (1 − level)/2 and (1 + level)/2
    quantiles (``np.quantile``, linear interpolation) of the usable replicates. Replicates that draw a
    single class are skipped; the interval is NaN when fewer than half of the replicates are usable or
    either class has fewer than ``stats.MIN_CI_N`` (5) cases, and all three values are NaN when the
    point AUROC is.

    References
    ----------
    .. [1] Hanley J.A., McNeil B.J. (1982) The meaning and use of the area under a receiver operating
           characteristic (ROC) curve. Radiology. doi:10.1148/radiology.143.1.7063747

    Examples
    --------
    >>> auroc_ci([0] * 5 + [1] * 5, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    (1.0, 1.0, 1.0)
    >>> auroc_ci([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9])  # two cases a class: no interval
    (1.0, nan, nan)
    >>> auroc_ci([1, 1, 1], [0.1, 0.2, 0.3])
    (nan, nan, nan)
    """
    y, s = _check(y_true, score)
    point = auroc(y, s)
    if np.isnan(point) or min(int(y.sum()), int(len(y) - y.sum())) < MIN_CI_N:
        return point, float("nan"), float("nan")
    reps = bootstrap_aurocs(y, s, n_boot=n_boot, seed=seed)
    reps = reps[np.isfinite(reps)]
    if len(reps) < n_boot / 2:
        return point, float("nan"), float("nan")
    alpha = (1 - level) / 2
    lo, hi = np.quantile(reps, [alpha, 1 - alpha])
    return point, float(lo), float(hi)


def auprc_ci(y_true, score) -> tuple[float, float, float]:
    """``(auprc, lower, upper)``: the area under the precision–recall curve as average precision
    (scikit-learn's ``average_precision_score``, the step-wise sum Σ (Rₙ − Rₙ₋₁) Pₙ) with the logit
    95 % interval of Boyd et al.: logit(AP) ± 1.96 / √(n₊ · AP · (1 − AP)), transformed back.

    NaN without both classes; no interval from fewer than ``stats.MIN_CI_N`` positives or an AP of
    exactly 0 or 1. Chance level is the prevalence n₊ / n, not 0.5.

    References
    ----------
    .. [1] Boyd K., Eng K.H., Page C.D. (2013) Area under the precision-recall curve: point estimates and
           confidence intervals. ECML PKDD. doi:10.1007/978-3-642-40994-3_29

    Examples
    --------
    >>> [round(v, 4) for v in auprc_ci([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])]
    [0.8333, nan, nan]
    """
    y, s = _check(y_true, score)
    n_pos = int(y.sum())
    if len(y) == 0 or y.min() == y.max():
        return float("nan"), float("nan"), float("nan")
    from sklearn.metrics import average_precision_score

    ap = float(average_precision_score(y, s))
    if n_pos < MIN_CI_N or not 0 < ap < 1:
        return ap, float("nan"), float("nan")
    logit, half = np.log(ap / (1 - ap)), 1.959964 / np.sqrt(n_pos * ap * (1 - ap))
    return ap, float(1 / (1 + np.exp(-(logit - half)))), float(1 / (1 + np.exp(-(logit + half))))


def roc_points(y_true, score) -> tuple[np.ndarray, np.ndarray]:
    """The ROC curve's (FPR, TPR) corners (scikit-learn's ``roc_curve``, collinear points dropped);
    empty without both classes."""
    y, s = _check(y_true, score)
    if len(y) == 0 or y.min() == y.max():
        return np.empty(0), np.empty(0)
    from sklearn.metrics import roc_curve

    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=True)
    return fpr, tpr


def _check(y_true, score) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y_true, dtype=float)
    s = np.asarray(score, dtype=float)
    if y.shape != s.shape or y.ndim != 1:
        raise MetricError(f"labels and scores must be equal-length vectors, got {y.shape} and {s.shape}")
    if np.isnan(s).any():
        raise MetricError("scores contain NaN")
    keep = ~np.isnan(y)
    y, s = y[keep], s[keep]
    if not np.isin(y, (0, 1)).all():
        raise MetricError("labels must be 0/1 (missing labels are dropped)")
    return y.astype(int), s
