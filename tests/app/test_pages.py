"""AppTest over every page: renders on the demo-like store and on an empty store; key
interactions (choose a case, change explainer, move patch/stride, select points)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from cxrxai.store import write_store
from pages._shell import SECTIONS

#: Every page the navigation lists (a new page is tested by being listed there).
PAGES = [f"pages/{name}.py" for pages in SECTIONS.values() for name, *_ in pages]
pytestmark = pytest.mark.slow
APP = Path(__file__).resolve().parents[2] / "app.py"


def _app(store_path, page: str | None = None, **state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["store_path"] = str(store_path)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    if page:
        at.switch_page(page).run()
    return at


def grid_args(at) -> dict:
    """What the explorer sends its case grid (``pages/_case_grid.py``): data, selected, sort, …"""
    (grid,) = [e for e in at.get("component_instance") if "cxrxai_grid" in e.proto.component_name]
    return json.loads(grid.proto.json_args)


def grid_table(at) -> pd.DataFrame:
    """The explorer's case grid's rows as sent (a missing cell: None), in the order sent."""
    data = grid_args(at)["data"]
    return pd.DataFrame(data["rows"], columns=[c["name"] for c in data["columns"]], dtype=object)


@pytest.fixture()
def empty_store(tmp_path):
    path = tmp_path / "empty.duckdb"
    with write_store(path):
        pass
    return path


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_on_the_demo_store(tiny_full_store, page):
    at = _app(tiny_full_store, page)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_on_an_empty_store(empty_store, page):
    at = _app(empty_store, page)
    assert not at.exception, at.exception
    assert at.info or at.warning  # says what to run to fill it


def test_the_sidebar_store_box_chooses_a_store_and_an_emptied_box_keeps_it(tiny_full_store, empty_store):
    """The Store box shows the chosen store; a path typed there opens that store on every page; an
    emptied box (as Streamlit left it on a page switch that landed while a fragment reran: the page
    said "no store at .") keeps the store and shows it again."""
    at = _app(tiny_full_store, "pages/trust.py")
    box = lambda: next(t for t in at.sidebar.text_input if t.label == "Store")  # noqa: E731
    assert box().value == str(tiny_full_store) and not at.error
    box().set_value("").run()
    assert not at.error and box().value == str(tiny_full_store) and at.session_state["store_path"] == str(
        tiny_full_store)
    at.switch_page("pages/fidelity.py").run()
    assert not at.error and box().value == str(tiny_full_store)
    box().set_value(f" {empty_store} ").run()  # typed, with stray spaces
    assert at.session_state["store_path"] == str(empty_store) and (at.info or at.warning) and not at.error
    at.switch_page("pages/overview.py").run()
    assert box().value == str(empty_store) and (at.info or at.warning)  # the empty store says what fills it


def test_explorer_choose_case_change_explainer_and_move_occlusion_sliders(tiny_full_store):
    from cxrxai.store import open_store

    with open_store(tiny_full_store) as s:
        table = s.prediction_table("tiny-densenet121", split="test")
    case = table[(table.label == "Effusion") & (table.ground_truth == 1)].image_id.iloc[0]
    at = _app(tiny_full_store, "pages/explorer.py", f_finding="Effusion", sel_case=case)
    assert not at.exception
    assert case in at.subheader[0].value
    at.selectbox(key="method_0").set_value("occlusion").run()
    at.select_slider(key="patch_0").set_value(16).run()
    at.select_slider(key="stride_0").set_value(8).run()
    assert not at.exception
    # While the live job runs the panel shows progress and the coarse partial map; AppTest does
    # not run the polling fragment by itself, so re-run until the job has finished.
    deadline = time.monotonic() + 120
    while at.get("progress") and time.monotonic() < deadline:
        time.sleep(0.5)
        at.run()
    assert not at.get("progress") and not at.exception
    captions = [c.value for c in at.caption]
    assert any(c.startswith("tiny-densenet121 · Occlusion patch 16 stride 8") and "recomputed live on CPU" in c
               for c in captions), captions
    (film,) = [e for e in at.get("component_instance") if "cxrxai_film" in e.proto.component_name]
    spec = json.loads(film.proto.json_args)["figure"]  # the film component's figure (pages/_film_view.py)
    assert "Otsu segmentation (scored for IoU)" in spec  # the map and its scored contour are drawn
    assert [m.label for m in at.metric] == ["IoU (Otsu)", "Hit", "AUC"]


def test_explorer_shows_every_reader_of_each_new_case(tiny_full_store):
    """A case without ground truth for the finding must not leave the next case's readers hidden."""
    from cxrxai.store import open_store

    with open_store(tiny_full_store) as s:
        table = s.prediction_table("tiny-densenet121", split="test")
    eff = table[table.label == "Effusion"]
    negative, positive = eff[eff.ground_truth == 0].image_id.iloc[0], eff[eff.ground_truth == 1].image_id.iloc[0]
    at = _app(tiny_full_store, "pages/explorer.py", f_finding="Effusion", sel_case=negative)
    readers = lambda: next(m for m in at.multiselect if m.label == "Ground truth (reader)")
    assert readers().value == []
    at.session_state["sel_case"] = positive
    at.run()
    assert positive in at.subheader[0].value
    assert "gt" in readers().value and not at.exception


