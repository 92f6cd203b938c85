"""Paired and two-group tests (cxrxai.metrics.comparison) against reference computations: DeLong by
its pairwise definition (DeLong et al. 1988, eq. for V10/V01), McNemar by hand, Newcombe's published
worked examples, Holm and Benjamini–Hochberg by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import roc_auc_score

from cxrxai.errors import MetricError, UnknownNameError
from cxrxai.metrics.comparison import adjust, delong_ci, delong_paired, paired_rates, two_proportions


def _delong_by_definition(y, a, b):
    """DeLong 1988 written out pair by pair: ψ(x, y) = 1, ½, 0; V10ᵢ = mean over negatives,
    V01ⱼ = mean over positives; S10, S01 sample covariances; z = Δ / √(…)."""
    y = np.asarray(y)
    comps = []
    for s in (np.asarray(a, float), np.asarray(b, float)):
        x, w = s[y == 1], s[y == 0]
        psi = (x[:, None] > w[None, :]) + 0.5 * (x[:, None] == w[None, :])
        comps.append((psi.mean(), psi.mean(axis=1), psi.mean(axis=0)))
    (auc_a, v10_a, v01_a), (auc_b, v10_b, v01_b) = comps
    m, n = len(v10_a), len(v01_a)
    s10, s01 = np.cov([v10_a, v10_b]), np.cov([v01_a, v01_b])
    var = (s10[0, 0] + s10[1, 1] - 2 * s10[0, 1]) / m + (s01[0, 0] + s01[1, 1] - 2 * s01[0, 1]) / n
    z = (auc_a - auc_b) / np.sqrt(var)
    return auc_a, auc_b, np.sqrt(var), 2 * sps.norm.sf(abs(z))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_delong_equals_its_pairwise_definition_with_ties(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 300)
    old = np.round(rng.normal(y * 0.8, 1.0), 1)  # rounded: many ties, within and across classes
    new = np.round(old + rng.normal(y * 0.3, 0.7), 1)
    r = delong_paired(y, new, old)
    auc_a, auc_b, se, p = _delong_by_definition(y, new, old)
    assert r["new"] == pytest.approx(auc_a, abs=1e-12) and r["old"] == pytest.approx(auc_b, abs=1e-12)
    assert r["new"] == pytest.approx(roc_auc_score(y, new), abs=1e-12)
    assert r["se"] == pytest.approx(se, abs=1e-12) and r["p"] == pytest.approx(p, abs=1e-12)
    assert r["lower"] == pytest.approx(r["diff"] - 1.959964 * se, abs=1e-6)
    assert (r["n_pos"], r["n_neg"]) == (int(y.sum()), int((1 - y).sum()))


def test_delong_one_class_is_nan_and_a_copy_is_no_difference():
    assert np.isnan(delong_paired([1, 1, 1], [0.1, 0.2, 0.3], [0.3, 0.2, 0.1])["p"])
    same = delong_paired([0, 1, 0, 1], [0.1, 0.7, 0.4, 0.3], [0.1, 0.7, 0.4, 0.3])
    assert (same["diff"], same["p"], same["lower"], same["upper"]) == (0.0, 1.0, 0.0, 0.0)
    with pytest.raises(MetricError, match="0/1"):
        delong_paired([0, 2], [0.1, 0.2], [0.1, 0.2])
    with pytest.raises(MetricError, match="finite"):
        delong_paired([0, 1], [0.1, np.nan], [0.1, 0.2])


def test_delong_finds_a_real_difference_and_not_noise():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 400)
    old = rng.normal(y * 1.0, 1.0)
    better = old + rng.normal(y * 1.0, 0.3)
    assert delong_paired(y, better, old)["p"] < 1e-6
    assert delong_paired(y, old + rng.normal(0, 0.01, len(y)), old)["p"] > 0.05


def test_mcnemar_exact_and_chi_square_by_hand():
    # 2 discordant pairs, both gained: exact two-sided binomial 2 · 0.5² = 0.5
    r = paired_rates([1, 1, 1, 0], [1, 0, 0, 0])
    assert (r["b"], r["c"], r["diff"], r["p"]) == (0, 2, 0.5, 0.5)
    # 40 discordant pairs (b = 10 lost, c = 30 gained) of 100: χ² = (|30 − 10| − 1)² / 40, 1 df
    old = np.r_[np.ones(10), np.zeros(30), np.ones(30), np.zeros(30)]
    new = np.r_[np.zeros(10), np.ones(30), np.ones(30), np.zeros(30)]
    r = paired_rates(new, old)
    assert r["p"] == pytest.approx(sps.chi2.sf(19**2 / 40, 1), rel=1e-12)
    se = np.sqrt(40 - 20**2 / 100) / 100
    assert (r["diff"], r["lower"]) == (pytest.approx(0.2), pytest.approx(0.2 - 1.959964 * se, abs=1e-6))
    assert paired_rates([1, 0], [1, 0])["p"] == 1.0 and np.isnan(paired_rates([], [])["p"])


def test_two_proportions_newcombe_published_examples():
    """Newcombe (1998) Table II, method 10: (a) 56/70 − 48/80: 0.0524, 0.3339; (b) 9/10 − 3/10:
    0.1705, 0.8090; (h) 10/10 − 0/10 at the boundary: 0.6075, 1."""
    for (k1, n1, k2, n2), (lo, hi) in {
        (56, 70, 48, 80): (0.0524, 0.3339),
        (9, 10, 3, 10): (0.1705, 0.8090),
        (10, 10, 0, 10): (0.6075, 1.0),
    }.items():
        r = two_proportions(k1, n1, k2, n2)
        assert (round(r["lower"], 4), round(r["upper"], 4)) == (lo, hi)
        assert r["diff"] == pytest.approx(k1 / n1 - k2 / n2) and r["p"] < 0.01
    assert two_proportions(0, 5, 0, 5)["p"] == 1.0 and np.isnan(two_proportions(1, 0, 1, 5)["diff"])


def test_adjust_holm_and_bh_by_hand():
    p = [0.01, 0.04, np.nan, 0.03, 0.2]
    holm, rej = adjust(
        p
    )  # sorted 0.01 0.03 0.04 0.2 × 4 3 2 1 = 0.04 0.09 0.08 0.2 → monotone 0.04 0.09 0.09 0.2
    assert np.allclose(holm, [0.04, 0.09, np.nan, 0.09, 0.2], equal_nan=True)
    assert rej.tolist() == [True, False, False, False, False]
    bh, _ = adjust(p, method="fdr_bh")  # p·m/rank from the top, running minimum: 0.04 0.0533 0.0533 0.2
    assert np.allclose(bh, [0.04, 0.16 / 3, np.nan, 0.16 / 3, 0.2], equal_nan=True)
    with pytest.raises(UnknownNameError):
        adjust(p, method="bonferonni")


def test_delong_ci_is_the_pairwise_variance_and_needs_five_of_each_class():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    s = np.round(rng.normal(y, 1.0), 1)
    x, w = s[y == 1], s[y == 0]
    psi = (x[:, None] > w[None, :]) + 0.5 * (x[:, None] == w[None, :])
    se = np.sqrt(psi.mean(axis=1).var(ddof=1) / len(x) + psi.mean(axis=0).var(ddof=1) / len(w))
    auc, lo, hi = delong_ci(y, s)
    assert auc == pytest.approx(psi.mean(), abs=1e-12)
    assert (lo, hi) == (pytest.approx(auc - 1.959964 * se, abs=1e-6), pytest.approx(auc + 1.959964 * se, abs=1e-6))
    assert np.isnan(delong_ci([0, 0, 0, 0, 0, 1, 1], [0, 1, 2, 3, 4, 5, 6])[1])


def test_auprc_logit_interval_by_hand_and_roc_points_are_sklearns():
    """AP by its step-wise sum; Boyd et al.'s logit interval written out; the ROC corners."""
    from sklearn.metrics import roc_curve

    from cxrxai.metrics.classification import auprc_ci, roc_points

    y = np.array([1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1])
    s = np.array([0.9, 0.8, 0.7, 0.65, 0.6, 0.55, 0.5, 0.4, 0.35, 0.3, 0.2, 0.1])
    # precision at each positive, in score order: 1/1, 2/3, 3/4, 4/6, 5/9, 6/11, 7/12 → AP = mean
    ap_by_hand = np.mean([1, 2 / 3, 3 / 4, 4 / 6, 5 / 9, 6 / 11, 7 / 12])
    ap, lo, hi = auprc_ci(y, s)
    logit, half = np.log(ap / (1 - ap)), 1.959964 / np.sqrt(7 * ap * (1 - ap))
    assert ap == pytest.approx(ap_by_hand, abs=1e-12)
    assert (lo, hi) == (pytest.approx(1 / (1 + np.exp(-(logit - half)))), pytest.approx(1 / (1 + np.exp(-(logit + half)))))
    fpr, tpr = roc_points(y, s)
    ref_fpr, ref_tpr, _ = roc_curve(y, s)
    assert np.array_equal(fpr, ref_fpr) and np.array_equal(tpr, ref_tpr)
