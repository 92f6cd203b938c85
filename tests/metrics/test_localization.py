"""Localization metrics: hand-derived values and every degenerate case by name."""

from __future__ import annotations

import numpy as np
import pytest

from cxrxai.errors import MetricError, UnknownNameError
from cxrxai.metrics.localization import (
    coarse_pointing_game,
    iou,
    miou,
    otsu_mask,
    pointing_game,
    points_hit,
    pr_auc,
    probability_gate,
    ranking_metrics,
    roc_auc,
    threshold_mask,
    tune_threshold,
)
from cxrxai.postprocess import upsample

A = np.array([[1, 1, 0, 0], [1, 1, 0, 0]], bool)
B = np.array([[0, 1, 1, 0], [0, 1, 1, 0]], bool)
EMPTY = np.zeros((2, 4), bool)


def test_iou_by_hand():
    assert iou(A, B) == pytest.approx(2 / 6)
    assert iou(A, A) == 1.0


def test_iou_true_positive_slice_is_nan_unless_both_non_empty():
    assert np.isnan(iou(A, EMPTY)) and np.isnan(iou(EMPTY, A)) and np.isnan(iou(EMPTY, EMPTY))


def test_iou_full_dataset_scores_false_positives_and_negatives_zero():
    assert iou(A, EMPTY, convention="full") == 0.0
    assert iou(EMPTY, A, convention="full") == 0.0
    assert np.isnan(iou(EMPTY, EMPTY, convention="full"))


def test_miou_skips_nan_and_is_nan_when_all_are():
    assert miou([0.5, np.nan, 1.0]) == 0.75
    assert np.isnan(miou([np.nan, np.nan]))


def test_pointing_game_hit_miss_and_empty_mask():
    m = np.array([[0.0, 0.2, 0.9, 0.1]] * 2)
    assert pointing_game(m, B) == 1.0 and pointing_game(m, A) == 0.0
    out = pointing_game(m, EMPTY)
    assert isinstance(out, float) and np.isnan(out)