def test_password_gate_when_a_password_is_set(empty_store, monkeypatch):
    monkeypatch.setenv("CXRXAI_PASSWORD", "s3cret")
    at = _app(empty_store)
    assert not at.exception and not at.sidebar.text_input  # nothing but the form
    at.text_input[0].set_value("wrong")
    at.button[0].click().run()
    assert at.error and at.error[0].value == "Wrong password."
    at.text_input[0].set_value("s3cret")
    at.button[0].click().run()
    assert not at.error and at.session_state["_authenticated"]
    assert at.sidebar.text_input[0].label == "Store"


def test_the_fidelity_caption_says_why_a_value_is_missing(tiny_full_store, tmp_path):
    import shutil

    path = tmp_path / "flat.duckdb"
    shutil.copy(tiny_full_store, path)
    with write_store(path) as w, w._cursor() as cur:  # a map that never varied: no correlation
        cur.execute("UPDATE fidelity SET faithfulness = NULL, audc_diff_mean_normalized = 'NaN'::DOUBLE")
    at = _app(path, "pages/fidelity.py")
    assert not at.exception, at.exception
    caption = next(c.value for c in at.caption if c.value.startswith("Faithfulness correlation"))
    assert "nan" not in caption.lower() and "Faithfulness correlation not defined (the map" in caption
    assert "(normalised not defined: the mean-image deletion curve ends where it starts)" in caption


def test_the_trust_summary_shows_n_per_test_and_a_dash_where_a_criterion_has_no_scores(tiny_full_store):
    at = _app(tiny_full_store, "pages/trust.py")
    assert not at.exception, at.exception
    summary = at.dataframe[0].value.set_index("method")
    # the tiny store: 3 images for randomization; saliency is never scored against masks, so no utility
    assert summary.loc["gradcam", "randomization n"] == "3" and summary.loc["saliency", "randomization n"] == "3"
    assert summary.loc["saliency", ["utility", "utility mean", "utility p", "utility n"]].tolist() == ["—"] * 4
    assert int(summary.loc["gradcam", "utility n"]) >= 3
    assert not summary.isna().any().any() and "nan" not in summary.to_string().lower()
    assert any(c.value.startswith("n: the images each test rests on") for c in at.caption)


def test_the_trust_page_says_once_that_a_model_has_no_trust_scores(tiny_store):
    at = _app(tiny_store, "pages/trust.py")  # predictions and thresholds only
    assert not at.exception, at.exception
    said = [i.value for i in at.info if "no trust scores" in i.value]
    assert len(said) == 1 and "(table trust)" in said[0]  # not again for the curves and the boxes
    assert not at.dataframe and not at.get("plotly_chart")


