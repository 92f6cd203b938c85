"""The film component's zoom across figures (``pages/_film_component/zoom.js``), run in Node.

A view is recorded as each axis's range in fractions of the film's extent; a new figure of the
same case(s) opens at it, and with "Keep zoom" a figure of another case too, on the same
film-relative region, scaled when the films' sizes differ. Needs Node (skipped without it).
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from pages import _film_view

NODE = shutil.which("node")
ZOOM_JS = _film_view.SOURCE / "zoom.js"
#: Runs zoom.js: the record of a view of the first layout, carried to the second (keep or not)
RUNNER = """
const {carriedZoom, zoomRecord} = require(process.argv[1]);
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const record = zoomRecord(input.first, input.ranges);
console.log(JSON.stringify({record, carried: carriedZoom(record, input.second, input.keep)}));
"""
pytestmark = pytest.mark.skipif(NODE is None, reason="needs Node to run the component's JavaScript")


def _layout(case: str, width: int, height: int) -> dict:
    """A film figure's layout as film_figure makes it: x over the width, y downwards."""
    return {"uirevision": f"view:{case}", "xaxis": {"range": [0, width]}, "yaxis": {"range": [height, 0]}}


def _carry(first: dict, ranges: dict, second: dict, keep: bool) -> dict:
    out = subprocess.run([NODE, "-e", RUNNER, str(ZOOM_JS)], capture_output=True, text=True, timeout=60,
                         check=True, input=json.dumps({"first": first, "ranges": ranges, "second": second,
                                                       "keep": keep}))
    return json.loads(out.stdout)


def test_keep_zoom_opens_another_case_on_the_same_film_relative_region_scaled_to_its_size():
    zoomed = {"xaxis": [50, 150], "yaxis": [300, 100]}  # a quarter of the width, a half of the height
    out = _carry(_layout("a", 200, 400), zoomed, _layout("b", 1000, 800), keep=True)
    assert out["record"]["axes"] == {"xaxis": [0.25, 0.75], "yaxis": [0.25, 0.75]}
    assert out["carried"] == {"xaxis.range": [250, 750], "yaxis.range": [600, 200]}


def test_without_keep_zoom_another_case_opens_at_the_full_film_and_the_same_case_at_its_view():
    zoomed = {"xaxis": [50, 150], "yaxis": [300, 100]}
    assert _carry(_layout("a", 200, 400), zoomed, _layout("b", 200, 400), keep=False)["carried"] is None
    same = _carry(_layout("a", 200, 400), zoomed, _layout("a", 200, 400), keep=False)["carried"]
    assert same == {"xaxis.range": [50, 150], "yaxis.range": [300, 100]}  # another explainer, one case


def test_a_full_view_is_carried_as_nothing_and_axes_the_new_figure_lacks_are_left_out():
    full = {"xaxis": [0, 200], "yaxis": [400, 0]}
    assert _carry(_layout("a", 200, 400), full, _layout("b", 300, 300), keep=True)["carried"] is None
    grid = {**_layout("a", 200, 400), "xaxis2": {"range": [0, 100]}}
    ranges = {"xaxis": [0, 100], "xaxis2": [0, 50], "yaxis": [400, 0]}
    out = _carry(grid, ranges, _layout("b", 200, 400), True)
    assert out["carried"] == {"xaxis.range": [0, 100], "yaxis.range": [400, 0]}
