"""Tests that two groups, or two models, differ — each with its n, and a family to be corrected in.

* :func:`delong_paired` — two models' AUROCs on the *same* cases: DeLong, DeLong &
  Clarke-Pearson (1988), the structural components computed by midranks (Sun & Xu 2014).
* :func:`paired_rates` — two models' decisions on the same cases (TPR on the positives, FPR on
  the negatives): McNemar's test on the discordant pairs (exact binomial below 25 of them, else
  χ² with continuity correction, statsmodels), with a Wald interval of the paired difference.
* :func:`two_proportions` — one rate in two independent groups: the score test and Newcombe's
  hybrid score interval of the difference (statsmodels).
* :func:`adjust` — the family's correction: Holm (family-wise error, the default) or
  Benjamini–Hochberg (false discovery rate), over the tests with a p-value.

Where a test is undefined (a group with no case, no positive or no negative) its numbers are NaN,
never 0 or 1; two models that agree on every case get ``p = 1`` with a zero difference.

One module though past 300 lines: the tests every "differ" claim goes through and the correction
of their family, each a short function under its numpydoc (formula, reference, edge cases).
"""

from __future__ import annotations

import numpy as np
from scipy import stats as sps
from scipy.stats import rankdata

from ..errors import MetricError, UnknownNameError

__all__ = ["CORRECTIONS", "adjust", "delong_ci", "delong_paired", "paired_means", "paired_rates",
           "two_proportions"]

#: Family corrections: statsmodels ``multipletests`` names, and how a document names them.
CORRECTIONS = {"holm": "Holm (family-wise error rate)",
               "fdr_bh": "Benjamini–Hochberg (false discovery rate)"}
_Z = sps.norm.ppf(0.975)


