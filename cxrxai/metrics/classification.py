"""Classifier performance: ROC AUC per label, with a seeded bootstrap confidence interval."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score

from ..errors import MetricError

__all__ = ["auroc", "auroc_ci", "bootstrap_aurocs"]


def auroc(y_true, score) -> float:
    """Area under the ROC curve (NaN when ``y_true`` lacks positives or negatives).

    >>> auroc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    y, s = _check(y_true, score)
    if y.min(initial=1) == y.max(initial=0):
        return float("nan")
    return float(roc_auc_score(y, s))


def bootstrap_aurocs(y: np.ndarray, s: np.ndarray, *, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """AUROC of ``n_boot`` case-resampled replicates, all at once.

    Resampling with replacement gives each case a count c_i; a replicate's AUROC is the
    Mann–Whitney statistic with those weights: Σ_pos c_i (negatives below s_i + ½ tied) /
    (C_pos C_neg). Scores are sorted once and tie groups summed with ``reduceat``, so the
    replicates cost a few passes over a (n_boot × n) count matrix instead of n_boot sorts.
    Replicates that draw a single class are NaN.
    """
    n = len(y)
    rng = np.random.default_rng(seed)
    order = np.argsort(s, kind="stable")
    ys, ss = y[order], s[order]
    starts = np.flatnonzero(np.r_[True, ss[1:] != ss[:-1]])
    rank_of = np.empty(n, np.int64)
    rank_of[order] = np.arange(n)
    draws = rank_of[rng.integers(0, n, (n_boot, n))]
    counts = np.bincount((draws + (np.arange(n_boot) * n)[:, None]).ravel(), minlength=n_boot * n).reshape(n_boot, n)
    pos = np.add.reduceat(counts * (ys == 1), starts, axis=1).astype(np.float64)
    neg = np.add.reduceat(counts * (ys == 0), starts, axis=1).astype(np.float64)
    below = np.cumsum(neg, axis=1) - neg
    p_tot, n_tot = pos.sum(1), neg.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((p_tot > 0) & (n_tot > 0), (pos * (below + 0.5 * neg)).sum(1) / (p_tot * n_tot), np.nan)


def auroc_ci(y_true, score, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """``(auroc, lower, upper)``: percentile bootstrap over cases (resampled with replacement).

    Replicates that draw a single class are skipped; the interval is NaN when fewer than half
    of the replicates are usable.
    """
    y, s = _check(y_true, score)
    point = auroc(y, s)
    if np.isnan(point):
        return point, float("nan"), float("nan")
    reps = bootstrap_aurocs(y, s, n_boot=n_boot, seed=seed)
    reps = reps[np.isfinite(reps)]
    if len(reps) < n_boot / 2:
        return point, float("nan"), float("nan")
    alpha = (1 - level) / 2
    lo, hi = np.quantile(reps, [alpha, 1 - alpha])
    return point, float(lo), float(hi)


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
