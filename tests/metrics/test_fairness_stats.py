"""Fairness rates and statistics: hand-derived values and degenerate groups."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cxrxai import stats
from cxrxai.errors import MetricError, UnknownNameError
from cxrxai.metrics.fairness import subgroup_rates, underdiagnosis
from cxrxai.metrics.group_means import metric_by_group


def _table():
    #          sex  y  pred  prob
    rows = [("M", 1, 1, 0.9), ("M", 1, 0, 0.4), ("M", 0, 0, 0.1), ("M", 0, 1, 0.6),
            ("F", 1, 1, 0.8), ("F", 1, 1, 0.7), ("F", 1, 0, 0.3), ("F", 0, 0, 0.2)]
    return pd.DataFrame(rows, columns=["sex", "ground_truth", "predicted", "prob"]).assign(label="Mass")


def test_rates_counts_and_gaps_by_hand():
    r = subgroup_rates(_table(), "sex").set_index("sex")
    assert r.loc["M", ["tp", "fn", "fp", "tn"]].tolist() == [1, 1, 1, 1]
    assert r.loc["M", "tpr"] == 0.5 and r.loc["M", "fpr"] == 0.5 and r.loc["M", "ppv"] == 0.5
    assert r.loc["F", "tpr"] == pytest.approx(2 / 3) and r.loc["F", "fpr"] == 0.0 and r.loc["F", "fnr"] == pytest.approx(1 / 3)
    assert r.loc["M", "tpr_gap_other"] == pytest.approx(0.5 - 2 / 3)
    assert r.loc["F", "tpr_gap_overall"] == pytest.approx(2 / 3 - 3 / 5)
    assert r.loc["M", "tpr_gap_median"] == pytest.approx(0.5 - (0.5 + 2 / 3) / 2)
    assert r["small"].all()  # every group here has fewer than 10 positives
    assert r[["tpr_lower", "tpr_upper", "fpr_lower", "ppv_upper"]].isna().all().all()  # 2–3 cases: no interval
    big = subgroup_rates(pd.concat([_table()] * 3, ignore_index=True), "sex").set_index("sex")  # 6 positives each
    assert tuple(big.loc["M", ["tpr_lower", "tpr_upper"]]) == pytest.approx(stats.wilson_ci(3, 6))
    assert big.loc["F", "n_neg"] == 3 and np.isnan(big.loc["F", "fpr_lower"])  # 3 negatives: still none


def test_a_group_without_positives_has_nan_tpr_not_zero():
    t = _table()
    t.loc[t.sex == "F", "ground_truth"] = 0
    r = subgroup_rates(t, "sex").set_index("sex")
    assert np.isnan(r.loc["F", "tpr"]) and r.loc["F", "n_pos"] == 0 and np.isnan(r.loc["F", "tpr_lower"])


def test_intersection_and_missing_demographics():
    t = _table().assign(age_bin=["20-40", "60-80"] * 4)
    t.loc[0, "sex"] = None
    r = subgroup_rates(t, ["sex", "age_bin"])
    assert len(r) == 4 and (r["n_missing"] == 1).all()
    assert r["n"].sum() == 7


def test_bootstrap_intervals_are_seeded():
    a = subgroup_rates(_table(), "sex", ci="bootstrap", n_boot=200, seed=3)
    b = subgroup_rates(_table(), "sex", ci="bootstrap", n_boot=200, seed=3)
    pd.testing.assert_frame_equal(a, b)


def test_bootstrap_interval_of_a_mean_matches_the_normal_theory_width():
    """Independent of our code: for n = 2,000 standard normal values the 95 % interval of the
    mean is ±1.96/√n ≈ ±0.0438 around the sample mean; the bootstrap's must agree within 10 %,
    and a constant sample's interval is that constant."""
    from cxrxai import stats

    v = np.random.default_rng(11).standard_normal(2000)
    r = stats.bootstrap_table(pd.DataFrame({"x": v}), n_boot=2000, seed=0).iloc[0]
    half = 1.96 / np.sqrt(len(v)) * v.std(ddof=1)
    assert (r["upper"] - r["lower"]) / 2 == pytest.approx(half, rel=0.10)
    assert (r["upper"] + r["lower"]) / 2 == pytest.approx(v.mean(), abs=0.15 * half)
    c = stats.bootstrap_table(pd.DataFrame({"x": np.full(30, 0.25)}), n_boot=200).iloc[0]
    assert (c["lower"], c["upper"]) == (0.25, 0.25)


