"""An explanation metric per demographic group (Bel Bordes 2023, thesis Fig. 5): the mean of a
per-case score (IoU, hit, AUC of map against mask) per label and group, with a bootstrap interval.

Kept apart from :mod:`.fairness`: those are a classifier's decisions counted per group (rates with
closed-form intervals); these are means of per-case explanation scores, resampled per group.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import MetricError
from ..stats import MIN_CI_N

__all__ = ["metric_by_group"]


def metric_by_group(
    cases: pd.DataFrame,
    metric: str,
    by: str | list[str],
    *,
    label: str = "label",
    n_boot: int = 1000,
    seed: int = 0,
    min_n: int = 5,
    expected: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Mean of a per-case explanation metric per label and group, with a bootstrap CI (thesis
    Fig. 5).

    Parameters
    ----------
    cases : DataFrame
        One row per case: the ``label`` column, the ``metric`` column (e.g. AUC, IoU, hit) and
        ``by``.
    metric : str
        Column to average.
    by : str or list of str
        Demographic columns; rows missing one are dropped (and not counted).
    label : str
        Name of the label column.
    n_boot, seed, min_n : int
        Bootstrap replicates and seed; groups with fewer than ``min_n`` finite values are ``small``.
    expected : DataFrame, optional
        The (``label``, *``by``) groups the summary must show: one without a case (e.g. a sex
        with no true positive of a finding) gets a row with ``n`` = 0 and a NaN mean instead of no
        row.

    Returns
    -------
    summary : DataFrame
        One row per (label, group): ``n``, ``n_nan``, ``mean``, ``lower``, ``upper``, ``small``.

    Notes
    -----
    mean = (1/n) Σ v_i over the group's finite values; NaN cases (e.g. IoU of an empty mask) are
    excluded and counted in ``n_nan``. [lower, upper] = percentiles 2.5 and 97.5 of ``n_boot``
    means of resamples with replacement (one generator for all groups, in sorted order). A group
    without finite values has a NaN mean; one with fewer than ``stats.MIN_CI_N`` (5) has NaN
    bounds (no interval from so few). A group of ``expected`` with no case at all has ``n`` =
    ``n_nan`` = 0 (never silently left out).

    References
    ----------
    .. [1] Bel Bordes G. (2023) Fairness and Explainability in Chest X-ray Image Classifiers.
           MSc thesis, Utrecht University.

    Examples
    --------
    >>> c = pd.DataFrame({"label": "Nodule", "sex": ["M", "M", "F", "F"],
    ...                   "iou": [0.2, 0.4, 0.6, np.nan]})
    >>> metric_by_group(c, "iou", "sex")[["sex", "n", "n_nan", "mean", "lower", "upper"]]
      sex  n  n_nan  mean  lower  upper
    0   F  1      1   0.6    NaN    NaN
    1   M  2      0   0.3    NaN    NaN
    >>> both = pd.DataFrame({"label": "Nodule", "sex": ["F", "M", "X"]})
    >>> metric_by_group(c, "iou", "sex", expected=both)[["sex", "n", "mean"]]
      sex  n  mean
    0   F  1   0.6
    1   M  2   0.3
    2   X  0   NaN
    """
    by = [by] if isinstance(by, str) else list(by)
    missing = [c for c in (label, metric, *by) if c not in cases.columns]
    if missing:
        raise MetricError(f"the case table lacks columns {missing}")
    keys = [label, *by]
    rng = np.random.default_rng(seed)
    rows = []
    for key, g in cases.dropna(subset=by).groupby(keys, sort=True):
        v = g[metric].to_numpy(float)
        v = v[np.isfinite(v)]
        lo, hi = _bootstrap_interval(v, n_boot, rng)
        rows.append({
            **dict(zip(keys, key)),
            "n": len(v),
            "n_nan": int(len(g) - len(v)),
            "mean": float(v.mean()) if len(v) else np.nan,
            "lower": lo,
            "upper": hi,
            "small": len(v) < min_n,
        })
    out = pd.DataFrame(rows, columns=[*keys, "n", "n_nan", "mean", "lower", "upper", "small"])
    if expected is None:
        return out
    return _with_absent_groups(out, expected, keys)


def _bootstrap_interval(v: np.ndarray, n_boot: int, rng) -> tuple[float, float]:
    """Percentiles 2.5 and 97.5 of ``n_boot`` resampled means of ``v``; NaN for fewer than
    ``MIN_CI_N`` values. Drawn for every non-empty group, so that a group's interval does not
    depend on its neighbours' sizes."""
    if not len(v):
        return np.nan, np.nan
    boots = v[rng.integers(0, len(v), (n_boot, len(v)))].mean(axis=1)
    if len(v) < MIN_CI_N:
        return np.nan, np.nan
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return float(lo), float(hi)


def _with_absent_groups(out: pd.DataFrame, expected: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``out`` with a row (``n`` = 0, NaN mean, ``small``) for each ``expected`` group it lacks."""
    seen = set(out[keys].itertuples(index=False, name=None))
    wanted = expected[keys].drop_duplicates().itertuples(index=False, name=None)
    absent = [k for k in wanted if k not in seen]
    if not absent:
        return out
    empty = pd.DataFrame(
        [
            {
                **dict(zip(keys, k)),
                "n": 0,
                "n_nan": 0,
                "mean": np.nan,
                "lower": np.nan,
                "upper": np.nan,
                "small": True,
            }
            for k in absent
        ],
        columns=out.columns,
    )
    both = pd.concat([out, empty] if len(out) else [empty], ignore_index=True)
    return both.sort_values(keys, ignore_index=True)
