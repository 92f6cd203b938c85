"""Exported report tables say what they were computed from: model, thresholds, explainer
parameters, seed and interval method, in a ``# key: value`` header that reads back."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cxrxai.cli import main
from cxrxai.errors import DataError
from cxrxai.models.spec import ModelSpec
from cxrxai.present.provenance import read_export, report_provenance, table_provenance, with_header
from cxrxai.reports import run_report
from cxrxai.store import SCHEMA_VERSION, open_store, params_key, write_store


def test_cli_report_out_writes_the_header_and_the_same_table(tiny_full_store, tmp_path):
    out = tmp_path / "ranking.csv"
    assert main(["report", "explainer-ranking", "--store", str(tiny_full_store), "--option", "metric=hit",
                 "--option", "seed=3", "--out", str(out)]) == 0
    head, table = read_export(out)
    with open_store(tiny_full_store) as store:
        model = store.models().iloc[0]
        thresholds = store.thresholds(model.model_id)
        expected = run_report(store, "explainer-ranking", model.model_id, metric="hit", seed=3)
    assert head["report"].startswith("explainer-ranking — ")
    assert head["model"].startswith(f"{model.model_id} ({model.arch}, explains the {model.explained_output}")
    assert model.weights_sha256[:12] in head["model"]
    # every stored threshold, with the rule that chose it
    for r in thresholds.itertuples():
        assert f"{r.label}={r.threshold:.4g}" in head["thresholds"]
    assert head["seed"] == "3"
    assert "1000 resamples, seed 3" in head["interval"] and "paired" in head["interval"]
    assert json.loads(head["options"])["metric"] == "hit"
    pd.testing.assert_frame_equal(table, expected.reset_index(drop=True), check_dtype=False, check_exact=False)


def test_explainer_parameters_name_the_setting_behind_the_numbers(tiny_full_store):
    with open_store(tiny_full_store) as store:
        model_id = store.models().model_id.iloc[0]
        settings = store.map_settings(model_id, method="occlusion")
        head = report_provenance(store, "explanation-auc-subgroups", model_id, pd.DataFrame(), method="occlusion")
        sweep = run_report(store, "occlusion-sweep", model_id)
        sweep_head = report_provenance(store, "occlusion-sweep", model_id, sweep)
    top = settings.iloc[0]
    # the occlusion setting with the most maps (32/16 beside the sweep's others), and its count
    assert head["explainer parameters"] == f"occlusion {top.params_key} ({top.n:,} maps)"
    assert '"patch":32' in top.params_key and '"stride":16' in top.params_key
    assert settings.n.is_monotonic_decreasing and len(settings) == 3  # the tiny sweep's three settings
    assert "seed 0" in head["interval"]
    # the sweep lists every setting it compares, each with its number of maps
    assert sweep_head["explainer parameters"] == "; ".join(
        f"occlusion {r.params_key} ({r.n:,} maps)" for r in settings.itertuples())
    assert len(sweep) == 3


def test_a_report_without_resampling_says_so(tiny_full_store):
    with open_store(tiny_full_store) as store:
        model_id = store.models().model_id.iloc[0]
        head = report_provenance(store, "subgroup-tpr", model_id, by="age_bin", ci="bootstrap")
    assert head["seed"] == "none (no resampling)" or head["seed"].isdigit()
    assert head["interval"].startswith("rates: bootstrap 95 %")
    assert json.loads(head["options"])["by"] == "age_bin"


def test_header_round_trip_and_a_bad_header_line():
    table = pd.DataFrame({"label": ["Mass", "Nodule"], "n": [31, 4]})
    text = with_header(table, {"model": "m (densenet121)", "interval": "two\nlines"})
    head, back = read_export(text)
    assert head == {"model": "m (densenet121)", "interval": "two lines"}
    pd.testing.assert_frame_equal(back, table)
    assert with_header(table, None) == table.to_csv(index=False)
    with pytest.raises(DataError, match="line 1 is not '# key: value'"):
        read_export("# no separator\nlabel,n\n")


def test_the_pages_cached_report_carries_the_header_to_the_download(tiny_full_store):
    from pages import _cache

    with open_store(tiny_full_store) as store:
        model_id = store.models().model_id.iloc[0]
    table = _cache.report(str(tiny_full_store), "v", "localization", model_id, metric="hit", method="gradcam")
    head = table.attrs["provenance"]
    assert head["report"].startswith("localization — ") and "seed 0, 1000 resamples" in head["interval"]
    assert head["explainer parameters"].startswith("gradcam {")


def test_the_fidelity_export_names_the_settings_it_scored_and_its_bootstrap(tiny_full_store):
    with open_store(tiny_full_store) as store:
        model_id = store.models().model_id.iloc[0]
        scored = store.table("fidelity", model_id=model_id)
        head = report_provenance(store, "fidelity", model_id, run_report(store, "fidelity", model_id), seed=2)
        none = report_provenance(store, "fidelity", "another-model", pd.DataFrame())
    pairs = scored.groupby(["method", "params_key"]).size()
    assert head["explainer parameters"] == "; ".join(f"{m} {k} ({n} rows)" for (m, k), n in pairs.items())
    assert len(pairs) == 1 and pairs.index[0][0] == "gradcam"  # not every stored method's setting
    assert none["explainer parameters"] == "none scored (table fidelity has no rows for another-model)"
    assert head["interval"].startswith("percentile bootstrap over cases, 1000 resamples, seed 2")


def test_the_explainer_table_header_names_the_sweep_settings_only_when_it_shows_them(tiny_full_store):
    with open_store(tiny_full_store) as store:
        model_id = store.models().model_id.iloc[0]
        sweep = set(store.map_settings(model_id, method="occlusion").params_key)
        heads = {settings: report_provenance(store, "explainers", model_id, run_report(store, "explainers", model_id,
                                                                                         settings=settings),
                                             settings=settings)["explainer parameters"] for settings in ("main", "all")}
    assert len(sweep) == 3
    assert sum(key in heads["main"] for key in sweep) == 1 and all(key in heads["all"] for key in sweep)



def _store_with_unscored_ig(path):
    """Two cases, Grad-CAM and IG maps of both, localization scores of the Grad-CAM maps only."""
    with write_store(path) as w:
        w.put_dataset("d", source="folder", labels=["Mass"])
        w.put_images(pd.DataFrame({"image_id": ["a", "b"], "dataset": "d", "path": ["a.png", "b.png"],
                                   "sex": ["F", "M"], "age": [30, 60], "age_bin": ["20-40", "60-80"],
                                   "split": "test", "width": 8, "height": 8}))
        w.put_model(ModelSpec(name="m", arch="resnet18", labels=("Mass",), thresholds={}))
        w.put_maps([{"model_id": "m", "image_id": i, "label": "Mass", "method": method, "params": {},
                     "target": "Mass", "kind": "cam", "values": np.ones((2, 2))}
                    for i in "ab" for method in ("gradcam", "ig")])
        w.put_table("localization", pd.DataFrame({
            "model_id": "m", "image_id": ["a", "b"], "label": "Mass", "source": "explainer",
            "method": "gradcam", "params_key": params_key({}), "reader": "gt", "gt_positive": True,
            "predicted": True, "iou": [0.5, 0.3], "hit": 1.0, "pla": 1.0, "roc_auc": 0.8}))
    return path


def test_an_explainer_with_maps_and_no_rows_is_not_listed_behind_the_table_and_the_header_says_why(tmp_path):
    with open_store(_store_with_unscored_ig(tmp_path / "s.duckdb")) as store:
        table = run_report(store, "explainers", "m")
        head = report_provenance(store, "explainers", "m", table)
        built = store.meta("built_at")
    assert set(table.explainer) == {"gradcam"}
    assert head["explainer parameters"] == f"gradcam {params_key({})} (2 maps)"  # no "ig (2 maps)": no ig row
    assert head["explainers without rows"] == ("ig (2 maps): no row, none of its maps was scored on a "
                                               "true-positive case")
    assert head["store"] == "s.duckdb"
    assert head["store version"] == f"published {built} (schema v{SCHEMA_VERSION})"
    assert head["computed"]  # when the report was computed (a page caches it), not when it was downloaded


def test_a_table_that_is_not_a_report_gets_the_store_its_version_and_what_it_was_cut_to(tmp_path):
    with open_store(_store_with_unscored_ig(tmp_path / "s.duckdb")) as store:
        head = table_provenance(store, "cohort", dataset="d")
        built = store.meta("built_at")
    assert head["table"] == "cohort" and head["dataset"] == "d" and head["store"] == "s.duckdb"
    assert built and built in head["store version"] and head["exported"]
    _, back = read_export(with_header(pd.DataFrame({"n": [1]}), head))
    assert back.n.tolist() == [1]
