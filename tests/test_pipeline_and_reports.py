"""The demo build end to end on the tiny world: every table filled, every report computed."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cxrxai.cli import main
from cxrxai.errors import UnknownNameError
from cxrxai.explain import native_map
from cxrxai.reports import REPORTS, run_report
from cxrxai.store import open_store

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tiny_full_store):
    with open_store(tiny_full_store) as s:
        yield s


def test_tables_are_filled(store):
    counts = store.info()["counts"]
    for table in ("maps", "localization", "geometry", "trust", "fidelity", "annotations", "thresholds"):
        assert counts.get(table, 0) > 0, table
    assert set(store.info()["explainers"]) >= {"gradcam", "gradcam++", "gradientshap", "ig", "occlusion"}


def test_cams_cover_every_test_image_and_finding(store):
    idx = store.map_index(model_id="tiny-densenet121", method="gradcam")
    tests = store.images(split="test")
    assert len(idx) == len(tests) * 8 and (idx.kind == "cam").all() and (idx.height == 2).all()


def test_occlusion_is_stored_as_its_grid_and_rebuilt_per_pixel(store):
    idx = store.map_index(model_id="tiny-densenet121", method="occlusion")
    row = idx[idx.params_key.str.contains('"stride":16')].iloc[0]
    stored = store.get_map("tiny-densenet121", row.image_id, row.label, "occlusion", row.params_key)
    assert stored.kind == "occlusion_grid" and stored.values.shape == (3, 3)  # ceil((64 − 32) / 16) + 1
    assert native_map(stored).shape == (64, 64)


def test_synthetic_second_reader_is_scored_as_a_benchmark(store):
    loc = store.table("localization", model_id="tiny-densenet121")
    hb = loc[(loc.source == "reader") & (loc.method == "hb-synthetic")]
    assert len(hb) > 0 and hb.iou.dropna().between(0, 1).all() and hb.iou.mean() > 0.3


#: Reports over the planted shortcut read their own rows (tests/app/test_shortcut_page.py, the
#: shortcut_store fixture); the tiny store says which command fills them.
SHORTCUT_REPORTS = {"shortcut", "shortcut-reliance"}


@pytest.mark.parametrize("name", sorted(set(REPORTS) - SHORTCUT_REPORTS))
def test_every_report_runs_on_the_demo_store(store, name):
    """Every report has rows on the demo store; one comparing two models says that it needs the second
    (its rows on a store of two models: tests/reports/test_compare.py)."""
    from cxrxai.errors import StoreError

    if REPORTS[name].pairs:
        with pytest.raises(StoreError, match="vs=MODEL_ID"):
            run_report(store, name, "tiny-densenet121")
        return
    table = run_report(store, name, "tiny-densenet121")
    assert isinstance(table, pd.DataFrame) and len(table) > 0


@pytest.mark.parametrize("name", sorted(SHORTCUT_REPORTS))
def test_shortcut_reports_run_on_a_store_with_shortcut_rows(shortcut_store, store, name):
    from cxrxai.errors import StoreError
    from cxrxai.store import open_store

    with open_store(shortcut_store) as s:
        table = run_report(s, name, "tiny-densenet121")
    assert len(table) == (2 if name == "shortcut" else 6)  # two explainers; two models × three case sets
    with pytest.raises(StoreError, match="planted-shortcut scores.*python -m cxrxai demo"):
        run_report(store, name, "tiny-densenet121")


def test_explainer_report_has_every_explainer(store):
    t = run_report(store, "explainers", "tiny-densenet121", slice_="positive")
    assert {"gradcam", "gradcam++"} <= set(t.explainer)
    # only explainers: the second reader and the baselines have their own source, not rows of Table 1
    assert {e.split(" ")[0] for e in t.explainer} == {"gradcam", "gradcam++", "gradientshap", "ig", "occlusion"}
    assert t.roc_auc.dropna().between(0, 1).all()
    # thesis Table 1: one setting per method (occlusion 32/16); the sweep's only with settings="all"
    assert sorted(e for e in t.explainer.unique() if e.startswith("occlusion")) == ["occlusion 32/16"]
    every = run_report(store, "explainers", "tiny-densenet121", slice_="positive", settings="all")
    assert {e for e in every.explainer if e.startswith("occlusion")} == {"occlusion 32/16", "occlusion 32/32",
                                                                          "occlusion 16/16"}
    with pytest.raises(UnknownNameError, match="settings"):
        run_report(store, "explainers", "tiny-densenet121", settings="some")


def test_occlusion_sweep_report_lists_settings_with_timings(store):
    t = run_report(store, "occlusion-sweep", "tiny-densenet121")
    assert set(zip(t.patch, t.stride)) == {(32, 32), (32, 16), (16, 16)}
    assert (t.seconds_median > 0).all() and (t.timed_on == "cpu").all()  # where each setting was timed
    assert (t.timing == "cpu").all() and (t.timed_maps == t.maps).all()  # by the pass's CPU time
    # 32/16 is also stored for 2 positives per finding: by default only the sweep's shared cases count
    every = run_report(store, "occlusion-sweep", "tiny-densenet121", shared=False).set_index(["patch", "stride"])
    assert every.loc[(32, 16), "maps"] > every.loc[(32, 32), "maps"]
    # maps: what each setting has stored (issue 42); its metrics rest on the shared cases alone
    assert t.set_index(["patch", "stride"]).maps.to_dict() == every.maps.to_dict()
    assert t.cases_scored.nunique() == 1 and t.cases_scored.iloc[0] <= every.cases_scored.min()


def test_trust_table_has_verdicts(store):
    t = run_report(store, "trust", "tiny-densenet121")
    assert set(t.method) == {"gradcam", "saliency"}
    assert set(t.randomization) <= {"PASS", "FAIL"} and "repeatability" in t


def test_report_cli_json(tiny_full_store, capsys):
    assert main(["report", "underdiagnosis", "--store", str(tiny_full_store), "--json",
                 "--option", "by=age_bin"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"age_bin", "fpr", "fnr", "n_NNF", "n_PNF"} <= set(rows[0])


def test_report_cli_options_as_typed(tiny_full_store, capsys):
    """``slice`` names the ``slice_`` keyword; ``by=sex,age_bin`` is the intersection."""
    assert main(["report", "subgroup-tpr", "--store", str(tiny_full_store), "--json", "--option", "by=sex,age_bin"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"sex", "age_bin", "tpr"} <= set(rows[0])
    assert main(["report", "explainers", "--store", str(tiny_full_store), "--csv", "--option", "slice=positive"]) == 0
    assert "explainer" in capsys.readouterr().out.splitlines()[0]


def test_report_unknown_option_names_the_allowed_ones(store):
    with pytest.raises(UnknownNameError, match="allowed: 'by', 'ci', 'split'"):
        run_report(store, "subgroup-tpr", "tiny-densenet121", colour="red")


def test_export_segmentations_in_chexlocalize_format(tiny_full_store, tmp_path):
    out = tmp_path / "seg.json"
    assert main(["export", "segmentations", "--store", str(tiny_full_store), "--model", "tiny-densenet121",
                 "--out", str(out)]) == 0
    seg = json.loads(out.read_text())
    from cxrxai.data.masks import decode_rle

    cxr, tasks = next(iter(seg.items()))
    assert len(tasks) == 8 and all(decode_rle(t["counts"], *t["size"]).shape == (96, 96) for t in tasks.values())


def test_score_cli_on_an_external_map(tmp_path, capsys):
    m = np.zeros((4, 4), np.float32)
    m[1, 2] = 1.0
    np.save(tmp_path / "m.npy", m)
    assert main(["score", "--map", str(tmp_path / "m.npy"), "--box", "8,0,8,16", "--size", "16x16", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hit"] == 1.0 and out["gt_instances"] == 1 and 0 < out["roc_auc"] <= 1


def test_extra_models_get_predictions_and_thresholds_on_validation_and_test(tmp_path, tiny_model_path, tiny_config):
    """A second model in the demo can be compared with the first on every page."""
    from cxrxai.models.registry import load, save
    from cxrxai.pipeline import Stage, build_demo, predictions_stage, thresholds_stage

    first = load(tiny_model_path)
    second = save(first.module, first.spec.with_(name="tiny-second"), tmp_path / "models" / "tiny-second.pt")
    path = tmp_path / "two.duckdb"
    report = build_demo(path, model_path=tiny_model_path, data_dir=tiny_model_path.parent.parent / "phantoms",
                        config=tiny_config, stages=[Stage("predictions", predictions_stage),
                                             Stage("thresholds", thresholds_stage)], extra_models=[second])
    assert report["model tiny-second"]["predictions"]["predicted"] > 0
    with open_store(path) as s:
        assert set(s.models().model_id) == {"tiny-densenet121", "tiny-second"}
        splits = set(s.prediction_table("tiny-second").split)
        assert splits == {"val", "test"}
        assert not s.thresholds("tiny-second").empty


def test_fidelity_summary_keeps_each_occlusion_setting_apart(tiny_full_store, tmp_path):
    import shutil

    from cxrxai.store import write_store

    path = tmp_path / "settings.duckdb"
    shutil.copy(tiny_full_store, path)
    keys = {f"{p}/{s}": json.dumps({"patch": p, "stride": s}) for p, s in [(32, 16), (16, 16)]}
    with write_store(path) as w, w._cursor() as cur:  # a store whose fidelity scored two occlusion settings
        n = cur.execute("SELECT count(*) FROM fidelity").fetchone()[0]
        for key in keys.values():
            cur.execute("INSERT INTO fidelity SELECT * REPLACE ('occlusion' AS method, ? AS params_key) FROM fidelity "
                        "WHERE method = 'gradcam'", [key])
    with open_store(path) as s:
        summary = run_report(s, "fidelity", "tiny-densenet121").set_index(["measure", "method"])
    n_black = summary.xs("audc_black", level="measure")["n"]
    assert n_black.to_dict() == {"gradcam": n, "occlusion 16/16": n, "occlusion 32/16": n}  # not 2 n as one


def test_the_build_records_each_explainers_default_setting(store):
    from cxrxai.explain import method_names

    defaults = store.default_settings("tiny-densenet121")
    assert set(defaults) == set(method_names())
    assert {k: json.loads(defaults["occlusion"])[k] for k in ("patch", "stride")} == {"patch": 32, "stride": 16}
    stored = store.map_settings("tiny-densenet121", method="gradcam").params_key.tolist()
    assert stored == [defaults["gradcam"]]  # the key the maps were stored under, byte for byte


def test_reports_score_an_explainers_default_setting_where_another_has_as_many_rows(tiny_full_store, tmp_path):
    """A setting that sorts first with as many scored cases as occlusion 32/16 (the tie a full build's
    sweep makes) must not replace the default in the ranking; without the recorded defaults (a store
    built before they were), the most stored setting is the fallback."""
    import shutil

    from cxrxai.reports import explainer_ranking, localization_cases
    from cxrxai.store import write_store
    from cxrxai.summaries import case_table

    path = tmp_path / "tie.duckdb"
    shutil.copy(tiny_full_store, path)
    model, other = "tiny-densenet121", '{"a":1}'
    with write_store(path) as w, w._cursor() as cur:
        occlusion = w.table("localization", method="occlusion", model_id=model)
        w.put_table("localization", occlusion.drop_duplicates(["model_id", "image_id", "label", "reader"])
                    .assign(params_key=other, iou=0.987))
        default = json.loads(w.meta(f"default_settings:{model}"))["occlusion"]
        for table in ("localization", "localization_scores"):  # the default's rows now come last
            cur.execute(f"CREATE TEMP TABLE moved AS SELECT * FROM {table} WHERE params_key = ?", [default])
            cur.execute(f"DELETE FROM {table} WHERE params_key = ?", [default])
            cur.execute(f"INSERT INTO {table} SELECT * FROM moved")
            cur.execute("DROP TABLE moved")
    with open_store(path) as s:
        assert localization_cases(s, model, slice_="all", method="occlusion").params_key.unique().tolist() == [default]
        assert "occlusion 32/16" in set(explainer_ranking(s, model, slice_="all").explainer)
        shown = case_table(s, model, method="occlusion").dropna(subset=["iou"])
        assert len(shown) and not (shown.iou == 0.987).any()  # the explorer's scores are the default's too
    with write_store(path) as w, w._cursor() as cur:
        cur.execute("DELETE FROM meta WHERE key LIKE 'default_settings:%'")
    with open_store(path) as s:
        assert localization_cases(s, model, slice_="all", method="occlusion").params_key.unique().tolist() == [other]


def test_explainer_table_keeps_two_settings_of_a_method_apart(tiny_full_store, tmp_path):
    import shutil

    from cxrxai.reports import explainer_table
    from cxrxai.store import write_store

    path = tmp_path / "two.duckdb"
    shutil.copy(tiny_full_store, path)
    with write_store(path) as w, w._cursor() as cur:  # Grad-CAM scored again at a second (made-up) layer
        for table in ("localization", "localization_scores"):
            cur.execute(f"INSERT INTO {table} SELECT * REPLACE (replace(params_key, '\"layer\":\"', "
                        f"'\"layer\":\"other.') AS params_key) FROM {table} WHERE method = 'gradcam'")
    with open_store(path) as s:
        t = explainer_table(s, "tiny-densenet121", slice_="all", settings="all")
        layer = json.loads(s.default_settings("tiny-densenet121")["gradcam"])["layer"]
    names = sorted(n for n in t.explainer.unique() if n.startswith("gradcam") and not n.startswith("gradcam++"))
    assert names == [f"gradcam (layer={layer})", f"gradcam (layer=other.{layer})"]
    n = t[t.explainer.isin(names)].groupby("explainer")["n"].sum()
    assert n.iloc[0] == n.iloc[1]  # each its own n, not both counted as one
    with open_store(tiny_full_store) as s:  # Arun's utility scores one setting: the same n as before the copy
        before = run_report(s, "trust", "tiny-densenet121").set_index("method").loc["gradcam", "utility_n"]
    with open_store(path) as s:
        assert run_report(s, "trust", "tiny-densenet121").set_index("method").loc["gradcam", "utility_n"] == before


def test_fidelity_intervals_are_the_percentile_bootstrap_its_export_header_names(tiny_full_store, tmp_path):
    import shutil

    from cxrxai import stats
    from cxrxai.present.provenance import INTERVALS
    from cxrxai.store import write_store

    path = tmp_path / "more.duckdb"
    shutil.copy(tiny_full_store, path)
    with write_store(path) as w, w._cursor() as cur:  # enough cases for an interval (the tiny build scores 2)
        for i in range(4):
            cur.execute(f"INSERT INTO fidelity SELECT * REPLACE (image_id || '-{i}' AS image_id, "
                        f"auic_black + {i} / 10 AS auic_black) FROM fidelity WHERE method = 'gradcam'")
    with open_store(path) as s:
        f = s.table("fidelity", model_id="tiny-densenet121")
        row = run_report(s, "fidelity", "tiny-densenet121").set_index(["measure", "method"]).loc[("auic_black", "gradcam")]
    cols = ["faithfulness", "audc_black", "auic_black", "audc_diff_black", "audc_mean", "auic_mean", "audc_diff_mean",
            "audc_diff_mean_normalized"]
    reps = stats.bootstrap_replicates(f[f.method == "gradcam"][cols].reset_index(drop=True), n_boot=1000, seed=0)
    assert row["n"] >= stats.MIN_CI_N
    assert (row["lower"], row["upper"]) == pytest.approx(tuple(np.percentile(reps["auic_black"], [2.5, 97.5])))
    assert INTERVALS["fidelity"].startswith("percentile bootstrap")
