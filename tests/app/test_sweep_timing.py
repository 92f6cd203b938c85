"""The sweep's seconds per map are what the store holds, with their clock named (issue 42, item 3):
the median and interquartile range over the maps of one clock, n beside them, in the report, the
chart and the Benchmark page's caption; a store timed on the wall clock says that it counts waiting.

On a user's folder store (``_user_store.py``) whose 32/16 maps were timed on the wall clock under
load (one map 2,599 s) and whose 16/8 map on the CPU clock."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _user_store import MODEL, POSITIVE, _spec, user_store
from test_pages import _app

from cxrxai.explain.settings import Setting
from cxrxai.present import viz
from cxrxai.reports import run_report
from cxrxai.store import open_store, write_store

pytestmark = pytest.mark.slow

WALL = [1.0, 2.0, 3.0, 4.0, 2599.2]  # 32/16: one map waited 43 minutes for a busy machine


def _timed(w, patch: int, stride: int, pairs, seconds, timing) -> None:
    key = json.loads(Setting.of("occlusion", {"patch": patch, "stride": stride}, spec=_spec()).key)
    w.put_maps([{"model_id": MODEL, "image_id": i, "label": lab, "method": "occlusion", "params": key,
                 "target": lab, "kind": "occlusion", "values": np.ones((4, 4)), "seconds": s, "timing": t,
                 "device": "cpu"} for (i, lab), s, t in zip(pairs, seconds, timing)])


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = user_store(tmp_path_factory.mktemp("user") / "mine.duckdb")
    pairs = sorted(POSITIVE)
    with write_store(path) as w:
        _timed(w, 32, 16, pairs[:5], WALL, ["wall"] * 5)
        _timed(w, 16, 8, pairs[:1], [3.5], ["cpu"])
    return path


def _sweep(store_path) -> pd.DataFrame:
    with open_store(store_path) as s:
        return run_report(s, "occlusion-sweep", MODEL).set_index(["patch", "stride"])


def test_the_sweep_reports_the_median_and_iqr_of_the_stored_seconds_and_their_clock(store_path):
    t = _sweep(store_path)
    row = t.loc[(32, 16)]
    assert (row.timing, row.timed_maps, row.seconds_median, row.seconds_q1, row.seconds_q3) == (
        "wall", 5, 3.0, 2.0, 4.0)  # the mean would have been 521.8
    assert (t.loc[(16, 8), "timing"], t.loc[(16, 8), "timed_maps"], t.loc[(16, 8), "seconds_median"]) == (
        "cpu", 1, 3.5)
    # planned, none stored
    assert t.loc[(8, 8), "timed_maps"] == 0 and pd.isna(t.loc[(8, 8), "seconds_median"])
    assert "seconds_mean" not in t


def test_a_setting_timed_on_both_clocks_is_summarized_on_the_cpu_clock_alone(store_path, tmp_path):
    import shutil

    path = tmp_path / "mixed.duckdb"
    shutil.copy(store_path, path)
    with write_store(path) as w:  # one of 32/16's maps recomputed here on the CPU clock
        _timed(w, 32, 16, sorted(POSITIVE)[4:5], [6.0], ["cpu"])
    row = _sweep(path).loc[(32, 16)]
    assert (row.timing, row.timed_maps, row.seconds_median, row.maps) == ("cpu", 1, 6.0, 5)


def test_the_chart_and_the_caption_name_the_clock_and_n_beside_the_median(store_path):
    sweep = _sweep(store_path).reset_index()
    fig = viz.sweep_lines(sweep)
    (bar,) = [t for t in fig.data if t.type == "bar"]
    # the median, its bar up to the third quartile
    assert list(bar.y[:2]) == [3.0, 3.5] and list(bar.error_y.array[:1]) == [1.0]
    assert list(bar.customdata[:2]) == [[5, "wall-clock"], [1, "CPU"]]
    assert "median" in bar.name and "IQR" in bar.name
    text = viz.sweep_timing(sweep)
    assert "32/16: 3.0 s [IQR 2.0–4.0] (n = 5, wall-clock)" in text and "16/8: 3.5 s (n = 1, CPU)" in text
    assert "8/8: no map timed" in text
    assert "waiting" in text and "CPU time of the pass" in text  # what each clock counts


def test_the_benchmark_page_states_the_clock_of_its_seconds(store_path):
    at = _app(store_path, "pages/benchmark.py")
    assert not at.exception
    captions = " ".join(c.value for c in at.caption)
    assert "32/16: 3.0 s [IQR 2.0–4.0] (n = 5, wall-clock)" in captions
    assert "Seconds per map as timed where each map was computed" not in captions
