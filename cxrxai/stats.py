"""Statistics of the papers' tables, over statsmodels and SciPy.

* :func:`bootstrap_table` — Saporta et al.'s 95 % CIs: 1,000 replicates resampling *cases*
  (rows) with replacement, jointly for all labels (CheXlocalize's ``eval.py``: legacy NumPy
  ``seed(0)`` + ``choice``; statistic = NaN-skipping mean; bounds at sorted indices 24 and 974;
  reported mean = mean of replicate means). ``joint=False`` resamples each label separately;
  ``bounds="percentile"`` uses ``np.percentile`` instead of the fixed indices.
* :func:`percentage_decrease` — % decrease from a human benchmark to the saliency method with a
  paired bootstrap (replicate i of both uses the same resampled cases).
* :func:`ols`, :func:`feature_regressions` — single-predictor OLS with the predictor min–max
  normalised (CheXlocalize's code) or z-scored (the paper's text), 95 % CI, and
  Bonferroni-adjusted p (stars at p < 0.05/k, 0.01/k, 0.001/k as CheXlocalize; the CIs stay
  unadjusted, as printed there).
* :func:`spearman_ci` — Spearman's ρ with a Fisher-z 95 % CI (se = 1/√(n − 3)).
* :func:`confidence_regressions` — metric ~ model probability per label and pooled (Table 2).
* :func:`wilson_ci` — Wilson score interval for a proportion (statsmodels).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from .errors import MetricError, UnknownNameError

__all__ = [
    "NORMALIZATIONS",
    "bootstrap_replicates",
    "MIN_CI_N",
    "bootstrap_table",
    "confidence_regressions",
    "feature_regressions",
    "ols",
    "ols_line",
    "percentage_decrease",
    "spearman_ci",
    "stars",
    "wilson_ci",
    "wilson_cis",
]

NORMALIZATIONS = ("minmax", "zscore", "none")


def bootstrap_replicates(df: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0, joint: bool = True,
                         statistic=np.nanmean) -> pd.DataFrame:
    """(n_boot × columns) replicate statistics of a cases × labels table."""
    if df.empty:
        raise MetricError("cannot bootstrap an empty table")
    rs = np.random.RandomState(seed)  # CheXlocalize: np.random.seed(0); np.random.choice(...)
    values = df.to_numpy(dtype=float)
    n = len(df)
    out = np.empty((n_boot, values.shape[1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN replicate columns → NaN, on purpose
        for b in range(n_boot):
            if joint:
                out[b] = statistic(values[rs.choice(n, n, replace=True)], axis=0)
            else:
                out[b] = [statistic(values[rs.choice(n, n, replace=True), j]) for j in range(values.shape[1])]
    return pd.DataFrame(out, columns=df.columns)


#: No interval is computed from fewer cases than this: its bounds are NaN (the table says why).
MIN_CI_N = 5


def bootstrap_table(df: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0, joint: bool = True,
                    bounds: str = "chexlocalize", min_n: int = MIN_CI_N) -> pd.DataFrame:
    """Per column: lower, mean, upper and the point estimate (NaN-skipping mean), with n; a column
    with fewer than ``min_n`` cases gets no interval (NaN bounds; CheXlocalize's own code has no
    such floor: ``min_n=1`` reproduces it)."""
    reps = bootstrap_replicates(df, n_boot=n_boot, seed=seed, joint=joint)
    rows = []
    for col in df.columns:
        r = reps[col].to_numpy()
        lo, hi = _bounds(r, bounds) if df[col].notna().sum() >= min_n else (float("nan"), float("nan"))
        rows.append({"name": col, "n": int(df[col].notna().sum()), "estimate": float(np.nanmean(df[col])),
                     "lower": lo, "mean": float(np.nanmean(r)), "upper": hi})
    return pd.DataFrame(rows)


def _bounds(r: np.ndarray, how: str) -> tuple[float, float]:
    r = r[np.isfinite(r)]
    if len(r) == 0:
        return float("nan"), float("nan")
    if how == "chexlocalize":
        s = np.sort(r)
        n = len(s)
        return float(s[max(int(0.025 * n) - 1, 0)]), float(s[max(int(0.975 * n) - 1, 0)])
    if how == "percentile":
        lo, hi = np.percentile(r, [2.5, 97.5])
        return float(lo), float(hi)
    raise UnknownNameError("bootstrap bounds", how, ("chexlocalize", "percentile"))


def percentage_decrease(benchmark: pd.DataFrame, method: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0,
                        bounds: str = "chexlocalize") -> pd.DataFrame:
    """% decrease from ``benchmark`` to ``method`` per label and on average, paired bootstrap CI.

    Both tables are cases × labels with the *same index* (joined by case id, never by order).
    Point value: (mean_bs(hb) − mean_bs(method)) / mean_bs(hb) · 100, CheXlocalize's
    ``calculate_percentage_decrease.py``; the "Average" row averages the labels per replicate. ``n``:
    the cases both scored (any label, for the average); no interval from fewer than :data:`MIN_CI_N`.
    """
    if not benchmark.index.equals(method.index) or list(benchmark.columns) != list(method.columns):
        common = benchmark.index.intersection(method.index)
        if len(common) == 0:
            raise MetricError("the benchmark and method tables share no case ids")
        labels = [c for c in method.columns if c in benchmark.columns]  # labels both readers scored
        if not labels:
            raise MetricError("the benchmark and method tables share no label")
        benchmark, method = benchmark.loc[common, labels], method.loc[common, labels]
    both = pd.concat({"hb": benchmark, "pred": method}, axis=1)
    reps = bootstrap_replicates(both, n_boot=n_boot, seed=seed, joint=True)
    hb, pred = reps["hb"], reps["pred"]
    scored = benchmark.notna() & method.notna()  # n: the cases both readers scored
    rows = []
    for col in list(method.columns) + ["Average"]:
        h = hb.mean(axis=1) if col == "Average" else hb[col]
        p = pred.mean(axis=1) if col == "Average" else pred[col]
        n = int(scored.any(axis=1).sum() if col == "Average" else scored[col].sum())
        lo, hi = _bounds((100 * (h - p) / h).to_numpy(), bounds) if n >= MIN_CI_N else (np.nan, np.nan)
        rows.append(
            {
                "name": col,
                "n": n,
                "decrease_pct": float(100 * (h.mean() - p.mean()) / h.mean()),
                "lower": lo,
                "upper": hi,
            }
        )
    return pd.DataFrame(rows)


def _normalize(x: pd.Series, how: str) -> pd.Series:
    if how == "minmax":
        span = x.max() - x.min()
        return (x - x.min()) / span if span > 0 else x  # CheXlocalize leaves a constant feature as is
    if how == "zscore":
        sd = x.std()
        return (x - x.mean()) / sd if sd > 0 else x - x.mean()
    if how == "none":
        return x
    raise UnknownNameError("normalization", how, NORMALIZATIONS)


def ols(df: pd.DataFrame, y: str, x: str, *, normalize: str = "minmax") -> dict:
    """``y ~ x`` by OLS after normalising x over the rows used; NaN rows dropped.

    Returns coef, lower, upper (95 %), p, n.
    """
    data = df[[y, x]].astype(float).dropna()
    if len(data) < MIN_CI_N or data[x].nunique() < 2:  # no estimate (nor interval) from fewer than 5 cases
        return {"coef": np.nan, "lower": np.nan, "upper": np.nan, "p": np.nan, "n": len(data)}
    data = data.assign(**{x: _normalize(data[x], normalize)})
    fit = smf.ols(f"Q('{y}') ~ Q('{x}')", data=data).fit()
    term = f"Q('{x}')"
    lo, hi = fit.conf_int(alpha=0.05).loc[term]
    return {
        "coef": float(fit.params[term]),
        "lower": float(lo),
        "upper": float(hi),
        "p": float(fit.pvalues[term]),
        "n": len(data),
    }


def ols_line(df: pd.DataFrame, y: str, x: str) -> tuple[float, float]:
    """``(intercept, slope)`` of ``y ~ x`` in raw units (for drawing the fitted line)."""
    data = df[[y, x]].astype(float).dropna()
    if len(data) < 2 or data[x].nunique() < 2:
        return float("nan"), float("nan")
    fit = smf.ols(f"Q('{y}') ~ Q('{x}')", data=data).fit()
    return float(fit.params["Intercept"]), float(fit.params[f"Q('{x}')"])


def stars(p: float, k: int = 1) -> str:
    """CheXlocalize's Bonferroni stars: *** p < 0.001/k, ** < 0.01/k, * < 0.05/k."""
    if not np.isfinite(p):
        return ""
    return "***" if p < 0.001 / k else "**" if p < 0.01 / k else "*" if p < 0.05 / k else ""


