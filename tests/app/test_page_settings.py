"""Issue 26, the annoying things outside the film viewer: the Subgroups page keeps its settings across a
visit to the explorer; a selection made on another page lives in the explorer's URL, so a reload shows
exactly it; ``/overview`` opens the Overview; "Top %" shows a value; every CSV the Overview offers
carries a provenance header naming the store's published version.

One store of the tiny phantom cohort and one model's predictions and thresholds, written through the
store's writer (no training, no maps); the live worker is a stand-in (nothing is computed).
"""

from __future__ import annotations

import numpy as np
import pytest
import streamlit
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest
from test_live_viewer import StandIn, stand_in  # noqa: F401  (tests/app is on sys.path; the fixture)
from test_pages import APP, _app, grid_table

import pages._common as ui
from cxrxai import summaries
from cxrxai.data.demo import load_demo
from cxrxai.labels import DEMO_LABELS
from cxrxai.models.spec import ModelSpec
from cxrxai.pipeline.demo_cases import put_demo_dataset
from cxrxai.present.provenance import read_export
from cxrxai.store import open_store, write_store

MODEL = "tiny-densenet121"


@pytest.fixture(scope="module")
def store_path(tiny_config, tmp_path_factory):
    root = tmp_path_factory.mktemp("settings")
    data = load_demo(tiny_config, root / "phantoms")
    path = root / "s.duckdb"
    rng = np.random.default_rng(0)
    with write_store(path) as w:
        put_demo_dataset(w, data, tiny_config, root / "phantoms")
        ids = sorted(w.images().image_id)
        probs = rng.uniform(0.05, 0.95, (len(ids), len(DEMO_LABELS))).astype(np.float32)
        w.put_model(ModelSpec(name=MODEL, arch="densenet121", labels=tuple(DEMO_LABELS), thresholds={}))
        w.put_predictions(MODEL, ids, tuple(DEMO_LABELS), np.log(probs / (1 - probs)), probs)
        w.put_thresholds(MODEL, [{"label": lab, "threshold": 0.5, "method": "test", "criterion": None,
                                  "split": None} for lab in DEMO_LABELS])
    return path


def _grid(at) -> list[tuple[str, str]]:
    df = grid_table(at)
    return sorted(zip(df.image_id, df.label))


def test_the_subgroups_settings_survive_a_visit_to_the_explorer(store_path, stand_in):  # noqa: F811
    at = _app(store_path, "pages/subgroups.py")
    chosen = {"grouping": "sex × age_bin", "rate": "fpr", "ci": "bootstrap"}
    for key, value in chosen.items():
        at.radio(key=key).set_value(value).run()
    at.selectbox(key="sub_method").set_value("occlusion").run()
    at.selectbox(key="sub_metric").set_value("iou").run()
    assert not at.exception, at.exception
    at.switch_page("pages/explorer.py").run()
    at.switch_page("pages/subgroups.py").run()
    assert not at.exception, at.exception
    assert {key: at.radio(key=key).value for key in chosen} == chosen
    assert at.selectbox(key="sub_method").value == "occlusion"
    assert at.selectbox(key="sub_metric").value == "iou"


def test_a_selection_from_another_page_reloads_from_its_url(store_path, stand_in):  # noqa: F811
    with open_store(store_path) as s:
        cases = summaries.case_table(s, MODEL)
    pos = cases[cases.ground_truth == 1]
    firsts = (pos[pos.label == lab].iloc[0] for lab in pos.label.unique()[:3])
    picked = sorted((r.image_id, r.label) for r in firsts)
    at = _app(store_path, "pages/explorer.py", sel_pairs=picked)  # as a box selection on Geometry leaves it
    assert not at.exception, at.exception
    assert _grid(at) == picked
    url = dict(at.query_params)
    reloaded = AppTest.from_file(str(APP), default_timeout=120)  # a new session from that URL
    reloaded.session_state["store_path"] = str(store_path)
    reloaded.query_params.update(url)
    reloaded.run()
    reloaded.switch_page("pages/explorer.py").run()
    assert not reloaded.exception, reloaded.exception
    assert _grid(reloaded) == picked  # exactly the selection, not every case of the finding
    assert reloaded.subheader[0].value.split(" — ")[0] in {i for i, _ in picked}


def test_a_selection_too_long_for_the_url_says_so(store_path, stand_in):  # noqa: F811
    with open_store(store_path) as s:
        ids = sorted(s.images().image_id)
    many = [(i, lab) for i in ids for lab in DEMO_LABELS][: ui.URL_PAIRS + 1]
    assert len(many) == ui.URL_PAIRS + 1
    at = _app(store_path, "pages/explorer.py", sel_pairs=many)
    assert not at.exception, at.exception
    assert "pair" not in at.query_params
    assert any("too many for the URL" in c.value for c in at.caption), [c.value for c in at.caption]


def test_slash_overview_opens_the_overview(store_path):
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["store_path"] = str(store_path)
    at.run()
    assert not at.exception, at.exception
    pages = at._registered_pages  # what st.navigation registered; a server resolves a typed URL with it
    manager = PagesManager(str(APP))
    manager.set_script_intent("", "overview")  # what a browser at /overview asks for: a name, no hash
    found = manager.set_pages_and_resolve(pages)  # no fallback: None is "Page not found"
    assert found is not None and found["script_path"].endswith("pages/overview.py"), found
    root = [p for p in pages.values() if p["url_pathname"] == ""]
    assert len(root) == 1 and root[0]["script_path"].endswith("pages/overview.py")  # and / still opens it
    shown = [p["page_name"] for p in pages.values()]
    assert shown.count("Overview") == 2 and len(shown) == 9  # the eight pages and the hidden /overview
    at.switch_page("pages/overview.py").run()
    assert not at.exception and at.title[0].value == "Overview"


def test_every_overview_download_carries_the_store_and_its_published_version(store_path, monkeypatch):
    got: dict[str, str] = {}

    def download_button(label, data, *, file_name, **kwargs):
        data = data() if callable(data) else data  # the dossier is built when clicked
        got[file_name] = data.decode() if isinstance(data, bytes) else data

    monkeypatch.setattr(streamlit, "download_button", download_button)
    at = _app(store_path, "pages/overview.py")
    assert not at.exception, at.exception
    with open_store(store_path) as s:
        built = s.meta("built_at")
    assert {n.split("-")[-1] for n in got} >= {"cohort.csv", "labels.csv", "auroc.csv"}, sorted(got)
    dossier = got.pop(next(n for n in got if n.endswith(".html")))  # the audit dossier: its own summary
    assert f"<dd>{store_path}</dd>" in dossier and f"published {built}" in dossier
    for name, text in got.items():
        head, table = read_export(text)
        assert head.get("store") == store_path.name and built in head.get("store version", ""), (name, head)
        assert len(table), name
    cohort, _ = read_export(next(t for n, t in got.items() if n.endswith("cohort.csv")))
    assert cohort["table"] == "cohort" and cohort["dataset"] == "demo"
