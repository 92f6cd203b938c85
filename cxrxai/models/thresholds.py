"""Per-label decision thresholds chosen on a validation split.

``f1`` follows CheXclusion / Underdiagnosis (Seyyed-Kalantari et al. 2021): the threshold of
``sklearn.metrics.precision_recall_curve`` that maximises F1, the first one on ties, applied as
``probability >= threshold``. ``youden`` maximises Youden's J = TPR − FPR on the ROC curve
(first maximum), applied the same way.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data.adapters._base import read_csv, unit_interval
from ..errors import DataError, UnknownNameError

__all__ = ["METHODS", "choose_threshold", "read_threshold_file"]

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
    from sklearn.metrics import precision_recall_curve, roc_curve  # here: 0.9 s to import

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


def read_threshold_file(path: str | Path) -> dict[str, float]:
    """Per-label thresholds from a CSV with a ``label`` column and a ``threshold`` column (or
    ``bestthr``, as CheXclusion's ``Threshold.csv`` names it), each a number in [0, 1].

    Raises :class:`DataError` naming the file, row and column of the first bad value, or the
    columns found when the needed ones are missing.
    """
    table = read_csv(path)
    col = next((c for c in ("threshold", "bestthr") if c in table), None)
    if "label" not in table or col is None:
        raise DataError(f"{path}: needs 'label' and 'threshold' (or 'bestthr') columns; "
                        f"found {list(table.columns)}")
    labels = table["label"].astype(str)
    if labels.duplicated().any():
        raise DataError(f"{path}: label {labels[labels.duplicated()].iloc[0]!r} has two thresholds")
    return dict(zip(labels, unit_interval(table, [col], str(path))[:, 0].tolist()))
