"""Localization scores stored long (schema v6) and read wide: a store of schema v5 (one column per
metric) reads the same frame before and after a writer migrates it, a metric registered since
reads NaN and is listed as missing, and a frame of some metrics writes those alone."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

from cxrxai.errors import UnknownNameError
from cxrxai.metrics.registry import Metric, metric_names, register, unregister
from cxrxai.store import SCHEMA_VERSION, open_store, write_store
from cxrxai.store._schema import MIGRATIONS

KEY = ["model_id", "image_id", "label", "source", "method", "params_key", "reader"]
V5_METRICS = ["iou", "iou_full", "iou_gated", "hit", "pla", "roc_auc", "pr_auc", "ap", "pred_area", "gt_area"]


@pytest.fixture
def toy_metric():
    """A metric registered by this module only (as a contributor's new metric would be)."""
    register(Metric("toy_spread", "Spread", lambda s: float(np.ptp(s.upsampled)), "ranking",
                    "the map's range", "a test", higher_is_better=None, needs_truth=False))
    yield "toy_spread"
    unregister("toy_spread")


def _v5_store(path) -> None:
    """A store as schema v5 wrote it: an explainer map, a baseline and a second reader scored,
    every metric a column (the reader's row has no PLA: NULL)."""
    con = duckdb.connect(str(path))
    for v in range(1, 6):
        for ddl in MIGRATIONS[v]:
            con.execute(ddl)
    con.execute("INSERT INTO meta VALUES ('schema_version', '5')")
    cols = ", ".join(["model_id", "image_id", "label", "source", "method", "params_key", "reader", "prob",
                      "gt_positive", "predicted", *V5_METRICS])
    rows = [("m", "i1", "A", "explainer", "gradcam", "{}", "gt", 0.8, True, True, *np.linspace(0.1, 0.9, 10)),
            ("m", "i2", "A", "explainer", "gradcam", "{}", "gt", 0.2, False, False, *[None] * 8, 0.3, 0.0),
            ("m", "i1", "A", "baseline", "random", "{}", "gt", None, True, None, *np.linspace(0.05, 0.5, 10)),
            ("m", "i1", "A", "reader", "hb", "{}", "gt", None, True, None, 0.6, 0.6, None, 1.0, *[None] * 4,
             0.2, 0.1)]
    con.executemany(f"INSERT INTO localization ({cols}) VALUES ({', '.join('?' * 20)})", rows)
    con.close()


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values(KEY).reset_index(drop=True)


def test_a_v5_store_reads_the_same_wide_frame_before_and_after_a_writer_migrates_it(tmp_path):
    path = tmp_path / "v5.duckdb"
    _v5_store(path)
    with open_store(path) as s:
        assert s.schema_version() == 5
        old = _sorted(s.table("localization"))
        assert list(old.columns) == [*KEY, "prob", "gt_positive", "predicted", *metric_names()]
        assert old.pla.isna().tolist() == [False, False, True, True]  # baseline, explainer i1, i2, reader
        readers = s.table("localization", source="reader", iou=0.6)
        assert len(readers) == 1 and readers.hit.iloc[0] == 1.0
    with write_store(path) as w:
        assert w.schema_version() == SCHEMA_VERSION  # migrated to this version, through v6's long scores
        assert w._rows("SELECT count(*) FROM localization_scores")[0][0] == 4 * len(V5_METRICS)
        assert "iou" not in w._columns("localization")  # the scores left the per-map table
    with open_store(path) as s:
        pd.testing.assert_frame_equal(_sorted(s.table("localization")), old)
        explainer = s.table("localization", source="explainer", image_id="i1")
        assert explainer.iloc[0][V5_METRICS].tolist() == pytest.approx(list(np.linspace(0.1, 0.9, 10)))
        missing = s.localization_missing()  # v5 scored every metric of a row at once: only a metric
        assert set(missing.metric).isdisjoint(V5_METRICS)  # registered since v5 is missing
        assert len(missing) == 4 * len(set(metric_names()) - set(V5_METRICS))


def test_a_metric_registered_since_reads_nan_on_an_old_and_a_new_store_and_is_listed_missing(
        tmp_path, toy_metric):
    path = tmp_path / "v5.duckdb"
    _v5_store(path)
    for migrate in (False, True):
        if migrate:
            with write_store(path):
                pass
        with open_store(path) as s:
            loc = s.table("localization", source="explainer")
            assert loc[toy_metric].isna().all() and len(loc) == 2
            missing = s.localization_missing(source="explainer")
            toy = missing[missing.metric == toy_metric]  # (any other metric registered since: its own rows)
            assert sorted(zip(toy.image_id, toy.metric)) == [("i1", toy_metric), ("i2", toy_metric)]


def test_writing_some_metrics_of_a_row_keeps_its_other_metrics_and_fields(tmp_path, toy_metric):
    path = tmp_path / "v5.duckdb"
    _v5_store(path)
    row = {"model_id": "m", "image_id": "i1", "label": "A", "source": "explainer", "method": "gradcam",
           "params_key": "{}", "reader": "gt"}
    with write_store(path) as w:
        before = w.table("localization", **row)
        assert w.put_table("localization", pd.DataFrame([{**row, toy_metric: 0.25}])) == 1
        after = w.table("localization", **row)
        assert after[toy_metric].tolist() == [0.25]
        pd.testing.assert_frame_equal(after.drop(columns=toy_metric), before.drop(columns=toy_metric))
        missing = w.localization_missing(source="explainer")
        assert missing[missing.metric == toy_metric].image_id.tolist() == ["i2"]


def test_a_filter_on_a_column_the_table_lacks_names_its_columns(tmp_path):
    path = tmp_path / "v5.duckdb"
    _v5_store(path)
    with write_store(path) as w:
        with pytest.raises(UnknownNameError, match="nope"):
            w.table("localization", nope=1)
        with pytest.raises(UnknownNameError, match="nope"):
            w.localization_missing(nope=1)


def test_a_metric_column_a_user_added_to_a_v5_store_survives_the_migration(tmp_path, toy_metric):
    """Before v6 the README said to add a new metric's column to the localization table; the
    migration turns every metric column into rows, that one too, instead of dropping it."""
    path = tmp_path / "v5.duckdb"
    _v5_store(path)
    con = duckdb.connect(str(path))
    con.execute(f"ALTER TABLE localization ADD COLUMN {toy_metric} DOUBLE")
    con.execute(f"UPDATE localization SET {toy_metric} = 0.25 WHERE image_id = 'i1' AND source = 'explainer'")
    con.close()
    with write_store(path):
        pass  # a writer migrates on open
    with open_store(path) as s:
        assert s.schema_version() == SCHEMA_VERSION
        got = s.table("localization", source="explainer", image_id="i1")
    assert got[toy_metric].tolist() == [0.25]
