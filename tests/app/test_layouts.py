"""The explorer's compare and grid layouts: one figure, zoom shared, one colour scale, captions
that name model, probability and outcome, maps from the store (or live) in every panel."""

from __future__ import annotations

import json

from test_linked_state import _cases  # tests/app is on sys.path (no __init__.py)
from test_pages import _app

from cxrxai.store import open_store

MODEL = "tiny-densenet121"


def _figure(at) -> dict:
    """The figure of the layout's film component (pages/_film_view.py: one for every panel)."""
    films = [e for e in at.get("component_instance") if "cxrxai_film" in e.proto.component_name]
    assert len(films) == 1 and not at.get("plotly_chart"), "one figure for every panel"
    return json.loads(json.loads(films[0].proto.json_args)["figure"])


def _positive(store_path, label="Effusion"):
    cases = _cases(store_path)
    return cases[(cases.label == label) & (cases.outcome == "TP")].iloc[0]


def test_the_grid_shows_each_chosen_explainer_on_one_scale_with_zoom_shared(tiny_full_store):
    row = _positive(tiny_full_store)
    with open_store(tiny_full_store) as s:
        stored = set(s.stored_methods(MODEL))
    methods = [m for m in ("gradcam", "gradcam++", "ig") if m in stored]
    assert len(methods) == 3, stored
    at = _app(tiny_full_store, "pages/explorer.py", f_finding="Effusion", sel_case=row.image_id, layout="grid",
              methods_grid=methods)
    assert not at.exception
    fig = _figure(at)
    images = [t for t in fig["data"] if t["type"] == "image"]
    assert len(images) == 3
    layout = fig["layout"]
    xaxes = sorted(k for k in layout if k.startswith("xaxis"))
    anchors = {layout[k].get("matches") for k in xaxes} - {None}
    assert len(xaxes) == 3 and len(anchors) == 1  # every panel's x axis follows one: zoom is shared
    bars = [t for t in fig["data"] if t.get("marker", {}).get("showscale")]
    assert len(bars) == 1 and (bars[0]["marker"]["cmin"], bars[0]["marker"]["cmax"]) == (0.0, 1.0)
    titles = [a["text"] for a in layout["annotations"]]
    assert len(titles) == 3 and all(MODEL in t and f"P {row.prob:.3f}" in t and "TP" in t for t in titles), titles
    assert [c.value for c in at.caption if c.value.startswith(f"**{MODEL}")][0].endswith("stored")


def test_compare_puts_two_cases_side_by_side_with_their_own_outcomes(tiny_full_store):
    cases = _cases(tiny_full_store)
    tp = _positive(tiny_full_store)
    # a case of another outcome (the tiny model's decisions differ slightly between builds on 1 or 2 threads)
    other = cases[(cases.label == "Effusion") & (cases.outcome != "TP")]
    tn = other.sort_values("outcome", key=lambda o: o != "TN").iloc[0]
    at = _app(tiny_full_store, "pages/explorer.py", f_finding="Effusion", sel_case=tp.image_id, layout="compare",
              method_1="gradcam")
    assert not at.exception
    at.selectbox(key="case_1").set_value(tn.image_id).run()
    assert not at.exception
    fig = _figure(at)
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert len(titles) == 2
    assert tp.image_id in titles[0] and "TP" in titles[0] and f"P {tp.prob:.3f}" in titles[0]
    assert tn.image_id in titles[1] and tn.outcome in titles[1] and f"P {tn.prob:.3f}" in titles[1]
    assert at.query_params.get("layout") in ("compare", ["compare"])  # the layout is part of a shared link