def test_auroc_with_hanley_mcneil_interval():
    r = subgroup_rates(_table(), None).iloc[0]
    assert r["auroc"] == pytest.approx(13 / 15)  # 13 of 15 positive–negative pairs ranked right
    assert np.isnan(r["auroc_lower"])  # 3 negatives: no interval
    big = subgroup_rates(pd.concat([_table()] * 2, ignore_index=True), None).iloc[0]  # 10 positives, 6 negatives
    assert big["auroc"] == pytest.approx(13 / 15) and big["auroc_lower"] < big["auroc"] < big["auroc_upper"]


def test_auroc_equals_sklearn_with_ties_per_group():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(5)
    n = 400
    t = pd.DataFrame({"label": "Mass", "sex": rng.choice(["F", "M"], n), "ground_truth": rng.integers(0, 2, n),
                      "prob": rng.integers(0, 7, n) / 6})  # coarse probabilities: many ties
    t["predicted"] = (t.prob >= 0.5).astype(int)
    got = subgroup_rates(t, "sex").set_index("sex")["auroc"]
    for sex, g in t.groupby("sex"):
        assert got[sex] == pytest.approx(roc_auc_score(g.ground_truth, g.prob), abs=1e-12)


def test_underdiagnosis_counts_and_rounding():
    t = _table().assign(label="No Finding")
    u = underdiagnosis(t, "sex").set_index("sex")
    assert u.loc["F", "n_NNF"] == 1 and u.loc["F", "n_PNF"] == 3 and u.loc["F", "fnr"] == 0.333


def test_bad_tables_are_refused():
    with pytest.raises(MetricError, match="lacks columns"):
        subgroup_rates(_table().drop(columns="predicted"), "sex")
    with pytest.raises(MetricError, match="0/1"):
        subgroup_rates(_table().assign(predicted=2), "sex")
    with pytest.raises(UnknownNameError):
        subgroup_rates(_table(), "sex", labels=["Edema"])
    with pytest.raises(UnknownNameError):
        subgroup_rates(_table(), "sex", ci="exact")


def test_metric_by_group_mean_ci_and_nan_count():
    cases = pd.DataFrame({"label": "Mass", "sex": ["M", "M", "M", "F"], "auc": [0.6, 0.8, np.nan, 0.9]})
    r = metric_by_group(cases, "auc", "sex", n_boot=100).set_index("sex")
    assert r.loc["M", "mean"] == pytest.approx(0.7) and r.loc["M", "n"] == 2 and r.loc["M", "n_nan"] == 1
    assert r.loc["F", "mean"] == 0.9 and np.isnan(r.loc["F", "lower"]) and np.isnan(r.loc["M", "upper"])  # n < 5
    five = metric_by_group(cases.assign(auc=[0.6, 0.8, np.nan, 0.9]).iloc[[0, 1, 0, 1, 0]], "auc", "sex", n_boot=100)
    assert five.n.tolist() == [5] and five.lower[0] <= 0.68 <= five.upper[0]  # from 5 cases, an interval