def test_pointing_game_ties_take_the_first_maximum_in_row_major_order():
    tied = np.array([[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    only_second = np.zeros((2, 4), bool)
    only_second[0, 3] = True
    assert pointing_game(tied, only_second) == 0.0  # the first max is (0, 1)
    only_first = np.zeros((2, 4), bool)
    only_first[0, 1] = True
    assert pointing_game(tied, only_first) == 1.0


def test_pointing_game_upsamples_a_coarse_map_first():
    coarse = np.array([[0.0, 1.0]])  # right half hot
    mask = np.zeros((4, 8), bool)
    mask[:, 6:] = True
    assert pointing_game(coarse, mask) == 1.0


def test_coarse_pointing_game_uses_the_centre_of_the_best_cell():
    coarse = np.array([[0.0, 1.0], [0.0, 0.0]])  # top-right cell of a 2×2 map over 8×8
    centre = np.zeros((8, 8), bool)
    centre[2, 6] = True  # floor(0.5·8/2) = 2, floor(1.5·8/2) = 6
    assert coarse_pointing_game(coarse, centre) == 1.0
    assert np.isnan(coarse_pointing_game(coarse, np.zeros((8, 8), bool)))


def test_human_benchmark_points_any_inside_is_a_hit():
    assert points_hit([(0, 0), (2.7, 1.2)], B) == 1.0  # (x=2.7, y=1.2) → mask[1, 2]
    assert points_hit([(3, 0)], B) == 0.0
    assert points_hit([], B) == 0.0
    assert np.isnan(points_hit([(1, 1)], EMPTY))


def test_roc_auc_perfect_inverted_and_degenerate():
    m = np.where(A, 1.0, 0.0)
    assert roc_auc(m, A) == 1.0 and roc_auc(1 - m, A) == 0.0
    assert roc_auc(np.ones((2, 4)), A) == 0.5  # a constant map ranks nothing
    assert np.isnan(roc_auc(m, EMPTY)) and np.isnan(roc_auc(m, np.ones((2, 4), bool)))


def test_pr_auc_variants_by_hand():
    m = np.array([[0.9, 0.8, 0.1, 0.2], [0.7, 0.3, 0.0, 0.4]])
    truth = np.array([[1, 0, 0, 0], [1, 0, 0, 0]], bool)
    # Ranked: 0.9 (+), 0.8 (−), 0.7 (+), ... AP = (1/2)(1 + 2/3) = 5/6.
    assert pr_auc(m, truth, variant="average_precision") == pytest.approx(5 / 6)
    # Trapezoids between (recall, precision) = (1, 2/3) → (1/2, 1/2), then (1/2, 1) → (0, 1):
    # ½·(2/3 + 1/2)/1 · … = 7/24 + 12/24.
    assert pr_auc(m, truth) == pytest.approx(19 / 24)
    assert np.isnan(pr_auc(m, EMPTY))
    with pytest.raises(UnknownNameError):
        pr_auc(m, truth, variant="f1")


@pytest.mark.parametrize("seed", range(4))
def test_one_sort_ranking_metrics_equal_scikit_learn(seed):
    from sklearn.metrics import auc, average_precision_score, precision_recall_curve, roc_auc_score

    rng = np.random.default_rng(seed)
    m = np.round(rng.random((20, 30)), 1 + seed % 2)  # coarse values: many ties
    truth = rng.random((20, 30)) < 0.2 + 0.1 * seed
    got = ranking_metrics(m, truth)
    p, r, _ = precision_recall_curve(truth.ravel(), m.ravel())
    assert got["roc_auc"] == pytest.approx(roc_auc_score(truth.ravel(), m.ravel()), abs=1e-12)
    assert got["ap"] == pytest.approx(average_precision_score(truth.ravel(), m.ravel()), abs=1e-12)
    assert got["pr_auc"] == pytest.approx(auc(r, p), abs=1e-12)
    assert got["roc_auc"] == roc_auc(m, truth) and got["pr_auc"] == pr_auc(m, truth)
    assert all(np.isnan(v) for v in ranking_metrics(m, np.zeros_like(truth)).values())


@pytest.mark.parametrize("kind", ["float32 upsampled", "integers", "constant", "normal 1 decimal", "full mask"])
def test_ranking_from_sorted_classes_equals_scikit_learn_on_every_kind_of_map(kind):
    """Ranking metrics count pairs from the two classes' sorted scores (no ROC/PR curve is built):
    they must equal scikit-learn's curves on maps with every kind of tie, float32 maps included."""
    from sklearn.metrics import auc, average_precision_score, precision_recall_curve, roc_auc_score

    rng = np.random.default_rng(7)
    truth = rng.random((120, 90)) < 0.15
    m = {"float32 upsampled": upsample(rng.normal(size=(7, 7)), (120, 90)),
         "integers": rng.integers(0, 6, (120, 90)).astype(float), "constant": np.full((120, 90), 0.3),
         "normal 1 decimal": np.round(rng.normal(size=(120, 90)), 1),
         "full mask": rng.random((120, 90))}[kind]
    if kind == "full mask":
        truth = np.ones_like(truth)
    got = ranking_metrics(m, truth)
    p, r, _ = precision_recall_curve(truth.ravel(), m.ravel())
    if kind != "full mask":
        assert got["roc_auc"] == pytest.approx(roc_auc_score(truth.ravel(), m.ravel()), abs=1e-12)
    assert got["ap"] == pytest.approx(average_precision_score(truth.ravel(), m.ravel()), abs=1e-12)
    assert got["pr_auc"] == pytest.approx(auc(r, p), abs=1e-12)


def test_pr_areas_summed_run_by_run_equal_scikit_learn_past_one_run():
    """A film's lesion has ~10⁶ distinct scores and both PR areas are summed a cache-sized run of
    them at a time: with several runs (and ties inside them) they still equal scikit-learn's."""
    from sklearn.metrics import auc, average_precision_score, precision_recall_curve

    from cxrxai.metrics.ranking import _CHUNK

    rng = np.random.default_rng(23)
    m = upsample(rng.random((40, 40)), (200, 300))  # float32, the positive part of an upsampled map
    m[:20] = np.round(m[:20], 2)  # ties within and across classes
    truth = rng.random(m.shape) < 0.6
    assert np.unique(m[truth]).size > _CHUNK  # two runs at least
    got = ranking_metrics(m, truth)
    p, r, _ = precision_recall_curve(truth.ravel(), m.ravel())
    assert got["ap"] == pytest.approx(average_precision_score(truth.ravel(), m.ravel()), abs=1e-12)
    assert got["pr_auc"] == pytest.approx(auc(r, p), abs=1e-12)


def test_otsu_on_a_two_level_map_and_a_constant_map():
    m = np.zeros((8, 8))
    m[2:6, 2:6] = 1.0
    assert np.array_equal(otsu_mask(m), m > 0) and np.array_equal(otsu_mask(m, variant="plain"), m > 0)
    assert not otsu_mask(np.full((8, 8), 3.0)).any()


def test_otsu_fills_holes_as_chexlocalize():
    ring = np.zeros((12, 12))
    ring[2:10, 2:10] = 1.0
    ring[5:7, 5:7] = 0.0
    assert otsu_mask(ring)[5:7, 5:7].all()  # the hole is filled
    assert not otsu_mask(ring, variant="plain")[5:7, 5:7].any()


def test_threshold_mask_probability_gate_and_tuning():
    m = np.array([[0.0, 0.3, 0.6, 1.0]])
    assert threshold_mask(m, 0.5).tolist() == [[False, False, True, True]]
    assert not probability_gate(np.ones((1, 4), bool), 0.2, 0.3).any()
    assert probability_gate(np.ones((1, 4), bool), 0.3, 0.3).all()  # only strictly below is gated
    best, scores = tune_threshold([m], [np.array([[0, 0, 1, 1]], bool)])
    assert best == 0.3 and scores[0.3] == 1.0  # 0.3 → [0.6, 1.0] exactly (strict ">")


@pytest.mark.parametrize("bad,err", [
    (lambda: iou(A, np.zeros((3, 3))), "shape mismatch"),
    (lambda: iou(A, np.full((2, 4), 2)), "binary"),
    (lambda: roc_auc(np.full((2, 4), np.nan), A), "NaN"),
    (lambda: otsu_mask(np.zeros((2, 2, 2))), "2-D"),
    (lambda: threshold_mask(np.zeros((2, 2)), 1.5), r"\[0, 1\]"),
])
def test_bad_input_raises_typed_errors(bad, err):
    with pytest.raises(MetricError, match=err):
        bad()


def test_unknown_convention_lists_the_allowed():
    with pytest.raises(UnknownNameError, match="true_positive"):
        iou(A, B, convention="strict")


def test_tune_threshold_refuses_maps_and_masks_of_different_counts():
    import numpy as np
    import pytest

    from cxrxai.errors import MetricError
    from cxrxai.metrics.localization import tune_threshold

    with pytest.raises(MetricError, match="2 maps and 1 masks"):
        tune_threshold([np.eye(4), np.eye(4)], [np.eye(4, dtype=bool)])
