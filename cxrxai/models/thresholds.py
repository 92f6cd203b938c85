"""Per-label decision thresholds chosen on a validation split, and the decision rule that applies them.

The rule (:func:`decide` for arrays, :func:`decision_sql` for the store's SQL, both from one
comparison): a case is called positive when ``probability >= threshold``, negative below it, and
undecided (missing) when the threshold or the probability is missing (NULL or NaN).

``f1`` follows CheXclusion / Underdiagnosis (Seyyed-Kalantari et al. 2021): the threshold of
``sklearn.metrics.precision_recall_curve`` that maximises F1, the first one on ties, applied as
``probability >= threshold``. ``youden`` maximises Youden's J = TPR − FPR on the ROC curve
(first maximum), applied the same way.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import DataError, UnknownNameError

__all__ = ["METHODS", "choose_threshold", "decide", "decision_sql", "read_threshold_file"]

METHODS = ("f1", "youden")

#: The decision rule's one comparison, as SQL writes it and as numpy computes it: a probability equal
#: to the threshold is a positive call (CheXclusion's ``probability >= threshold``).
_RULE_SQL, _RULE = ">=", np.greater_equal


def decide(prob, threshold) -> np.ndarray:
    """The decision for each case: 1.0 where ``prob >= threshold``, 0.0 below, NaN where the
    threshold or the probability is missing (None or NaN: no decision). Broadcasts like numpy.

    >>> decide([0.2, 0.5, 0.7, float("nan")], 0.5).tolist()
    [0.0, 1.0, 1.0, nan]
    >>> decide(1.0, None).tolist()
    nan
    """
    p, t = np.broadcast_arrays(np.asarray(prob, dtype=float), np.asarray(threshold, dtype=float))
    missing = np.isnan(p) | np.isnan(t)
    with np.errstate(invalid="ignore"):
        called = _RULE(p, t).astype(float)
    return np.where(missing, np.nan, called)


def decision_sql(prob_col: str, threshold_col: str) -> str:
    """The same rule as :func:`decide`, as a DuckDB expression over two columns: a ``TINYINT``
    1/0, NULL where either column is NULL or NaN (DuckDB orders NaN above every number, so a bare
    comparison would call a NaN probability positive).

    >>> decision_sql("p.prob", "t.threshold")  # doctest: +NORMALIZE_WHITESPACE
    'CASE WHEN t.threshold IS NULL OR isnan(t.threshold) OR p.prob IS NULL OR isnan(p.prob) THEN NULL
     ELSE (p.prob >= t.threshold)::TINYINT END'
    """
    missing = " OR ".join(f"{c} IS NULL OR isnan({c})" for c in (threshold_col, prob_col))
    return f"CASE WHEN {missing} THEN NULL ELSE ({prob_col} {_RULE_SQL} {threshold_col})::TINYINT END"


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
    from ..data.adapters._base import read_csv, unit_interval  # here: the store imports this module

    table = read_csv(path)
    col = next((c for c in ("threshold", "bestthr") if c in table), None)
    if "label" not in table or col is None:
        raise DataError(f"{path}: needs 'label' and 'threshold' (or 'bestthr') columns; "
                        f"found {list(table.columns)}")
    labels = table["label"].astype(str)
    if labels.duplicated().any():
        raise DataError(f"{path}: label {labels[labels.duplicated()].iloc[0]!r} has two thresholds")
    return dict(zip(labels, unit_interval(table, [col], str(path))[:, 0].tolist()))