def test_bootstrap_table_matches_chexlocalize_indices():
    df = pd.DataFrame({"a": [0.0, 1.0, 0.5, np.nan], "b": [1.0, 1.0, 0.0, 0.0]})
    # CheXlocalize's code bounds any n; the app's default floor (5 cases) is lifted to compare
    t = stats.bootstrap_table(df, n_boot=1000, seed=0, min_n=1).set_index("name")
    reps = stats.bootstrap_replicates(df, n_boot=1000, seed=0)
    s = np.sort(reps["b"].to_numpy())
    assert t.loc["b", "lower"] == s[24] and t.loc["b", "upper"] == s[974]
    assert t.loc["a", "n"] == 3 and t.loc["a", "estimate"] == 0.5
    # Joint resampling: replicate i of both columns uses the same rows (legacy seed(0) + choice).
    rs = np.random.RandomState(0)
    rows = rs.choice(4, 4, replace=True)
    assert reps["b"].iloc[0] == df["b"].to_numpy()[rows].mean()


def test_percentage_decrease_point_and_pairing():
    idx = [f"c{i}" for i in range(6)]
    hb = pd.DataFrame({"x": [1.0, 1.0, 0.5, 0.5, 1.0, 1.0]}, index=idx)
    pred = hb / 2
    r = stats.percentage_decrease(hb, pred, n_boot=200).set_index("name")
    assert r.loc["x", "decrease_pct"] == pytest.approx(50.0)
    assert r.loc["x", "lower"] == pytest.approx(50.0) and r.loc["x", "upper"] == pytest.approx(50.0)  # paired
    assert r.loc["Average", "decrease_pct"] == pytest.approx(50.0)


def test_ols_normalizations_and_bonferroni_stars():
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    df = pd.DataFrame({"x": x, "y": 2 * x + rng.normal(scale=0.1, size=200), "z": rng.normal(size=200)})
    z = stats.ols(df, "y", "x", normalize="zscore")
    assert z["coef"] == pytest.approx(2 * x.std(ddof=1), rel=0.02) and z["p"] < 1e-10
    mm = stats.ols(df, "y", "x", normalize="minmax")
    assert mm["coef"] == pytest.approx(2 * (x.max() - x.min()), rel=0.02)
    table = stats.feature_regressions(df, "y", ["x", "z"])
    assert table.loc[0, "stars"] == "***" and table.loc[0, "p_bonferroni"] == pytest.approx(min(1, 2 * table.loc[0, "p"]))
    assert stats.stars(0.02, 4) == "" and stats.stars(0.01, 4) == "*"


def test_spearman_fisher_interval():
    r = stats.spearman_ci([1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5])
    assert r["rho"] == pytest.approx(0.8286, abs=1e-4)
    half = 1.959964 / np.sqrt(3)
    assert r["lower"] == pytest.approx(np.tanh(np.arctanh(r["rho"]) - half), abs=1e-6)
    assert np.isnan(stats.spearman_ci([1, 2, 3], [1, 2, 3])["rho"])  # too few pairs


def test_confidence_regressions_per_label_and_pooled():
    df = pd.DataFrame({"label": ["A"] * 5 + ["B"] * 5, "iou": [0.1, 0.2, 0.3, 0.4, 0.5] * 2,
                       "prob": [0.0, 0.25, 0.5, 0.75, 1.0, 0.5, 0.625, 0.75, 0.875, 1.0]})
    r = stats.confidence_regressions(df, "iou").set_index("label")
    # min–max per label maps both labels' probabilities to 0, ¼, ½, ¾, 1 (exact in binary), so the
    # pooled pairs are the per-label pairs twice: slope (0.5 − 0.1) / 1 and a perfect rank order.
    assert list(r.index) == ["A", "B", "All"]
    assert r.loc["A", "coef"] == pytest.approx(0.4) and r.loc["All", "spearman"] == pytest.approx(1.0)


def test_wilson_interval_edge_cases():
    assert all(np.isnan(stats.wilson_ci(0, 0)))
    lo, hi = stats.wilson_ci(0, 10)
    assert lo == 0.0 and 0 < hi < 0.35