def test_a_case_without_a_stored_threshold_says_so_instead_of_nan(tiny_full_store, tmp_path):
    import shutil

    path = tmp_path / "nothr.duckdb"
    shutil.copy(tiny_full_store, path)
    with write_store(path) as w, w._cursor() as cur:  # predictions imported without thresholds
        cur.execute("DELETE FROM thresholds")
        cur.execute("UPDATE images SET view = NULL")
    at = _app(path, "pages/explorer.py")
    assert not at.exception, at.exception
    # the panel's line names its model, then that model's decision; the case line its demographics
    header = next(m.value for m in at.markdown if " · P " in m.value)
    assert "no decision: no threshold stored for this label" in header
    case = next(m.value for m in at.markdown if "view missing" in m.value)
    for text in (header, case):
        assert "nan" not in text.lower() and "None" not in text
    # the case grid: a missing cell goes as null, which the browser prints as the dash it is sent
    # (pages/_grid_component/rows.js, pinned in test_case_grid.py)
    grid, dash = grid_table(at), grid_args(at)["data"]["dash"]
    assert grid["threshold"].isna().all() and dash == "—"
    assert grid["view"].isna().all() and not grid.isin(["nan", "None", "NaN"]).any().any()


def test_tables_print_a_dash_and_say_why_never_none_or_nan(tiny_full_store, tmp_path):
    import shutil

    path = tmp_path / "nothr.duckdb"
    shutil.copy(tiny_full_store, path)
    with write_store(path) as w, w._cursor() as cur:  # no thresholds: no TPR or FPR to report
        cur.execute("DELETE FROM thresholds")
    at = _app(path, "pages/overview.py")
    assert not at.exception, at.exception
    perf = next(d for d in at.dataframe if "auroc" in d.value.columns)
    assert perf.value["tpr"].isna().all()  # the numbers stay numbers underneath
    shown = pa.ipc.open_stream(perf.proto.arrow_data.styler.display_values).read_all().to_pandas()
    assert (shown["tpr"] == "—").all() and shown["auroc"].str.fullmatch(r"\d\.\d{3}|—").all()
    low = perf.value[["n_positive", "n_negative"]].min(axis=1) < 5  # no interval from fewer than 5 of a class
    assert (shown.loc[low, "lower"] == "—").all() and low.any() and not shown.isin(["nan", "None"]).any().any()
    assert any(c.value.startswith("—: no value") for c in at.caption)


def test_fidelity_summary_counts_the_cases_with_a_value_per_measure_and_the_chart_names_n(tiny_full_store, tmp_path):
    import json
    import shutil

    path = tmp_path / "half.duckdb"
    shutil.copy(tiny_full_store, path)
    with write_store(path) as w, w._cursor() as cur:  # one case whose map never varied: no faithfulness
        cur.execute("UPDATE fidelity SET faithfulness = NULL WHERE image_id = (SELECT min(image_id) FROM fidelity)")
        total, finite = cur.execute("SELECT count(*), count(*) FILTER (WHERE NOT isnan(faithfulness)) "
                                    "FROM fidelity").fetchone()
    at = _app(path, "pages/fidelity.py")
    assert not at.exception, at.exception
    summary = at.dataframe[0].value.set_index("measure")
    assert summary.loc["faithfulness", "n"] == finite < total and summary.loc["audc_black", "n"] == total
    assert summary[["lower", "upper"]].isna().all().all()  # the tiny store has 2 cases: no interval
    chart = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert {t["name"] for t in chart["data"] if t.get("showlegend")} == {f"gradcam (n = {total})"}
    assert "normalised" not in chart["layout"]["title"]["text"]
    at.radio(key="fid_mean").set_value("audc_diff_mean_normalized").run()
    chart = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert "mean image normalised" in chart["layout"]["title"]["text"]


def test_compare_page_answers_worse_for_anyone_and_opens_the_cases_it_plots(tmp_path):
    """The Compare page on two models of one dataset: the dossier's first sentence, the report's
    table, and a point of the probability scatter selected → exactly that (image, finding) pair."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reports"))
    from _planted import planted_store

    path = planted_store(tmp_path / "s.duckdb", positives=90, noise=("sex", "F", 2.5))
    at = _app(path, "pages/compare.py", sel_model="new")
    assert not at.exception and not at.error, at.exception
    texts = [m.value for m in at.markdown]
    assert any(t.startswith("Is new worse than old, for anyone?") for t in texts), texts
    assert at.selectbox(key="cmp_vs").value == "old"
    point = {"customdata": ["p00003", "Effusion"]}
    at.session_state["cmp_scatter"] = {"selection": {"points": [point], "point_indices": [0], "box": [],
                                                     "lasso": []}}
    at.run()
    assert at.session_state["sel_pairs"] == [("p00003", "Effusion")]
