"""Per-label decision thresholds chosen on a validation split.

``f1`` follows CheXclusion / Underdiagnosis (Seyyed-Kalantari et al. 2021): the threshold of
``sklearn.metrics.precision_recall_curve`` that maximises F1, the first one on ties, applied as
``probability >= threshold``. ``youden`` maximises Youden's J = TPR − FPR on the ROC curve
(first maximum), applied the same way.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import precision_recall_curve, roc_curve

from ..errors import DataError, UnknownNameError

__all__ = ["METHODS", "choose_threshold"]

METHODS = ("f1", "youden")


def choose_threshold(y_true, prob, *, method: str = "f1") -> tuple[float, float]:
    """Return ``(threshold, criterion value)`` for one label.

    Raises :class:`DataError` when ``y_true`` lacks positives or negatives (no threshold can be
    chosen), so a caller never stores an arbitrary one silently.

    >>> choose_threshold([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    (0.35, 0.8)
    """
    if method not in METHODS:
        raise UnknownNameError("threshold method", method, METHODS)
    y = np.asarray(y_true).astype(int)
    p = np.asarray(prob, dtype=float)
    if y.shape != p.shape or y.ndim != 1:
        raise DataError(f"y_true and prob must be equal-length vectors, got {y.shape} and {p.shape}")
    if y.min(initial=1) == y.max(initial=0):
        raise DataError("a threshold needs both positive and negative validation cases")
    if method == "f1":
        precision, recall, thr = precision_recall_curve(y, p)
        with np.errstate(invalid="ignore", divide="ignore"):
            f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
        i = int(np.argmax(f1[:-1]))  # the last PR point has no threshold
        return float(thr[i]), float(f1[i])
    fpr, tpr, thr = roc_curve(y, p)
    j = tpr - fpr
    i = int(np.argmax(j[1:])) + 1  # the first ROC point is the +inf threshold
    return float(thr[i]), float(j[i])