def _components(pos: np.ndarray, neg: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """AUROC and DeLong's structural components V10 (one per positive) and V01 (one per negative)."""
    m, n = len(pos), len(neg)
    both = rankdata(np.concatenate([pos, neg]))
    within_pos, within_neg = rankdata(pos), rankdata(neg)
    v10 = (both[:m] - within_pos) / n  # the share of negatives each positive outranks (ties ½)
    v01 = 1.0 - (both[m:] - within_neg) / m  # the share of positives that outrank each negative
    return float(v10.mean()), v10, v01


def delong_paired(y, score_new, score_old) -> dict[str, float]:
    """DeLong's test of two correlated AUROCs (two models scored on the same cases).

    Parameters
    ----------
    y : (n,) array_like
        Labels 1/0 of the shared cases (missing labels must be dropped first).
    score_new, score_old : (n,) array_like
        Each model's finite score of the same case, in the same order (joined by case id).

    Returns
    -------
    dict
        ``new``, ``old`` (the AUROCs), ``diff`` (new − old), ``se``, ``lower``, ``upper`` (95 %),
        ``z``, ``p`` (two-sided), ``n_pos``, ``n_neg``. NaN without a positive and a negative;
        ``p = 1`` and a zero interval when the two models rank every pair alike.

    Notes
    -----
    AUC = mean of V10 = (1/mn) Σ ψ(Xᵢ, Yⱼ), ψ = 1 if x > y, ½ if equal. With S10, S01 the sample
    covariances (over positives, negatives) of both models' components, Var(Δ) = (S10₁₁ + S10₂₂ −
    2 S10₁₂)/m + (S01₁₁ + S01₂₂ − 2 S01₁₂)/n and z = Δ/√Var(Δ). Computed through midranks
    (Sun & Xu), equal to the pairwise definition (tested against it to 1e-12).

    References
    ----------
    .. [1] DeLong E.R., DeLong D.M., Clarke-Pearson D.L. (1988) Comparing the areas under two or more
           correlated receiver operating characteristic curves: a nonparametric approach. Biometrics
           44(3):837–845. doi:10.2307/2531595
    .. [2] Sun X., Xu W. (2014) Fast implementation of DeLong's algorithm for comparing the areas under
           correlated receiver operating characteristic curves. IEEE Signal Process. Lett. 21(11).
           doi:10.1109/LSP.2014.2337313

    Examples
    --------
    >>> r = delong_paired([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], [0.1, 0.4, 0.35, 0.8])
    >>> r["new"], r["diff"], r["p"]
    (0.75, 0.0, 1.0)
    """
    y = np.asarray(y, dtype=float)
    a, b = np.asarray(score_new, dtype=float), np.asarray(score_old, dtype=float)
    if not (len(y) == len(a) == len(b)) or not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise MetricError(
            f"DeLong needs finite scores of equal length; got {len(y)} labels, {len(a)} and {len(b)} scores"
        )
    if not np.isin(y, (0, 1)).all():
        raise MetricError("DeLong's labels must be 0/1 (drop missing labels first)")
    pos, neg = y == 1, y == 0
    m, n = int(pos.sum()), int(neg.sum())
    out = {"n_pos": m, "n_neg": n}
    if m == 0 or n == 0:
        nan = float("nan")
        return {
            **out,
            "new": nan,
            "old": nan,
            "diff": nan,
            "se": nan,
            "lower": nan,
            "upper": nan,
            "z": nan,
            "p": nan,
        }
    auc_a, v10_a, v01_a = _components(a[pos], a[neg])
    auc_b, v10_b, v01_b = _components(b[pos], b[neg])
    s10 = np.cov(np.vstack([v10_a, v10_b])) if m > 1 else np.zeros((2, 2))
    s01 = np.cov(np.vstack([v01_a, v01_b])) if n > 1 else np.zeros((2, 2))
    var = (s10[0, 0] + s10[1, 1] - 2 * s10[0, 1]) / m + (s01[0, 0] + s01[1, 1] - 2 * s01[0, 1]) / n
    diff, se = auc_a - auc_b, float(np.sqrt(max(var, 0.0)))
    if se == 0.0:
        z, p = (0.0, 1.0) if diff == 0 else (float("inf") * np.sign(diff), 0.0)
    else:
        z = diff / se
        p = float(2 * sps.norm.sf(abs(z)))
    return {
        **out,
        "new": auc_a,
        "old": auc_b,
        "diff": float(diff),
        "se": se,
        "lower": diff - _Z * se,
        "upper": diff + _Z * se,
        "z": float(z),
        "p": p,
    }


def delong_ci(y, score) -> tuple[float, float, float]:
    """``(auroc, lower, upper)``: one model's AUROC with DeLong's 95 % interval (its variance
    S10/m + S01/n from the structural components, as pROC's default ``ci.auc``), clipped to [0, 1];
    NaN without both classes, no interval from fewer than 5 cases of a class (``stats.MIN_CI_N``).
    O(n log n): the interval a bootstrap would take minutes for at MIMIC-CXR's size.

    Examples
    --------
    Positives 5, 6, 0, 1, 2 against negatives 0 … 4: 14.5 of 25 pairs ordered (ties ½).

    >>> [round(float(v), 4) for v in delong_ci([0, 0, 0, 0, 0, 1, 1, 1, 1, 1], np.arange(10) % 7)]
    [0.58, 0.1745, 0.9855]
    """
    from ..stats import MIN_CI_N

    y, s = np.asarray(y, dtype=float), np.asarray(score, dtype=float)
    pos, neg = y == 1, y == 0
    m, n = int(pos.sum()), int(neg.sum())
    if m == 0 or n == 0:
        return float("nan"), float("nan"), float("nan")
    auc, v10, v01 = _components(s[pos], s[neg])
    if min(m, n) < MIN_CI_N:
        return auc, float("nan"), float("nan")
    se = float(np.sqrt(v10.var(ddof=1) / m + v01.var(ddof=1) / n))
    return auc, float(max(0.0, auc - _Z * se)), float(min(1.0, auc + _Z * se))


def paired_rates(decided_new, decided_old) -> dict[str, float]:
    """Two models' decisions (1/0) on the same cases: the rate of each, the paired difference
    (new − old) with its 95 % Wald interval, and McNemar's test.

    On the positives of a finding this compares TPRs, on its negatives FPRs. Discordant pairs:
    ``b`` = old 1, new 0; ``c`` = old 0, new 1; diff = (c − b)/n, se = √(b + c − (c − b)²/n)/n.
    McNemar: exact binomial when b + c < 25, else χ² with continuity correction (statsmodels
    ``mcnemar``); no discordant pair gives p = 1.

    References
    ----------
    .. [1] McNemar Q. (1947) Note on the sampling error of the difference between correlated proportions
           or percentages. Psychometrika 12(2):153–157. doi:10.1007/BF02295996

    Examples
    --------
    >>> r = paired_rates([1, 1, 1, 0], [1, 0, 0, 0])
    >>> r["new"], r["old"], r["diff"], r["b"], r["c"], round(r["p"], 3)
    (0.75, 0.25, 0.5, 0, 2, 0.5)
    """
    a, o = np.asarray(decided_new, dtype=int), np.asarray(decided_old, dtype=int)
    if len(a) != len(o):
        raise MetricError(f"paired decisions need equal lengths; got {len(a)} and {len(o)}")
    n = len(a)
    b, c = int(((o == 1) & (a == 0)).sum()), int(((o == 0) & (a == 1)).sum())
    if n == 0:
        nan = float("nan")
        return {
            "n": 0,
            "new": nan,
            "old": nan,
            "diff": nan,
            "lower": nan,
            "upper": nan,
            "b": 0,
            "c": 0,
            "p": nan,
        }
    from statsmodels.stats.contingency_tables import mcnemar

    diff = (c - b) / n
    se = np.sqrt(max(b + c - (c - b) ** 2 / n, 0.0)) / n
    if b + c == 0:
        p = 1.0
    else:
        table = [[0, c], [b, 0]]  # only the discordant cells enter the statistic
        p = float(mcnemar(table, exact=b + c < 25, correction=True).pvalue)
    return {
        "n": n,
        "new": float(a.mean()),
        "old": float(o.mean()),
        "diff": float(diff),
        "lower": float(diff - _Z * se),
        "upper": float(diff + _Z * se),
        "b": b,
        "c": c,
        "p": min(p, 1.0),
    }


def paired_means(new, old) -> dict[str, float]:
    """Two models' scores of the same cases (a localization metric of each one's map of the same
    image and finding): the mean of each, the mean paired difference (new − old) with its 95 %
    t interval and the paired t-test's two-sided p (SciPy ``ttest_rel``). NaN from fewer than 2
    pairs; identical scores give p = 1.

    Examples
    --------
    >>> r = paired_means([0.5, 0.6, 0.7, 0.8], [0.4, 0.5, 0.5, 0.8])
    >>> round(r["diff"], 3), round(r["lower"], 3), round(r["upper"], 3), round(r["p"], 3)
    (0.1, -0.03, 0.23, 0.092)
    """
    a, o = np.asarray(new, dtype=float), np.asarray(old, dtype=float)
    n = len(a)
    if n != len(o):
        raise MetricError(f"paired scores need equal lengths; got {n} and {len(o)}")
    nan = float("nan")
    if n < 2:
        return {"n": n, "new": float(a.mean()) if n else nan, "old": float(o.mean()) if n else nan,
                "diff": float((a - o).mean()) if n else nan, "lower": nan, "upper": nan, "p": nan}
    d = a - o
    se = float(d.std(ddof=1) / np.sqrt(n))
    t = sps.t.ppf(0.975, n - 1)
    p = 1.0 if se == 0 and d.mean() == 0 else float(sps.ttest_rel(a, o).pvalue) if se else 0.0
    return {"n": n, "new": float(a.mean()), "old": float(o.mean()), "diff": float(d.mean()),
            "lower": float(d.mean() - t * se), "upper": float(d.mean() + t * se), "p": p}


def two_proportions(k1: int, n1: int, k2: int, n2: int) -> dict[str, float]:
    """Rate k1/n1 of one group against k2/n2 of another (independent): the difference, its 95 %
    Newcombe hybrid score interval (from each group's Wilson interval: defined at rates of 0 and 1,
    where the Miettinen–Nurminen inversion fails) and the two-sided p of the score test (statsmodels
    ``confint_proportions_2indep(method="newcomb")``, ``test_proportions_2indep(method="score")``).
    NaN when a group is empty; two rates both 0 or both 1 give p = 1.

    References
    ----------
    .. [1] Newcombe R.G. (1998) Interval estimation for the difference between independent proportions:
           comparison of eleven methods. Stat Med 17(8):873–890, method 10.
           doi:10.1002/(SICI)1097-0258(19980430)17:8<873::AID-SIM779>3.0.CO;2-I
    .. [2] Miettinen O., Nurminen M. (1985) Comparative analysis of two rates. Stat Med 4(2):213–226.

    Examples
    --------
    Newcombe's Table II, example (a), 56/70 − 48/80: 0.0524 to 0.3339.

    >>> r = two_proportions(56, 70, 48, 80)
    >>> round(r["diff"], 4), round(r["lower"], 4), round(r["upper"], 4), round(r["p"], 4)
    (0.2, 0.0524, 0.3339, 0.0083)
    """
    if n1 == 0 or n2 == 0:
        nan = float("nan")
        return {"diff": nan, "lower": nan, "upper": nan, "p": nan}
    from statsmodels.stats.proportion import confint_proportions_2indep, test_proportions_2indep

    lo, hi = confint_proportions_2indep(k1, n1, k2, n2, method="newcomb", compare="diff")
    with np.errstate(divide="ignore", invalid="ignore"):  # both rates 0 or 1: no variance, p below
        p = float(test_proportions_2indep(k1, n1, k2, n2, method="score", compare="diff").pvalue)
    if not np.isfinite(p):
        p = 1.0 if k1 * n2 == k2 * n1 else 0.0
    return {"diff": k1 / n1 - k2 / n2, "lower": float(lo), "upper": float(hi), "p": p}


def adjust(p, *, method: str = "holm", alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Family-corrected p-values and rejections of the tests in ``p`` (NaN entries are no test:
    they stay NaN, are not rejected and do not count in the family's size).

    Examples
    --------
    Holm by hand: sorted 0.01, 0.03, 0.04 times 3, 2, 1 → 0.03, 0.06, 0.04, made monotone → 0.06.

    >>> p_adj, reject = adjust([0.01, 0.04, float("nan"), 0.03])
    >>> [round(float(x), 2) for x in p_adj], reject.tolist()
    ([0.03, 0.06, nan, 0.06], [True, False, False, False])
    """
    if method not in CORRECTIONS:
        raise UnknownNameError("multiple-comparison correction", method, CORRECTIONS)
    p = np.asarray(p, dtype=float)
    out, reject = np.full(p.shape, np.nan), np.zeros(p.shape, dtype=bool)
    tested = np.isfinite(p)
    if tested.any():
        from statsmodels.stats.multitest import multipletests

        rej, p_adj, _, _ = multipletests(p[tested], alpha=alpha, method=method)
        out[tested], reject[tested] = p_adj, rej
    return out, reject
