import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from cxrxai.errors import MetricError
from cxrxai.metrics.classification import auroc, auroc_ci, bootstrap_aurocs


def test_weighted_bootstrap_equals_explicit_resampling():
    rng = np.random.default_rng(1)
    y = (rng.random(60) < 0.3).astype(int)
    s = np.round(rng.random(60) + 0.4 * y, 1)  # rounding makes ties
    reps = bootstrap_aurocs(y, s, n_boot=50, seed=7)
    draw = np.random.default_rng(7).integers(0, 60, (50, 60))
    order = np.argsort(s, kind="stable")
    rank_of = np.empty(60, int)
    rank_of[order] = np.arange(60)
    for b in range(50):  # the same replicate drawn explicitly, scored by scikit-learn
        idx = order[rank_of[draw[b]]]
        expected = roc_auc_score(y[idx], s[idx]) if 0 < y[idx].sum() < 60 else np.nan
        assert reps[b] == pytest.approx(expected, abs=1e-12) or (np.isnan(reps[b]) and np.isnan(expected))


def test_ci_brackets_the_point_and_is_seeded():
    rng = np.random.default_rng(0)
    y = (rng.random(300) < 0.2).astype(int)
    s = rng.random(300) + 0.5 * y
    a = auroc_ci(y, s, seed=3)
    assert a == auroc_ci(y, s, seed=3) and a[1] < a[0] < a[2]


def test_degenerate_labels():
    assert np.isnan(auroc([1, 1], [0.2, 0.4]))
    assert all(np.isnan(auroc_ci([0, 0, 0], [0.1, 0.2, 0.3])))
    assert auroc([0, 1, np.nan], [0.1, 0.9, 0.5]) == 1.0  # unknown labels are dropped
    with pytest.raises(MetricError):
        auroc([0, 2], [0.1, 0.2])


def test_auroc_without_any_labelled_case_is_nan_not_an_error():
    import numpy as np

    from cxrxai.metrics.classification import auroc, auroc_ci

    assert np.isnan(auroc([np.nan, np.nan], [0.2, 0.7]))
    assert all(np.isnan(v) for v in auroc_ci([np.nan], [0.5]))