def feature_regressions(df: pd.DataFrame, y: str, features, *, normalize: str = "minmax") -> pd.DataFrame:
    """One single-feature regression per feature (Saporta Table 1), Bonferroni k = #features."""
    features = list(features)
    k = len(features)
    rows = []
    for f in features:
        r = ols(df, y, f, normalize=normalize)
        rows.append(
            {
                "outcome": y,
                "feature": f,
                **r,
                "p_bonferroni": min(1.0, r["p"] * k) if np.isfinite(r["p"]) else np.nan,
                "stars": stars(r["p"], k),
            }
        )
    return pd.DataFrame(rows)


def spearman_ci(x, y, *, level: float = 0.95) -> dict:
    """Spearman's ρ, its p-value and a Fisher-z interval (pairs with a NaN are dropped)."""
    a, b = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    n = len(a)
    if n < MIN_CI_N or np.unique(a).size < 2 or np.unique(b).size < 2:
        return {"rho": np.nan, "p": np.nan, "lower": np.nan, "upper": np.nan, "n": n}
    rho, p = sps.spearmanr(a, b)
    z = np.arctanh(np.clip(rho, -0.999999, 0.999999))
    half = sps.norm.ppf(0.5 + level / 2) / np.sqrt(n - 3)
    return {
        "rho": float(rho),
        "p": float(p),
        "lower": float(np.tanh(z - half)),
        "upper": float(np.tanh(z + half)),
        "n": n,
    }


