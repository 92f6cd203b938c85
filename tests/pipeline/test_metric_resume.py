"""Localization scoring resumes per (map, metric): a metric registered after a store was built is
scored into it by re-running the localization stage, from the stored maps (none recomputed), and
every other stored score is left as it was; with nothing missing the stage scores nothing."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from cxrxai.explain import native_map
from cxrxai.metrics.registry import Metric, register, score_map, unregister
from cxrxai.models.registry import load
from cxrxai.pipeline.runner import BuildContext
from cxrxai.pipeline.scoring import localization_stage
from cxrxai.store import open_store, write_store

MODEL = "tiny-densenet121"
KEY = ["model_id", "image_id", "label", "source", "method", "params_key", "reader"]
TOY = "toy_peak"
#: What identifies a stored map's computation: a recomputed map gets a new created_at.
MAPS = 'SELECT count(*), min(created_at), max(created_at), sum(hash("values")) FROM maps'


@pytest.fixture
def toy_metric():
    """A metric registered from this test module only, after the store was built."""
    metric = register(Metric(TOY, "Peak", lambda s: float(s.upsampled.max()), "ranking", "the map's maximum",
                             "a test", higher_is_better=None, needs_truth=False))
    yield metric
    unregister(TOY)


@pytest.fixture
def store_copy(tiny_full_store, tmp_path):
    path = tmp_path / "store.duckdb"
    shutil.copy(tiny_full_store, path)
    return path


def _rescore(path, model_path) -> dict:
    with write_store(path) as w:
        return localization_stage(BuildContext(w, "demo", load(model_path, device="cpu"), load_images=None))


def _state(path) -> tuple[tuple, pd.DataFrame]:
    with open_store(path) as s:
        return s._rows(MAPS)[0], s.table("localization", model_id=MODEL).sort_values(KEY).reset_index(drop=True)


def test_a_metric_registered_after_the_build_is_scored_into_the_existing_store_from_its_maps(
        store_copy, tiny_model_path, toy_metric):
    maps_before, before = _state(store_copy)
    assert before[TOY].isna().all()  # registered since: reads NaN, no KeyError
    with open_store(store_copy) as s:
        missing = s.localization_missing(model_id=MODEL, source="explainer")
    explainer = before.source == "explainer"
    assert set(missing.metric) == {TOY} and len(missing) == explainer.sum()

    report = _rescore(store_copy, tiny_model_path)

    maps_after, after = _state(store_copy)
    assert maps_after == maps_before  # no map recomputed, none added
    assert report["scored"] == report["metrics_added_to_scored_maps"] == len(missing)
    assert "rescored_after_a_threshold_change" not in report
    assert after[explainer][TOY].notna().all() and after[~explainer][TOY].isna().all()
    pd.testing.assert_frame_equal(after.drop(columns=TOY), before.drop(columns=TOY))
    with open_store(store_copy) as s:  # the value is the metric of the stored map
        row = after[explainer].iloc[0]
        stored = s.get_map(MODEL, row.image_id, row.label, row.method, row.params_key)
        image = s.image(row.image_id)
        truth = np.zeros((int(image["height"]), int(image["width"])), bool)
        assert row[TOY] == pytest.approx(score_map(native_map(stored), truth)[TOY])
        assert s.localization_missing(model_id=MODEL, source="explainer").empty


def test_rescoring_a_store_with_nothing_missing_scores_nothing(store_copy, tiny_model_path):
    maps_before, before = _state(store_copy)
    report = _rescore(store_copy, tiny_model_path)
    assert report == {"scored": 0, "skipped": len(before)}
    maps_after, after = _state(store_copy)
    assert maps_after == maps_before
    pd.testing.assert_frame_equal(after, before)


def _baselines(path, model_path) -> dict:
    from cxrxai.pipeline.references import baseline_stage

    with write_store(path) as w:
        ctx = BuildContext(w, "demo", load(model_path, device="cpu"), load_images=None)
        return baseline_stage(ctx, split="test")


def test_a_metric_registered_after_the_build_reaches_the_baselines_rows_too(
        store_copy, tiny_model_path, toy_metric):
    _, before = _state(store_copy)
    baseline = before.source == "baseline"
    assert baseline.any() and before[baseline][TOY].isna().all()

    report = _baselines(store_copy, tiny_model_path)

    _, after = _state(store_copy)
    assert report["metrics_added"] == [TOY]
    assert after[baseline][TOY].notna().all()  # the same seed's random maps and average masks
    assert after[~baseline][TOY].isna().all()
    pd.testing.assert_frame_equal(after.drop(columns=TOY), before.drop(columns=TOY))
    with open_store(store_copy) as s:
        assert s.localization_missing(model_id=MODEL, source="baseline").empty
    assert _baselines(store_copy, tiny_model_path) == {"skipped": True}
    # the same numbers as baselines built from scratch with the metric registered: the same random maps
    with write_store(store_copy) as w:
        w._con.execute("DELETE FROM localization_scores WHERE source = 'baseline'")
        w._con.execute("DELETE FROM localization WHERE source = 'baseline'")
    assert "metrics_added" not in _baselines(store_copy, tiny_model_path)  # built whole, not resumed
    _, fresh = _state(store_copy)
    pd.testing.assert_frame_equal(fresh, after)


def test_baselines_scored_for_some_cases_are_the_whole_stages_rows_of_those_cases(store_copy, tiny_model_path):
    """A recomputation of a sample scores its cases only (``SCORED_IDS``; scoring every random map
    was the baselines check's cost): every other case's random map is drawn all the same, so each
    scored case gets the random map the whole stage gave it."""
    from cxrxai.pipeline.references import SCORED_IDS, baseline_stage

    _, whole = _state(store_copy)
    whole = whole[whole.source == "baseline"].reset_index(drop=True)
    cases = sorted(set(whole.image_id))
    some = set(cases[1::2])  # never the first case: its random map is the stream's first draw
    assert len(cases) >= 3 and some
    with write_store(store_copy) as w:
        w._con.execute("DELETE FROM localization_scores WHERE source = 'baseline'")
        w._con.execute("DELETE FROM localization WHERE source = 'baseline'")
        ctx = BuildContext(w, "demo", load(tiny_model_path, device="cpu"), load_images=None,
                           options={SCORED_IDS: some})
        baseline_stage(ctx, split="test")
    _, part = _state(store_copy)
    part = part[part.source == "baseline"].reset_index(drop=True)
    assert set(part.image_id) == some
    pd.testing.assert_frame_equal(part, whole[whole.image_id.isin(some)].reset_index(drop=True))
