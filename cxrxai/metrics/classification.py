"""Classifier performance: ROC AUC per label, with a seeded bootstrap confidence interval."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score

from ..errors import MetricError

__all__ = ["auroc", "auroc_ci"]


def auroc(y_true, score) -> float:
    """Area under the ROC curve (NaN when ``y_true`` lacks positives or negatives).

    >>> auroc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    y, s = _check(y_true, score)
    if y.min(initial=1) == y.max(initial=0):
        return float("nan")
    return float(roc_auc_score(y, s))


def auroc_ci(y_true, score, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """``(auroc, lower, upper)``: percentile bootstrap over cases (resampled with replacement).

    Replicates that draw a single class are skipped; the interval is NaN when fewer than half
    of the replicates are usable.
    """
    y, s = _check(y_true, score)
    point = auroc(y, s)
    if np.isnan(point):
        return point, float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    n = len(y)
    stats = []
    for _ in range(n_boot):
        idx = rng.integers(0, n, n)
        yb = y[idx]
        if yb.min() != yb.max():
            stats.append(roc_auc_score(yb, s[idx]))
    if len(stats) < n_boot / 2:
        return point, float("nan"), float("nan")
    alpha = (1 - level) / 2
    lo, hi = np.quantile(stats, [alpha, 1 - alpha])
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
