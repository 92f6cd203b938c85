"""Trustworthiness of saliency maps (Arun et al., Radiology: AI 2021).

* :func:`ssim` — structural similarity of two maps, scikit-image with an explicit
  ``data_range``. Arun et al. called ``structural_similarity(m1, m2)`` on float maps in [0, 1]
  with scikit-image 0.16/0.17, whose float default range was 2.0 (−1 … 1); pass
  ``data_range=2.0`` to reproduce their numbers, 1.0 is the correct range for [0, 1] maps.
* :func:`arun_normalize` — their greyscale pipeline before SSIM: Σ|a| over channels (done by the
  explainer's ``reduce="abs_sum"``), clip at the 99th percentile, min–max.
* cascading randomization itself (re-drawing a model's layers) is a model operation:
  :mod:`cxrxai.models.randomize`; this module scores the maps it yields.
* :func:`degradation_threshold` — mean SSIM of random pairs of *different* images' maps from
  the trained model (50 pairs); a method "reaches degradation" when its SSIM to the
  original falls below it.
* :func:`pass_fail` — the summary table (Table 2) from per-image scores.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps
from skimage.metrics import structural_similarity

from ..errors import MetricError
from ..postprocess import minmax, percentile_clip

__all__ = [
    "arun_normalize",
    "degradation_threshold",
    "pass_fail",
    "ssim",
]

def ssim(a, b, *, data_range: float = 1.0) -> float:
    """SSIM of two equally shaped 2-D maps (7×7 uniform window, K1 0.01, K2 0.03).

    Parameters
    ----------
    a, b : (H, W) array_like
        Finite maps, at least 7 × 7.
    data_range : float
        L, the range of the maps' values: 1.0 for [0, 1] maps; 2.0 reproduces Arun et al.

    Returns
    -------
    ssim : float
        Mean SSIM, at most 1 (identical maps).

    Notes
    -----
    SSIM = mean over 7 × 7 windows of (2μ_aμ_b + C1)(2σ_ab + C2) / ((μ_a² + μ_b² + C1)(σ_a² + σ_b² + C2)),
    C1 = (0.01 L)², C2 = (0.03 L)², sample covariances, averaged away from the 3-pixel border (scikit-image's
    ``structural_similarity`` defaults). Arun et al. called ``structural_similarity(m1, m2)`` on float maps
    in [0, 1] with scikit-image 0.16/0.17, whose float default range was 2.0 (−1 … 1): pass
    ``data_range=2.0`` to reproduce their numbers. Two constant maps c, d score (2cd + C1) / (c² + d² + C1).
    Unequal shapes, non-2-D, non-finite or smaller than 7 × 7 input raises
    :class:`~cxrxai.errors.MetricError`.

    References
    ----------
    .. [1] Wang Z. et al. (2004) Image quality assessment: from error visibility to structural similarity.
           IEEE Trans. Image Process. doi:10.1109/TIP.2003.819861
    .. [2] Arun N. et al. (2021) Assessing the trustworthiness of saliency maps for localizing
           abnormalities in medical imaging. Radiol. Artif. Intell. doi:10.1148/ryai.2021200267

    Examples
    --------
    >>> zeros, ones = np.zeros((8, 8)), np.ones((8, 8))
    >>> ssim(zeros, zeros), ssim(zeros, ones), ssim(zeros, ones, data_range=2.0)  # C1 / (1 + C1)
    (1.0, 9.999e-05, 0.0003998)
    """
    x, y = np.asarray(a, float), np.asarray(b, float)
    if x.shape != y.shape or x.ndim != 2:
        raise MetricError(f"SSIM needs two equal 2-D maps, got {x.shape} and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise MetricError("SSIM inputs contain NaN or infinite values")
    if min(x.shape) < 7:
        raise MetricError(f"SSIM's 7×7 window needs maps of at least 7×7; upsample {x.shape} first")
    return float(structural_similarity(x, y, data_range=data_range))


def arun_normalize(m) -> np.ndarray:
    """Clip at the 99th percentile and scale to [0, 1], then min–max again (Arun et al.).

    Parameters
    ----------
    m : (H, W) array_like
        Channel-reduced map: Σ|a| over channels (the explainer's ``reduce="abs_sum"``).

    Returns
    -------
    normalized : (H, W) ndarray of float32
        In [0, 1].

    Notes
    -----
    m' = clip((m − min m) / (P99(m) − min m), 0, 1), the PAIR saliency library's ``VisualizeImageGrayscale``
    as Arun et al. used it, then (m' − min m') / (max m' − min m') as their ``saliency_ttest`` does (a
    no-op here: m' already spans [0, 1]). A map whose 99th percentile equals its minimum becomes all zeros.

    References
    ----------
    .. [1] Arun N. et al. (2021) Assessing the trustworthiness of saliency maps for localizing
           abnormalities in medical imaging. Radiol. Artif. Intell. doi:10.1148/ryai.2021200267

    Examples
    --------
    >>> m = np.arange(101.0).reshape(1, 101)  # P99 = 99
    >>> arun_normalize(m)[0, [0, 33, 99, 100]].astype(float).round(4).tolist()
    [0.0, 0.3333, 1.0, 1.0]
    >>> arun_normalize(np.ones((2, 2))).tolist()
    [[0.0, 0.0], [0.0, 0.0]]
    """
    return minmax(percentile_clip(m, 99.0))


def degradation_threshold(maps: list[np.ndarray], *, n_pairs: int = 50, data_range: float = 1.0, seed: int = 0
                          ) -> float:
    """Mean SSIM of ``n_pairs`` random pairs of different images' maps (the randomization baseline).

    Parameters
    ----------
    maps : list of (H, W) ndarray
        Maps of at least two images from the fully trained model, one per image.
    n_pairs : int
        Number of random pairs (50, as Arun et al.).
    data_range : float
        Passed to :func:`ssim` (2.0 reproduces Arun et al.'s numbers).
    seed : int
        Seed of ``np.random.default_rng``.

    Returns
    -------
    threshold : float

    Notes
    -----
    threshold = (1/n) Σ_k SSIM(m_{i_k}, m_{j_k}), each pair two distinct images drawn uniformly (pairs may
    repeat). A method "reaches degradation" when the SSIM between its maps from the fully randomized and the
    trained model falls below it. Arun et al.'s script draws 50 partners per image (never the last image,
    ``np.random.randint(0, n − 1)``); this draws ``n_pairs`` pairs in all. Fewer than two maps raise
    :class:`~cxrxai.errors.MetricError`.

    References
    ----------
    .. [1] Arun N. et al. (2021) Assessing the trustworthiness of saliency maps for localizing
           abnormalities in medical imaging. Radiol. Artif. Intell. doi:10.1148/ryai.2021200267

    Examples
    --------
    >>> degradation_threshold([np.zeros((8, 8)), np.ones((8, 8))])  # every pair: C1 / (1 + C1)
    9.999e-05
    """
    if len(maps) < 2:
        raise MetricError("the degradation threshold needs maps of at least two images")
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n_pairs):
        i, j = rng.choice(len(maps), 2, replace=False)
        vals.append(ssim(maps[i], maps[j], data_range=data_range))
    return float(np.mean(vals))


def _one_sided_p(x: np.ndarray, alternative: str) -> float:
    """One-sample t-test of mean(x) against 0. Constant samples (SSIM 1.0 of a model with
    itself) have no variance: the verdict is then certain, p = 0 on the tested side and 1 on
    the other, instead of SciPy's precision-loss warning and NaN.

    >>> _one_sided_p(np.array([0.2, 0.2, 0.2]), "greater"), _one_sided_p(np.array([0.2, 0.2]), "less")
    (0.0, 1.0)
    """
    if len(x) < 2:
        return float("nan")
    if np.ptp(x) <= 1e-12 * max(1.0, float(np.abs(x).max())):
        m = float(x.mean())
        return 0.0 if (m > 0 if alternative == "greater" else m < 0) else 1.0
    return float(sps.ttest_1samp(x, 0, alternative=alternative).pvalue)


def pass_fail(scores: pd.DataFrame, *, alpha: float = 0.005, low: float = 0.5) -> pd.DataFrame:
    """Arun et al.'s PASS/FAIL table (their Table 2) from per-image scores.

    Parameters
    ----------
    scores : DataFrame
        Columns ``method``, ``criterion`` (utility | randomization | repeatability | reproducibility),
        ``value`` (per image: AUPRC, final-step SSIM, SSIM) and ``baseline`` (per image for utility: the
        average-mask AUPRC; for randomization: the degradation threshold).
    alpha : float
        Significance level of the one-sided tests (0.005).
    low : float
        The repeatability / reproducibility bar (SSIM 0.5).

    Returns
    -------
    table : DataFrame
        One row per method: each criterion's verdict, ``<criterion>_mean`` (of ``value``), ``_p`` and ``_n``
        (the images it rests on); a criterion a method has no scores for is missing (NaN) in its row.

    Notes
    -----
    One-sided t-tests: utility passes when the method beats the average mask (paired, value − baseline > 0),
    randomization when the fully randomized SSIM is below the degradation threshold (paired, value −
    baseline < 0), repeatability / reproducibility when SSIM exceeds ``low`` (one-sample, value − low > 0).
    PASS iff p < ``alpha``; fewer than two images give p = NaN and FAIL; constant differences give p = 0 or 1.
    Arun et al. fitted linear mixed-effects models (two-sided tests, Tukey post hoc) and also compared
    with U-Net / RetinaNet baselines; this is the simpler per-criterion test.

    References
    ----------
    .. [1] Arun N. et al. (2021) Assessing the trustworthiness of saliency maps for localizing
           abnormalities in medical imaging. Radiol. Artif. Intell. doi:10.1148/ryai.2021200267

    Examples
    --------
    >>> s = pd.DataFrame({"method": "gcam", "criterion": ["repeatability"] * 3, "value": [0.9, 0.8, 0.85]})
    >>> pass_fail(s)[["method", "repeatability", "repeatability_mean"]]
      method repeatability  repeatability_mean
    0   gcam          PASS                0.85
    """
    rows = []
    for method, g in scores.groupby("method", sort=True):
        row = {"method": method}
        for crit, c in g.groupby("criterion"):
            v = c["value"].to_numpy(float)
            if crit == "utility":
                p = _one_sided_p(v - c["baseline"].to_numpy(float), "greater")
            elif crit == "randomization":
                p = _one_sided_p(v - c["baseline"].to_numpy(float), "less")
            else:
                p = _one_sided_p(v - low, "greater")
            row[crit] = "PASS" if np.isfinite(p) and p < alpha else "FAIL"
            row[f"{crit}_mean"] = float(np.mean(v))
            row[f"{crit}_p"] = float(p)
            row[f"{crit}_n"] = len(v)
        rows.append(row)
    out = pd.DataFrame(rows)  # a count stays an integer where another method has no score for that criterion
    return out.astype({c: "Int64" for c in out.columns if c.endswith("_n")})