def confidence_regressions(df: pd.DataFrame, metric: str, *, prob: str = "prob", label: str = "label",
                           normalize_per_label: bool = True) -> pd.DataFrame:
    """``metric ~ probability`` per label and pooled ("All"), with Spearman ρ (Saporta Table 2).

    With ``normalize_per_label`` the probabilities are min–max normalised within each label
    before pooling, as the paper's Methods say.
    """
    data = df[[label, metric, prob]].copy()
    if normalize_per_label:
        data[prob] = data.groupby(label)[prob].transform(lambda s: _normalize(s.astype(float), "minmax"))
    groups = [(str(k), g) for k, g in data.groupby(label, sort=True)] + [("All", data)]
    rows = []
    for name, g in groups:
        r = ols(g, metric, prob, normalize="none")
        s = spearman_ci(g[prob], g[metric])
        rows.append({"label": name, "n": r["n"], "coef": r["coef"], "lower": r["lower"], "upper": r["upper"],
                     "p": r["p"], "stars": stars(r["p"]), "spearman": s["rho"], "spearman_lower": s["lower"],
                     "spearman_upper": s["upper"], "spearman_p": s["p"]})
    return pd.DataFrame(rows)


def wilson_ci(successes: int, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval; (NaN, NaN) when n = 0."""
    lo, hi = wilson_cis(np.array([successes]), np.array([n]), level=level)
    return float(lo[0]), float(hi[0])


def wilson_cis(successes: np.ndarray, n: np.ndarray, *, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score intervals of many proportions in one call; NaN where n = 0."""
    k, n = np.asarray(successes, float), np.asarray(n, float)
    ok = n > 0
    lo, hi = np.full(k.shape, np.nan), np.full(k.shape, np.nan)
    if ok.any():
        lo[ok], hi[ok] = proportion_confint(k[ok], n[ok], alpha=1 - level, method="wilson")
    return lo, hi
