"""Subgroup performance (CheXclusion / Underdiagnosis, Seyyed-Kalantari et al. 2021; the thesis).

:func:`subgroup_rates` takes the long prediction table (one row per image × label with
``ground_truth`` 1/0, ``predicted`` 1/0 and ``prob``, plus demographic columns) and returns,
per label and group: counts, TPR, FPR, FNR, PPV with confidence intervals, AUROC, and gaps.

* Rates: TPR = TP / (TP + FN), FPR = FP / (FP + TN), FNR = 1 − TPR, PPV = TP / (TP + FP);
  NaN when the denominator is 0 (never 0, unlike fairlearn's ``true_positive_rate``).
* Intervals: Wilson (default) or a per-group percentile bootstrap (seeded); AUROC (the
  Mann–Whitney statistic, equal to sklearn's) gets a Hanley–McNeil interval (closed form, fast
  enough for every click).
* ``n`` is reported with every rate; groups with fewer than ``min_n`` positives (for TPR/FNR)
  or negatives (for FPR) are flagged ``small`` — shown, never silently dropped.
* Gaps: ``gap_overall`` = group rate − the label's overall rate; ``gap_median`` = group rate −
  the median over the groups (CheXclusion's age gap); for a two-group attribute ``gap_other``
  = rate − the other group's rate (CheXclusion's sex gap).
* Underdiagnosis (:func:`underdiagnosis`): for the No Finding label, FPR = sick patients called
  healthy, FNR = healthy patients called sick, with #NNF / #PNF, rounded as the published CSVs.
* Missing demographics form no group (they are excluded from that grouping and counted in
  ``n_missing``).

The mean of a per-case explanation metric per group (thesis Fig. 5) is :mod:`.group_means`'s.
One module though past 300 lines: the underdiagnosis view is :func:`subgroup_rates` on one label,
and both change with how a group's decisions are counted, bounded and compared; half the lines
are the numpydoc (formulas, references, doctested examples).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from ..errors import MetricError, UnknownNameError
from ..labels import NO_FINDING
from ..stats import MIN_CI_N, wilson_cis

__all__ = ["CI_METHODS", "RATES", "subgroup_rates", "underdiagnosis"]

CI_METHODS = ("wilson", "bootstrap")
RATES = ("tpr", "fpr", "fnr", "ppv")
_NEEDED = ("label", "ground_truth", "predicted")

#: Each rate's numerator and denominator count.
_PARTS = {
    "tpr": ("tp", "n_pos"),
    "fpr": ("fp", "n_neg"),
    "fnr": ("fn", "n_pos"),
    "ppv": ("tp", "n_pred"),
}


def _check(table: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    missing = [c for c in (*_NEEDED, *by) if c not in table.columns]
    if missing:
        raise MetricError(
            f"the prediction table lacks columns {missing}; it has {list(table.columns)}"
        )
    t = table.dropna(subset=["ground_truth", "predicted"])
    if not t["ground_truth"].isin((0, 1)).all() or not t["predicted"].isin((0, 1)).all():
        raise MetricError("ground_truth and predicted must be 0/1")
    return t


def _hanley_mcneil(auc: float, n_pos: int, n_neg: int) -> tuple[float, float]:
    if not np.isfinite(auc) or n_pos == 0 or n_neg == 0:
        return float("nan"), float("nan")
    q1 = auc / (2 - auc)
    q2 = 2 * auc**2 / (1 + auc)
    variance = auc * (1 - auc) + (n_pos - 1) * (q1 - auc**2) + (n_neg - 1) * (q2 - auc**2)
    se = np.sqrt(max(variance, 0) / (n_pos * n_neg))
    return float(max(0.0, auc - 1.96 * se)), float(min(1.0, auc + 1.96 * se))


def _auroc(y: np.ndarray, prob: np.ndarray) -> float:
    """Mann–Whitney U / (n_pos · n_neg) from mid-ranks (ties count one half): sklearn's
    ``roc_auc_score`` exactly (tested), without its per-call validation (~6 ms a group)."""
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(prob)
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _rates(y: np.ndarray, p: np.ndarray, prob: np.ndarray | None, ci: str, n_boot: int,
           rng) -> dict:
    """Counts, rates and (bootstrap) intervals of one group; Wilson intervals are added for
    all groups at once by :func:`_add_wilson`."""
    tp = int(((y == 1) & (p == 1)).sum())
    fn = int(((y == 1) & (p == 0)).sum())
    fp = int(((y == 0) & (p == 1)).sum())
    tn = int(((y == 0) & (p == 0)).sum())
    out = {"n": len(y), "n_pos": tp + fn, "n_neg": fp + tn, "tp": tp, "fp": fp, "fn": fn, "tn": tn}
    counts = {**out, "n_pred": tp + fp}
    for name, (k, n) in _PARTS.items():
        out[name] = counts[k] / counts[n] if counts[n] else float("nan")
        if ci == "wilson":
            # filled by _add_wilson
            out[f"{name}_lower"] = float("nan")
            out[f"{name}_upper"] = float("nan")
    if ci == "bootstrap":
        out.update(_bootstrap_intervals(y, p, n_boot, rng))
    if prob is not None:
        auc = _auroc(y, prob)
        out["auroc"] = auc
        out["auroc_lower"], out["auroc_upper"] = _hanley_mcneil(auc, tp + fn, fp + tn)
    return out


def _bootstrap_intervals(y: np.ndarray, p: np.ndarray, n_boot: int, rng) -> dict[str, float]:
    """``{rate_lower, rate_upper}`` of every rate: percentiles 2.5 and 97.5 of ``n_boot``
    resamples of the group (replicates with an empty denominator skipped)."""
    reps: dict[str, list[float]] = {name: [] for name in _PARTS}
    for _ in range(n_boot):
        idx = rng.integers(0, len(y), len(y))
        yb, pb = y[idx], p[idx]
        for name, num, den in (
            ("tpr", (yb == 1) & (pb == 1), yb == 1),
            ("fpr", (yb == 0) & (pb == 1), yb == 0),
            ("fnr", (yb == 1) & (pb == 0), yb == 1),
            ("ppv", (yb == 1) & (pb == 1), pb == 1),
        ):
            d = den.sum()
            reps[name].append(num.sum() / d if d else np.nan)
    out = {}
    for name, r in reps.items():
        r = np.asarray(r, float)
        r = r[np.isfinite(r)]
        lo, hi = np.percentile(r, [2.5, 97.5]) if len(r) else (np.nan, np.nan)
        out[f"{name}_lower"] = float(lo)
        out[f"{name}_upper"] = float(hi)
    return out


def _add_wilson(rows: pd.DataFrame) -> pd.DataFrame:
    counts = {
        "tp": rows["tp"],
        "fp": rows["fp"],
        "fn": rows["fn"],
        "n_pos": rows["n_pos"],
        "n_neg": rows["n_neg"],
        "n_pred": rows["tp"] + rows["fp"],
    }
    for name, (k, n) in _PARTS.items():
        lower, upper = wilson_cis(counts[k].to_numpy(), counts[n].to_numpy())
        rows[f"{name}_lower"] = lower
        rows[f"{name}_upper"] = upper
    return rows


def subgroup_rates(table: pd.DataFrame, by: str | list[str] | None = None, *, labels=None,
                   ci: str = "wilson", n_boot: int = 1000, seed: int = 0,
                   min_n: int = 10) -> pd.DataFrame:
    """Rates per label for each group of ``by`` (e.g. "sex", "age_bin", ["sex", "age_bin"]).

    Parameters
    ----------
    table : DataFrame
        One row per image × label: ``label``, ``ground_truth`` and ``predicted`` (1/0; rows with
        either missing are dropped), optionally ``prob`` (for AUROC) and the ``by`` columns.
    by : str or list of str, optional
        Demographic columns; ``None`` gives the overall rows only (no gaps, no ``small``).
    labels : list of str, optional
        Restrict to these labels (an unknown one raises :class:`~cxrxai.errors.UnknownNameError`).
    ci : {"wilson", "bootstrap"}
        Interval of the rates; ``n_boot`` and ``seed`` drive the bootstrap.
    min_n : int
        A group with fewer positives or fewer negatives than this is flagged ``small``.

    Returns
    -------
    rates : DataFrame
        One row per (label, group): group columns, ``n``, ``n_pos``, ``n_neg``, tp/fp/fn/tn, each
        rate with ``_lower``/``_upper``, ``auroc`` (with ``prob``), ``n_missing``, gaps,
        ``small``.

    Notes
    -----
    TPR = TP/(TP+FN), FPR = FP/(FP+TN), FNR = 1 − TPR, PPV = TP/(TP+FP); NaN when the denominator
    is 0. 95% Wilson intervals, or percentiles 2.5/97.5 of a per-group bootstrap (NaN replicates
    skipped). AUROC is the Mann–Whitney statistic with a Hanley–McNeil 95% interval (clipped to
    [0, 1]). Gaps (CheXclusion): ``gap_overall`` = rate − the label's overall rate; ``gap_median``
    = rate − the median over groups (CheXclusion's age gap; NaN rates are skipped, which
    CheXclusion did not do); ``gap_other`` = rate − the other group's rate when there are exactly
    two groups (the sex gap). Rows missing a ``by`` value form no group and are counted in
    ``n_missing``.

    References
    ----------
    .. [1] Seyyed-Kalantari L. et al. (2021) CheXclusion: fairness gaps in deep chest X-ray
           classifiers. Pac. Symp. Biocomput.
    .. [2] Wilson E.B. (1927) Probable inference, the law of succession, and statistical
           inference. J. Am. Stat. Assoc. doi:10.1080/01621459.1927.10502953
    .. [3] Hanley J.A., McNeil B.J. (1982) The meaning and use of the area under a receiver
           operating characteristic (ROC) curve. Radiology. doi:10.1148/radiology.143.1.7063747

    Examples
    --------
    >>> t = pd.DataFrame({"label": "Cardiomegaly", "sex": list("MMMMFFFF"),
    ...                   "ground_truth": [1, 1, 0, 0, 1, 1, 0, 0],
    ...                   "predicted": [1, 0, 0, 1, 1, 1, 0, 0]})
    >>> r = subgroup_rates(t, "sex", min_n=2)
    >>> r[["sex", "n_pos", "tpr", "tpr_gap_other", "tpr_gap_overall", "fpr"]]
      sex  n_pos  tpr  tpr_gap_other  tpr_gap_overall  fpr
    0   F      2  1.0            0.5             0.25  0.0
    1   M      2  0.5           -0.5            -0.25  0.5
    >>> r["tpr_lower"].tolist()  # 2 positives a group: no interval (stats.MIN_CI_N)
    [nan, nan]
    """
    if ci not in CI_METHODS:
        raise UnknownNameError("confidence interval method", ci, CI_METHODS)
    by = [] if by is None else [by] if isinstance(by, str) else list(by)
    t = _check(table, by)
    if labels is not None:
        unknown = set(labels) - set(t["label"].unique())
        if unknown:
            raise UnknownNameError("label", sorted(unknown)[0], sorted(t["label"].unique()))
        t = t[t["label"].isin(labels)]
    rng = np.random.default_rng(seed)
    has_prob = "prob" in t.columns

    def rates(g: pd.DataFrame) -> dict:
        prob = g["prob"].to_numpy(float) if has_prob else None
        y = g["ground_truth"].to_numpy(int)
        return _rates(y, g["predicted"].to_numpy(int), prob, ci, n_boot, rng)

    rows = []
    for label, lab in t.groupby("label", sort=True):
        overall = rates(lab)
        if not by:
            rows.append({"label": label, **overall})
            continue
        known = lab.dropna(subset=by)
        group_rows = []
        for key, g in known.groupby(by, sort=True):
            key = key if isinstance(key, tuple) else (key,)
            group_rows.append({
                "label": label,
                **dict(zip(by, key)),
                **rates(g),
                "n_missing": len(lab) - len(known),
            })
        _add_gaps(group_rows, overall)
        for r in group_rows:
            r["small"] = bool(min(r["n_pos"], r["n_neg"]) < min_n)
        rows += group_rows
    out = pd.DataFrame(rows)
    if ci == "wilson" and len(out):
        out = _add_wilson(out)
    return _floor_intervals(out)


def _add_gaps(group_rows: list[dict], overall: dict) -> None:
    """Each group's gap to the label's overall rate, to the median over the groups and (two
    groups) to the other group, for every rate (CheXclusion's gaps)."""
    for name in RATES:
        vals = np.array([r[name] for r in group_rows], float)
        med = float(np.nanmedian(vals)) if np.isfinite(vals).any() else float("nan")
        for r in group_rows:
            r[f"{name}_gap_overall"] = r[name] - overall[name]
            r[f"{name}_gap_median"] = r[name] - med
            if len(group_rows) == 2:
                other = next(o for o in group_rows if o is not r)
                r[f"{name}_gap_other"] = r[name] - other[name]


def _floor_intervals(rows: pd.DataFrame) -> pd.DataFrame:
    """No interval from fewer than ``stats.MIN_CI_N`` cases: a rate's bounds are NaN where its
    denominator is smaller, the AUROC's where either class is."""
    if rows.empty:
        return rows
    counts = rows.assign(n_pred=rows["tp"] + rows["fp"])
    dens = {name: counts[n] for name, (_, n) in _PARTS.items()}  # each rate's own denominator
    if "auroc_lower" in rows:
        dens["auroc"] = np.minimum(rows["n_pos"], rows["n_neg"])
    for name, den in dens.items():
        if f"{name}_lower" in rows:
            few = den.to_numpy() < MIN_CI_N
            rows.loc[few, [f"{name}_lower", f"{name}_upper"]] = np.nan
    return rows


def underdiagnosis(table: pd.DataFrame, by: str | list[str], *, label: str = NO_FINDING,
                   decimals: int | None = 3, **kwargs) -> pd.DataFrame:
    """No Finding FPR (underdiagnosis) and FNR (overdiagnosis) per group, with #NNF and #PNF.

    Parameters
    ----------
    table : DataFrame
        The long prediction table of :func:`subgroup_rates`.
    by : str or list of str
        Demographic columns (e.g. "sex", "age_bin", or both for intersections).
    label : str
        The "no finding" label, ``"No Finding"`` by default.
    decimals : int or None
        Rounding of ``fpr`` and ``fnr`` (not of their bounds); 3, as the published CSVs; None
        keeps all.
    **kwargs
        Passed to :func:`subgroup_rates` (``ci``, ``n_boot``, ``seed``, ``min_n``).

    Returns
    -------
    rates : DataFrame
        The ``by`` columns, ``n_NNF`` (NF = 0), ``n_PNF`` (NF = 1), ``fpr`` and ``fnr`` with bounds,
        ``small``.

    Notes
    -----
    FPR = |predicted NF ∧ NF = 0| / |NF = 0| (sick patients called healthy: underdiagnosis);
    FNR = |not predicted NF ∧ NF = 1| / |NF = 1|, as ``FPRFNR.py`` of Seyyed-Kalantari et al.'s
    Underdiagnosis repository; NaN for an empty denominator. ``decimals=3`` rounds as its CSVs.

    References
    ----------
    .. [1] Seyyed-Kalantari L. et al. (2021) Underdiagnosis bias of artificial intelligence
           algorithms applied to chest radiographs in under-served patient populations. Nat. Med.
           doi:10.1038/s41591-021-01595-0

    Examples
    --------
    >>> t = pd.DataFrame({"label": "No Finding", "sex": list("MMMMFFFF"),
    ...                   "ground_truth": [0, 0, 1, 1, 0, 0, 0, 1],
    ...                   "predicted": [1, 0, 1, 1, 0, 0, 0, 0]})
    >>> underdiagnosis(t, "sex")[["sex", "n_NNF", "n_PNF", "fpr", "fnr"]]
      sex  n_NNF  n_PNF  fpr  fnr
    0   F      3      1  0.0  1.0
    1   M      2      2  0.5  0.0
    """
    rates = subgroup_rates(table, by, labels=[label], **kwargs)
    keep = ([by] if isinstance(by, str) else list(by)) + [
        "n_neg",
        "n_pos",
        "fpr",
        "fpr_lower",
        "fpr_upper",
        "fnr",
        "fnr_lower",
        "fnr_upper",
        "small",
    ]
    out = rates[keep].rename(columns={"n_neg": "n_NNF", "n_pos": "n_PNF"})
    if decimals is not None:
        for c in ("fpr", "fnr"):
            out[c] = out[c].round(decimals)
    return out
