"""The explorer's case grid (``pages/_case_grid.py``, ``pages/_grid_component/``): the cells it is
sent print in the browser as the app's tables print them; the browser's order of the rows
(``rows.js``, run in Node) is the order Python's Previous/Next buttons follow; its value becomes
the case by the (image, finding) pair it names, never a row number. Node (``/usr/bin/node``) runs
the browser's code; those tests are skipped without it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from test_pages import _app, grid_args, grid_table  # tests/app is on sys.path (no __init__.py)

from pages import _case_grid
from pages._widgets import DASH, _styled

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="needs Node to run the component's JavaScript")
#: Prints every cell as the browser prints it and the rows' order for each sort of the input
RUNNER = """
const {cellTexts, sortedOrder} = require(process.argv[1]);
const input = JSON.parse(require("fs").readFileSync(0, "utf8")), d = input.data;
console.log(JSON.stringify({texts: cellTexts(d.columns, d.rows, d.dash),
  orders: input.sorts.map((s) => sortedOrder(d.columns, d.rows, s))}));
"""
SORTS = [None, *({"column": c, "descending": d} for c in ("image_id", "outcome", "prob", "age", "iou", "n")
                 for d in (False, True))]


def _browser(data: dict, sorts: list) -> dict:
    out = subprocess.run([NODE, "-e", RUNNER, str(_case_grid.SOURCE / "rows.js")], capture_output=True,
                         input=json.dumps({"data": data, "sorts": sorts}), text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def _cases() -> pd.DataFrame:
    """A case table with what the grid must get right: values equal once printed (0.5004 and 0.5001),
    a binary tie (0.0625: Python prints 0.062), missing numbers and text, infinities, a whole
    count printed without decimals (age), an integer column."""
    return pd.DataFrame({
        "image_id": ["a", "b", "c", "d", "e", "f"], "label": ["Mass"] * 5 + ["Nodule"],
        "outcome": ["TP", None, "FN", "TP", "FP", "TN"],
        "prob": [0.0625, 0.5004, np.nan, 0.5001, 0.1, 2.675],
        "age": [40.0, np.nan, 71.0, 40.0, 12.0, 5.0],
        "iou": [np.inf, 0.25, np.nan, -np.inf, 0.25, 1 / 3],
        "n": [3, 2, 30, 4, 5, 6],
    })


def test_the_grid_is_sent_the_columns_and_each_number_rounded_as_the_tables_print_it():
    shown, data = _case_grid.grid_data(_cases(), 3)
    assert [(c["name"], c["decimals"], c["number"]) for c in data["columns"]] == [
        ("image_id", None, False), ("label", None, False), ("outcome", None, False), ("prob", 3, True),
        ("age", 0, True), ("iou", 3, True), ("n", None, True)]
    assert data["dash"] == DASH and len(data["rows"]) == 6
    assert data["rows"][0] == ["a", "Mass", "TP", 0.062, 40.0, "inf", 3]  # Python's rounding; JSON has no inf
    assert data["rows"][2][2:6] == ["FN", None, 71.0, None]  # missing: null
    assert data["rows"][1][2] is None and data["rows"][5][5] == 0.333
    assert shown.prob.tolist()[:2] == [0.062, 0.5] and list(shown.index) == list(range(6))
    json.dumps(data, allow_nan=False)  # plain JSON: no NaN, no infinity
    assert _case_grid.grid_data(_cases(), 3)[1]["rev"] == data["rev"] != _case_grid.grid_data(_cases(), 2)[1]["rev"]


@needs_node
def test_the_browser_prints_every_cell_as_the_apps_tables_print_it():
    df = _cases()
    texts = _browser(_case_grid.grid_data(df, 3)[1], [])["texts"]
    lines = _styled(df, 3).hide(axis="index").to_string(delimiter="\t").splitlines()
    assert lines[0].split("\t") == list(df.columns)
    assert texts == [line.split("\t") for line in lines[1:]]
    assert texts[0][3] == "0.062" and texts[1][2] == DASH and texts[0][4] == "40" and texts[0][5] == "inf"


@needs_node
def test_a_value_that_rounds_to_minus_zero_keeps_its_sign_as_the_tables_print_it():
    df = pd.DataFrame({"image_id": ["a", "b"], "label": ["Mass"] * 2, "score": [-0.0001, 0.0001]})
    texts = _browser(_case_grid.grid_data(df, 3)[1], [])["texts"]
    lines = _styled(df, 3).hide(axis="index").to_string(delimiter="\t").splitlines()
    assert texts == [line.split("\t") for line in lines[1:]]
    assert [t[2] for t in texts] == ["-0.000", "0.000"]


@needs_node
def test_the_browsers_order_is_the_order_previous_and_next_follow():
    shown, data = _case_grid.grid_data(_cases(), 3)
    orders = _browser(data, SORTS)["orders"]
    for sort, order in zip(SORTS, orders, strict=True):
        python = _case_grid.in_grid_order(shown, sort)
        assert order == [shown.index.get_loc(k) for k in python.index], sort
    by_prob = dict(zip(map(json.dumps, SORTS), orders, strict=True))
    # printed values sort (0.500 and 0.500 keep the order sent), numbers as numbers, missing last
    assert by_prob[json.dumps({"column": "prob", "descending": False})] == [0, 4, 1, 3, 5, 2]
    assert by_prob[json.dumps({"column": "prob", "descending": True})] == [5, 1, 3, 4, 0, 2]
    assert by_prob[json.dumps({"column": "n", "descending": False})] == [1, 0, 3, 4, 5, 2]  # 30 after 6
    assert by_prob[json.dumps({"column": "iou", "descending": False})] == [3, 1, 4, 5, 0, 2]  # -inf … inf, nan


def test_a_click_opens_its_pair_once_and_only_a_pair_of_the_table():
    shown = _case_grid.grid_data(_cases(), 3)[0]
    click = {"pair": ["d", "Mass"], "clicked": 17, "sort": None}
    assert _case_grid.clicked(click, shown, taken=None) == ("d", "Mass")
    assert _case_grid.clicked(click, shown, taken=17) is None  # taken already (a step moved on since)
    assert _case_grid.clicked({**click, "pair": ["d", "Nodule"]}, shown, taken=None) is None  # not a row
    assert _case_grid.clicked({**click, "pair": ["f", "Nodule"]}, shown, taken=3) == ("f", "Nodule")
    assert _case_grid.clicked({"pair": None, "clicked": None, "sort": None}, shown, taken=None) is None
    assert _case_grid.clicked(None, shown, taken=None) is None


def test_the_sort_comes_from_the_value_when_the_table_has_its_column():
    shown = _case_grid.grid_data(_cases(), 3)[0]
    assert _case_grid.sort_of({"sort": {"column": "prob", "descending": True}}, shown) == {
        "column": "prob", "descending": True}
    assert _case_grid.sort_of({"sort": {"column": "gone", "descending": True}}, shown) is None
    assert _case_grid.sort_of({"sort": None}, shown) is None and _case_grid.sort_of(None, shown) is None
    assert _case_grid.in_grid_order(shown, None) is shown


def test_the_component_directory_has_the_shipped_files(tmp_path, monkeypatch):
    monkeypatch.setenv("CXRXAI_HOME", str(tmp_path))
    built = _case_grid.component_dir()
    assert built.parent == tmp_path / "components" and sorted(p.name for p in built.iterdir()) == sorted(
        _case_grid.FILES)
    assert _case_grid.component_dir() == built  # assembled once
    html = (built / "index.html").read_text()
    scripts = re.findall(r'<script src="([^"]+)"', html)
    assert scripts == ["rows.js", "grid.js"] and all((built / s).is_file() for s in scripts)  # served
    assert "cdn" not in html.lower()


def _shown(at) -> tuple[str, str]:
    case, finding = at.subheader[0].value.split(" — ")
    return case, finding


@pytest.mark.slow
@needs_node
def test_the_explorer_sends_its_cases_and_next_follows_the_grids_sort(tiny_full_store):
    at = _app(tiny_full_store, "pages/explorer.py")
    assert not at.exception, at.exception
    args, grid = grid_args(at), grid_table(at)
    assert list(grid.columns[:8]) == ["image_id", "label", "outcome", "prob", "threshold", "sex", "age", "view"]
    assert tuple(args["selected"]) == _shown(at) and args["pair_columns"] == ["image_id", "label"]
    sort = {"column": "prob", "descending": True}
    at.session_state["case_grid"] = {"pair": None, "clicked": None, "sort": sort}  # a header clicked twice
    at.run()
    assert not at.exception, at.exception
    assert grid_args(at)["sort"] == sort  # back to the browser (a grid drawn afresh keeps it)
    order = _browser(grid_args(at)["data"], [sort])["orders"][0]  # the rows as the browser lists them
    listed = [tuple(grid.iloc[k][["image_id", "label"]]) for k in order]
    assert order[:3] != [0, 1, 2]  # the sort moved the first rows: Next follows it, not the order sent
    at.session_state["case_grid"] = {"pair": list(listed[0]), "clicked": 5, "sort": sort}  # a row clicked
    at.run()
    assert _shown(at) == listed[0] and at.button(key="case_step_-1").disabled
    at.button(key="case_step_1").click().run()
    assert _shown(at) == listed[1] and tuple(grid_args(at)["selected"]) == listed[1]  # the grid's next row
    assert any(f"case 2 of {len(listed)}" in c.value and "by prob, descending" in c.value for c in at.caption)
    at.button(key="case_step_1").click().run()
    assert _shown(at) == listed[2]
    # a row click and a Next click in one rerun (the row clicked, then Next before the page answered):
    # Next's step, from the case the page showed, is not undone by the row click
    at.session_state["case_grid"] = {"pair": list(listed[0]), "clicked": 6, "sort": sort}
    at.button(key="case_step_1").click().run()
    assert _shown(at) == listed[3] and tuple(grid_args(at)["selected"]) == listed[3]
    at.run()  # and the click stays taken
    assert _shown(at) == listed[3]
