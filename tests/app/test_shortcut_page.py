"""The benchmark page's "model or method?" section on a store with planted-shortcut rows: the
verdict table with n, the difference chart, and the films of the chosen case for both models."""

from __future__ import annotations

import json

import pytest
from test_pages import _app

from cxrxai.reports import run_report
from cxrxai.store import open_store

pytestmark = pytest.mark.slow


def test_shortcut_section_shows_verdicts_with_n_and_the_chosen_cases_films(shortcut_store):
    with open_store(shortcut_store) as s:
        rows = s.table("shortcut")
        summary = run_report(s, "shortcut", "tiny-densenet121")
    case = sorted(rows.image_id.unique())[1]
    at = _app(shortcut_store, "pages/benchmark.py", shortcut_case=case)
    assert not at.exception, at.exception
    tables = [t.value for t in at.dataframe]
    verdicts = next(t for t in tables if "verdict" in t.columns)
    assert sorted(verdicts.explainer) == sorted(summary.method)
    for r in summary.itertuples():
        shown = verdicts.set_index("explainer").loc[r.method]
        assert shown["n pairs"] == r.pairs and shown.verdict == r.verdict
        assert "nan" not in " ".join(map(str, shown.to_numpy())).lower()
    # the tiny model's Grad-CAM may have no positive mass (no pairs); occlusion scores all five cases
    assert summary.set_index("method").loc["occlusion", "pairs"] == 5
    reliance = next(t for t in tables if "shift (95 % CI)" in t.columns)
    assert set(reliance.cases) == {"all cases", "positives", "negatives"} and reliance.n.max() == 5
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    diff = next(c for c in charts if "shortcut model − control" in c["layout"]["title"]["text"])
    assert sorted(diff["data"][0]["y"]) == sorted(summary.method)
    films = next(c for c in charts if any(t["type"] == "image" for t in c["data"]))
    titles = [a["text"] for a in films["layout"]["annotations"]]
    assert len([t for t in films["data"] if t["type"] == "image"]) == 4  # 2 explainers × (shortcut, control)
    assert sum("· shortcut (tiny-shortcut)" in t for t in titles) == 2
    assert sum("· control (tiny-densenet121)" in t for t in titles) == 2
    one = rows[(rows.image_id == case) & (rows.role == "shortcut")].iloc[0]
    assert any(f"p={one.prob:.2f}, without marker {one.prob_without:.2f}" in t for t in titles)
    legend = {t.get("name") for t in films["data"]}
    assert {"reference (gt)", "reader shortcut"} <= legend
