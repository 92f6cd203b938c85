"""Every page tells the truth on a user's own store (issue 42): a group where the model missed every
positive is a visible, clickable mark with its n; an interrupted sweep counts what is stored of what
was planned; exports and the Overview name every explainer with rows and the split used.

The store is a folder dataset with boxes written by the store's writer (``_user_store.py``)."""

from __future__ import annotations

import json
import re

import pytest
from _user_store import MODEL, SCORED_ONLY, SWEEP_PLAN, SWEEP_STORED, user_store
from test_pages import _app, grid_table

from cxrxai.present import viz
from cxrxai.present.provenance import report_provenance
from cxrxai.reports import run_report
from cxrxai.store import open_store

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    return user_store(tmp_path_factory.mktemp("user") / "mine.duckdb")


def _bars(fig) -> list[dict]:
    """One dict per drawn bar: its trace, its customdata, its drawn bottom and top."""
    out = []
    for trace in fig.data:
        base = trace.base if trace.base is not None else [0.0] * len(trace.y)
        base = base if hasattr(base, "__len__") else [base] * len(trace.y)
        for k, y in enumerate(trace.y):
            out.append({"name": trace.name, "custom": list(trace.customdata[k]), "y": y, "bottom": base[k],
                        "top": base[k] + y, "text": (trace.text[k] if trace.text is not None else "")})
    return out


def test_a_group_that_missed_every_positive_is_a_visible_mark_with_its_n(store_path):
    with open_store(store_path) as s:
        rates = run_report(s, "subgroup-tpr", MODEL, by="sex")
    zero = rates[(rates.label == "Nodule") & (rates.sex == "F")].iloc[0]
    assert zero.tpr == 0 and zero.n_pos == 2  # planted: both missed
    fig = viz.rate_bars(rates, ["sex"], rate="tpr")
    (bar,) = [b for b in _bars(fig) if b["custom"][:2] == ["Nodule", "F"]]
    assert bar["top"] - bar["bottom"] > 0.01, bar  # drawn, so it can be clicked
    assert bar["bottom"] < 0 < bar["top"] and "0 of 2" in bar["text"], bar  # at 0, with its n
    assert int(bar["custom"][2]) == 2
    others = [b for b in _bars(fig) if b["custom"][:2] != ["Nodule", "F"]]
    assert all(b["bottom"] == 0 for b in others)  # only a zero rate is drawn as the mark
    assert fig.layout.yaxis.range[0] < bar["bottom"]  # in view
    assert "rate 0" in fig.layout.title.text


def test_clicking_the_missed_groups_mark_opens_exactly_its_cases(store_path):
    with open_store(store_path) as s:
        rates = run_report(s, "subgroup-tpr", MODEL, by="sex")
    fig = viz.rate_bars(rates, ["sex"], rate="tpr")
    (bar,) = [b for b in _bars(fig) if b["custom"][:2] == ["Nodule", "F"]]
    event = {"selection": {"points": [{"customdata": bar["custom"]}], "point_indices": [0], "box": [],
                           "lasso": []}}
    at = _app(store_path, "pages/subgroups.py", rate="tpr", rate_chart=event)
    assert not at.exception, at.exception
    at.switch_page("pages/explorer.py").run()
    assert not at.exception, at.exception
    grid = grid_table(at)
    assert sorted(zip(grid.image_id, grid.label)) == [("film00", "Nodule"), ("film02", "Nodule")]


def test_an_interrupted_sweep_counts_what_is_stored_of_what_was_planned(store_path):
    with open_store(store_path) as s:
        sweep = run_report(s, "occlusion-sweep", MODEL)
    got = {(r.patch, r.stride): (r.maps, r.maps_planned) for r in sweep.itertuples()}
    assert got == {k: (n, SWEEP_PLAN["cases"]) for k, n in SWEEP_STORED.items()}
    at = _app(store_path, "pages/benchmark.py")
    assert not at.exception, at.exception
    texts = " ".join(c.value for c in at.caption)
    for (patch, stride), n in SWEEP_STORED.items():
        assert f"{patch}/{stride}: {n} of {SWEEP_PLAN['cases']} planned" in texts, texts


