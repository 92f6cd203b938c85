"""Linked selection opens exactly the selected cases; page state survives navigation and lives
in the URL; a cancelled live map is not recomputed (AppTest, real pages, the tiny demo store)."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from test_pages import APP, _app, grid_table  # tests/app is on sys.path (no __init__.py)

from cxrxai import summaries
from cxrxai.store import open_store

pytestmark = pytest.mark.slow
MODEL = "tiny-densenet121"


def _cases(store_path) -> pd.DataFrame:
    with open_store(store_path) as s:
        return summaries.case_table(s, MODEL)


def _grid(at) -> list[tuple[str, str]]:
    df = grid_table(at)
    return sorted(zip(df.image_id, df.label))


def _bar(label: str, sex: str) -> dict:
    return {"selection": {"points": [{"customdata": [label, sex, 3]}], "point_indices": [0], "box": [], "lasso": []}}


@pytest.mark.parametrize("rate,outcomes", [("tpr", {"TP", "FN"}), ("fpr", {"FP", "TN"})])
def test_a_rate_bar_opens_exactly_that_groups_positives_or_negatives(tiny_full_store, rate, outcomes):
    cases = _cases(tiny_full_store)
    # a (finding, sex) group with positives and negatives, the bar's customdata as viz.rate_bars writes it
    counts = cases.groupby(["label", "sex"]).ground_truth.agg(["sum", "count"])
    label, sex = counts[(counts["sum"] >= 2) & (counts["count"] - counts["sum"] >= 2)].index[0]
    at = _app(tiny_full_store, "pages/subgroups.py", rate=rate, rate_chart=_bar(label, sex))
    assert not at.exception
    assert at.session_state["f_outcome"] == sorted(outcomes, key=["TP", "FN", "FP", "TN"].index)
    at.switch_page("pages/explorer.py").run()
    assert not at.exception
    want = cases[(cases.label == label) & (cases.sex == sex) & cases.outcome.isin(outcomes)]
    assert len(want) >= 2
    assert _grid(at) == sorted(zip(want.image_id, want.label))
    if rate == "tpr" and (want.outcome == "TP").any():  # opens on a true positive
        assert at.subheader[0].value.startswith(want[want.outcome == "TP"].image_id.iloc[0])


def test_a_lasso_over_several_findings_opens_exactly_those_pairs(tiny_full_store):
    cases = _cases(tiny_full_store)
    pos = cases[cases.ground_truth == 1]
    picked = [pos[pos.label == lab].iloc[0] for lab in pos.label.unique()[:3]]
    event = {"selection": {"points": [{"customdata": [r.image_id, r.label]} for r in picked],
                           "point_indices": list(range(len(picked))), "box": [], "lasso": []}}
    at = _app(tiny_full_store, "pages/geometry.py", geo_scatter=event)
    assert not at.exception
    at.switch_page("pages/explorer.py").run()
    assert not at.exception
    assert _grid(at) == sorted((r.image_id, r.label) for r in picked)
    assert len({lab for _, lab in _grid(at)}) == 3  # each pair keeps its own finding


def test_filters_explainer_and_parameters_survive_navigation(tiny_full_store):
    at = _app(tiny_full_store, "pages/explorer.py")
    at.multiselect(key="f_sex").set_value(["M"]).run()
    at.selectbox(key="method_0").set_value("occlusion").run()
    at.select_slider(key="patch_0").set_value(16).run()
    at.switch_page("pages/overview.py").run()
    at.switch_page("pages/explorer.py").run()
    assert not at.exception
    assert at.multiselect(key="f_sex").value == ["M"]
    assert at.selectbox(key="method_0").value == "occlusion"
    assert at.select_slider(key="patch_0").value == 16
    assert at.query_params["explainer"] == "occlusion" and at.query_params["p_patch"] == "16"


def test_a_shared_url_opens_the_same_view(tiny_full_store):
    cases = _cases(tiny_full_store)
    row = cases[(cases.label == "Effusion") & (cases.ground_truth == 1)].iloc[1]
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["store_path"] = str(tiny_full_store)
    at.query_params.update({"finding": "Effusion", "case": row.image_id, "explainer": "occlusion", "p_patch": "16",
                            "p_stride": "16", "outcome": ["TP", "FN"]})
    at.run()
    at.switch_page("pages/explorer.py").run()
    assert not at.exception
    assert at.subheader[0].value == f"{row.image_id} — Effusion"
    assert at.selectbox(key="method_0").value == "occlusion" and at.select_slider(key="patch_0").value == 16
    assert at.multiselect(key="f_outcome").value == ["TP", "FN"]


def test_a_cancelled_map_is_shown_as_cancelled_and_not_recomputed(tiny_full_store):
    from cxrxai.live import case_job

    cases = _cases(tiny_full_store)
    row = cases[(cases.label == "Effusion") & (cases.ground_truth == 1)].iloc[0]
    with open_store(tiny_full_store) as s:
        model = s.models().set_index("model_id").loc[MODEL]
    params = {"patch": 8, "stride": 4, "baseline": "black"}
    key = case_job(str(tiny_full_store), row.image_id, "Effusion", "occlusion", params, model_spec=str(model["spec"]),
                   weights_path=str(model["weights_path"]), owner="x").key
    at = _app(tiny_full_store, "pages/explorer.py", f_finding="Effusion", sel_case=row.image_id, method_0="occlusion",
              patch_0=8, stride_0=4, cancelled_0=(key, None))
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert any(c.endswith("cancelled (partial)") for c in captions), captions
    assert not at.get("progress")  # nothing was submitted again
    at.select_slider(key="stride_0").set_value(8).run()  # a new setting computes again
    captions = [c.value for c in at.caption]
    assert not any(c.endswith("cancelled (partial)") for c in captions), captions
