"""Contract tests over every registered localization metric, and the "Add a metric" recipe:
a new metric is scored by ``score_map`` at once and stored without a migration (the store keeps
localization scores long), and refused by the store once unregistered."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cxrxai.errors import CxrxaiError, StoreError
from cxrxai.metrics.registry import METRICS, Metric, get, metric_names, register, score_map, unregister
from cxrxai.store import write_store

NAMES = list(METRICS)


def _lesion(shape=(32, 32)) -> np.ndarray:
    truth = np.zeros(shape, bool)
    truth[8:16, 10:20] = True
    return truth


def _map_on(region: np.ndarray, shape=(8, 8)) -> np.ndarray:
    """A CAM-sized map (coarser than the mask, as stored) that is high on ``region``."""
    small = region.reshape(shape[0], region.shape[0] // shape[0], shape[1], region.shape[1] // shape[1]).mean((1, 3))
    return small + 0.01 * np.arange(small.size).reshape(shape) / small.size


@pytest.mark.parametrize("name", NAMES)
def test_a_map_on_the_lesion_beats_a_map_elsewhere(name):
    metric, truth = get(name), _lesion()
    elsewhere = np.zeros_like(truth)
    elsewhere[20:30, 2:8] = True
    good, bad = score_map(_map_on(truth), truth)[name], score_map(_map_on(elsewhere), truth)[name]
    if metric.higher_is_better is None:
        assert np.isfinite(good) and np.isfinite(bad)
    else:
        assert good > bad, (good, bad)


@pytest.mark.parametrize("name", NAMES)
def test_without_a_lesion_only_metrics_that_do_not_need_one_have_values(name):
    s = score_map(np.random.default_rng(0).random((8, 8)), np.zeros((32, 32), bool))
    assert s["gt_positive"] is False
    if get(name).needs_truth:
        assert np.isnan(s[name])


@pytest.mark.parametrize("name", NAMES)
def test_constant_maps_and_full_masks_give_numbers_or_nan_never_errors(name):
    for heat, truth in ((np.zeros((8, 8)), _lesion()), (np.ones((8, 8)), np.ones((32, 32), bool))):
        value = score_map(heat, truth)[name]
        assert isinstance(value, float)
        assert np.isnan(value) or -1e-9 <= value <= 1 + 1e-9


def test_inputs_are_never_modified():
    heat, truth = np.random.default_rng(1).normal(size=(8, 8)), _lesion()
    before = heat.copy(), truth.copy()
    score_map(heat, truth, prob=0.2, threshold=0.5)
    np.testing.assert_array_equal(heat, before[0])
    np.testing.assert_array_equal(truth, before[1])


@pytest.mark.parametrize("bad", [np.zeros(8), np.full((8, 8), np.nan)])
def test_a_map_that_is_not_a_finite_2d_array_is_refused(bad):
    with pytest.raises(CxrxaiError, match="2-D|NaN"):
        score_map(bad, _lesion())


def test_the_probability_gate_empties_the_segmentation_below_the_threshold():
    truth = _lesion()
    assert score_map(_map_on(truth), truth, prob=0.9, threshold=0.5)["iou_gated"] > 0.5
    assert score_map(_map_on(truth), truth, prob=0.1, threshold=0.5)["iou_gated"] == 0.0


def test_every_metric_has_a_localization_column_and_an_explanation(tmp_path):
    with write_store(tmp_path / "s.duckdb") as w:
        columns = set(w._table_columns("localization"))
    assert set(NAMES) <= columns
    for m in METRICS.values():
        assert m.help and m.reference and m.label


def test_a_new_metric_is_scored_at_once_and_stored_without_a_migration_and_refused_once_unregistered(tmp_path):
    register(Metric("peak", "Peak value", lambda s: float(s.upsampled.max()), "ranking", "the map's maximum",
                    "a test", higher_is_better=None, needs_truth=False))
    try:
        assert "peak" in metric_names(category="ranking")
        scored = score_map(np.eye(8), _lesion())
        assert scored["peak"] == pytest.approx(1.0, abs=0.2)
        row = pd.DataFrame([{"model_id": "m", "image_id": "i", "label": "A", "method": "gradcam", "params_key": "{}",
                             "reader": "gt", **scored}])
        with write_store(tmp_path / "s.duckdb") as w:
            assert w.put_table("localization", row) == 1
            assert w.table("localization")["peak"].tolist() == [scored["peak"]]
    finally:
        unregister("peak")
    assert "peak" not in score_map(np.eye(8), _lesion())
    with write_store(tmp_path / "s.duckdb") as w:
        assert "peak" not in w.table("localization")
        with pytest.raises(StoreError, match=r"no column\(s\) \['peak'\]"):
            w.put_table("localization", row)
        assert w.put_table("localization", row.drop(columns="peak")) == 1