def test_the_explainers_export_and_the_overview_name_every_explainer_with_rows(store_path):
    with open_store(store_path) as s:
        table = run_report(s, "explainers", MODEL)
        head = report_provenance(s, "explainers", MODEL, table)
    line = head["explainer parameters"]
    for method in {*SCORED_ONLY, "gradcam", "occlusion"}:
        assert re.search(rf"(^|; ){method} \{{", line), line
    assert "ig {" in line and "maps not stored" in line
    assert "explainers without rows" not in head
    at = _app(store_path, "pages/overview.py")
    assert not at.exception, at.exception
    (caption,) = [c.value for c in at.caption if "explainers:" in c.value]
    listed = caption.split("explainers:")[1]
    assert all(m in listed for m in (*SCORED_ONLY, "gradcam", "occlusion")), caption


@pytest.mark.parametrize("name", ["subgroup-tpr", "underdiagnosis"])
def test_subgroup_exports_name_the_split_they_used(store_path, name):
    with open_store(store_path) as s:
        head = report_provenance(s, name, MODEL, None, by="sex")
    assert json.loads(head["options"])["split"] == "test"


def test_a_box_only_truth_has_one_legend_entry():
    import numpy as np
    import pandas as pd

    from cxrxai.data.cases import case_masks
    from cxrxai.present.film import film_figure

    ann = pd.DataFrame([{"image_id": "a", "label": "Nodule", "reader": "gt", "instance": 0, "kind": "box",
                         "x": 10.0, "y": 8.0, "w": 20.0, "h": 12.0, "mask_rle": None, "mask_height": None,
                         "mask_width": None}])
    masks = {r: m for (lab, r), m in dict(case_masks(ann, 52, 60)).items()}
    fig = film_figure(np.zeros((52, 60), np.float32), masks=masks, boxes=[("gt", (10.0, 8.0, 20.0, 12.0))])
    shown = [t.name for t in fig.data if t.name and t.showlegend is not False]
    assert shown.count("reference (gt)") + shown.count("reference (gt) box") == 1, shown


def test_the_sweep_legend_leaves_the_seconds_axis_visible(store_path):
    with open_store(store_path) as s:
        fig = viz.sweep_lines(run_report(s, "occlusion-sweep", MODEL))
    legend = fig.layout.legend
    assert legend.orientation == "h" and legend.yanchor == "top" and legend.y < 0  # below the plot


def test_the_app_help_and_the_config_name_a_readme_section_that_exists(capsys):
    from pathlib import Path

    from cxrxai.cli import main

    root = Path(__file__).resolve().parents[2]
    sections = re.findall(r"^#+ (.+)$", (root / "README.md").read_text(), re.M)
    with pytest.raises(SystemExit):
        main(["app", "--help"])
    text = " ".join((capsys.readouterr().out + (root / ".streamlit/config.toml").read_text()).split())
    named = re.findall(r"README(?:'s)? [\"']([^\"']+)[\"']", text)
    assert len(named) == 2 and all(n in sections for n in named), (named, sections)


def test_the_benchmark_names_the_reference_regions_this_store_has(store_path):
    at = _app(store_path, "pages/benchmark.py")
    assert not at.exception, at.exception
    texts = " ".join(c.value for c in at.caption)
    assert "phantom" not in texts, texts
    assert "Against the reference reader (gt): 10 boxes." in texts, texts  # the 10 positives' boxes


def test_a_finding_the_heat_map_drops_is_named_with_why(tmp_path):
    from _user_store import MISSED, POSITIVE

    every_effusion = MISSED | {p for p in POSITIVE if p[1] == "Effusion"}
    path = user_store(tmp_path / "missed.duckdb", missed=every_effusion)
    with open_store(path) as s:
        table = run_report(s, "explainers", MODEL, slice_="true_positive")
    assert set(table.label) == {"Nodule"}  # Effusion: no true positive, no row
    at = _app(path, "pages/benchmark.py")
    assert not at.exception, at.exception
    texts = " ".join(c.value for c in at.caption)
    assert "No row for Effusion: no true-positive case with a scored map" in texts, texts
