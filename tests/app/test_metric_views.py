"""A metric registered from this test module alone (no other file touched) reaches every place a
metric is shown: the ``report`` command's help and its reports' ``metric`` choices, every page's
metric picker, thesis Table 1's columns and the explorer's case table (issue 27, "Metrics")."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from test_live_viewer import StandIn, stand_in  # noqa: F401  (tests/app is on sys.path; the fixture)
from test_page_settings import store_path as predictions_store  # noqa: F401  (the fixture)
from test_pages import _app

from cxrxai.cli import main
from cxrxai.errors import UnknownNameError
from cxrxai.metrics.registry import VIEWS, Metric, metric_names, register, unregister
from cxrxai.pipeline.runner import BuildContext
from cxrxai.pipeline.scoring import localization_stage
from cxrxai.reports import REPORTS, explainer_table, metric_choices, run_report
from cxrxai.store import open_store, params_key, write_store
from cxrxai.summaries import case_table

MODEL = "tiny-densenet121"
TOY, LABEL = "toy_peak", "Toy peak"
SETTINGS = {"gradcam": {}, "occlusion": {"patch": 32, "stride": 16}}

#: Each page's metric pickers (widget key → the kind of widget) and the view each offers.
PICKERS = {
    "pages/benchmark.py": {"bench_value": "radio", "rank_metric": "radio", "loc_metric": "radio"},
    "pages/subgroups.py": {"sub_metric": "selectbox"},
    "pages/geometry.py": {"geo_outcome": "radio", "conf_metric": "radio"},
    "pages/explorer.py": {"f_metric": "selectbox"},
}


@pytest.fixture
def toy():
    """The toy metric, in every view, for the test's duration only."""
    metric = register(Metric(TOY, LABEL, lambda s: float(s.upsampled.max()), "ranking",
                             "the map's maximum (a test's metric)", "a test", higher_is_better=None,
                             needs_truth=False, views=tuple(VIEWS)))
    yield metric
    unregister(TOY)


@pytest.fixture(scope="module")
def scored_store(predictions_store, tmp_path_factory):  # noqa: F811
    """The tiny cohort's predictions with Grad-CAM and occlusion maps of its first 24 images' findings,
    their localization scores (every metric registered now, before the toy) and lesion geometry."""
    path = tmp_path_factory.mktemp("views") / "scored.duckdb"
    shutil.copy(predictions_store, path)
    rng = np.random.default_rng(1)
    with write_store(path) as w:
        pred = w.prediction_table(MODEL)
        pred = pred[pred.image_id.isin(sorted(pred.image_id.unique())[:24])]
        w.put_maps([{"model_id": MODEL, "image_id": r.image_id, "label": r.label, "method": method,
                     "params": params, "target": r.label, "kind": "cam", "values": np.ones((2, 2))}
                    for r in pred.itertuples() for method, params in SETTINGS.items()])
        rows = pd.concat([
            pred[["image_id", "label", "prob", "predicted"]].assign(method=m, params_key=params_key(p))
                          for m, p in SETTINGS.items()])
        rows = rows.assign(model_id=MODEL, source="explainer", reader="gt", gt_positive=True,
                           predicted=rows.predicted.astype(bool))
        w.put_table("localization", rows.assign(**{m: rng.uniform(0, 1, len(rows)) for m in metric_names()}))
        geo = pred[["image_id", "label"]].assign(reader="gt", dominant="most_points", instances=1)
        w.put_table("geometry", geo.assign(**{f: rng.uniform(0, 1, len(geo)) for f in
                                              ("size", "elongation", "irrectangularity")}))
    return path


def test_every_report_with_a_metric_option_offers_it_and_the_cli_help_lists_it(toy, capsys):
    with_option = [name for name, r in REPORTS.items() if r.view is not None]
    assert len(with_option) >= 5
    assert all(TOY in metric_choices(name) for name in with_option)
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert help_text.count(TOY) == len(with_option)


def test_a_metric_outside_a_reports_view_is_refused_with_the_choices():
    with pytest.raises(UnknownNameError, match="metric of report 'explainer-ranking' 'pred_area'; allowed"):
        run_report(None, "explainer-ranking", MODEL, metric="pred_area")


def test_table_1_and_the_case_table_have_its_columns(toy, scored_store):
    with open_store(scored_store) as store:
        table = explainer_table(store, MODEL, slice_="positive")
        cases = case_table(store, MODEL, method="gradcam")
    assert {TOY, f"{TOY}_sd", f"n_{TOY}"} <= set(table.columns)
    assert TOY in cases.columns


@pytest.mark.parametrize("page", sorted(PICKERS))
def test_every_pages_metric_picker_offers_it(toy, scored_store, stand_in, page):  # noqa: F811
    at = _app(scored_store, page)
    assert not at.exception, at.exception
    for key, kind in PICKERS[page].items():
        assert LABEL in getattr(at, kind)(key=key).options, (page, key)


def test_a_report_of_a_metric_never_scored_says_why_on_the_page(toy, scored_store, stand_in):  # noqa: F811
    at = _app(scored_store, "pages/benchmark.py", rank_metric=TOY)
    assert not at.exception, at.exception
    said = [i.value for i in at.info if f"no {LABEL} ({TOY}) scores" in i.value]
    assert said and "python -m cxrxai" in said[0], [i.value for i in at.info]


@pytest.fixture
def rescored(toy, scored_store, tmp_path):
    """A copy of the scored store after the toy's registration, its localization stage run again:
    the store's own maps scored for the toy alone (the stage reads the model's name only)."""
    path = tmp_path / "rescored.duckdb"
    shutil.copy(scored_store, path)
    with write_store(path) as w:
        model = SimpleNamespace(spec=w.model_spec(MODEL))
        summary = localization_stage(BuildContext(w, "demo", model, load_images=None))
    assert summary["scored"] == summary["metrics_added_to_scored_maps"] > 0
    return path


def test_once_scored_on_the_existing_store_it_has_values_in_the_reports_table_1_and_the_case_table(
        rescored, capsys):
    with open_store(rescored) as store:
        table = explainer_table(store, MODEL, slice_="positive")
        cases = case_table(store, MODEL, method="gradcam")
        ranking = run_report(store, "explainer-ranking", MODEL, metric=TOY, n_boot=20)
        index = store.map_index(model_id=MODEL, method="gradcam")
    assert table[f"n_{TOY}"].gt(0).all() and table[TOY].notna().all() and ranking[TOY].notna().all()
    mapped = np.array([p in set(zip(index.image_id, index.label)) for p in zip(cases.image_id, cases.label)])
    assert mapped.any() and cases.loc[mapped, TOY].notna().all() and cases.loc[~mapped, TOY].isna().all()
    assert main(["report", "explainers", "--store", str(rescored), "--csv", "--option", "slice=positive"]) == 0
    assert f"n_{TOY}" in capsys.readouterr().out.splitlines()[0]


def test_once_scored_the_pages_show_it(rescored, stand_in):  # noqa: F811
    at = _app(rescored, "pages/benchmark.py", rank_metric=TOY)
    assert not at.exception, at.exception
    assert not [i.value for i in at.info if TOY in i.value]
    assert any(TOY in d.value.columns for d in at.dataframe)
