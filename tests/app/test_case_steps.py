"""The explorer's Previous/Next case buttons: each shows the neighbouring row of the case grid and
highlights it there, as a click on that row does (AppTest, the tiny demo store)."""

from __future__ import annotations

import pytest
from test_pages import _app, grid_args, grid_table  # tests/app is on sys.path (no __init__.py)

pytestmark = pytest.mark.slow


def _shown(at) -> tuple[str, str]:
    """The case and finding the page shows (its subheader)."""
    case, finding = at.subheader[0].value.split(" — ")
    return case, finding


def _row(at, k: int) -> tuple[str, str]:
    """Row ``k`` of the case grid: (image, finding)."""
    grid = grid_table(at)
    return grid.iloc[k]["image_id"], grid.iloc[k]["label"]


def _selected(at) -> tuple[str, str]:
    """The case the grid highlights."""
    return tuple(grid_args(at)["selected"])


def _click(at, pair: tuple[str, str], stamp: int) -> None:
    """A click on the grid's row of ``pair`` (the component's value; ``stamp``: the click's time)."""
    at.session_state["case_grid"] = {"pair": list(pair), "clicked": stamp, "sort": None}
    at.run()


def test_next_and_previous_show_the_neighbouring_row_and_select_it_in_the_grid(tiny_full_store):
    at = _app(tiny_full_store, "pages/explorer.py")
    assert not at.exception, at.exception
    assert len(grid_table(at)) >= 3
    _click(at, _row(at, 0), 1)  # a row clicked
    assert _shown(at) == _row(at, 0) and at.button(key="case_step_-1").disabled
    at.button(key="case_step_1").click().run()
    assert not at.exception, at.exception
    assert _shown(at) == _row(at, 1) and _selected(at) == _row(at, 1)
    assert at.query_params["case"] == _row(at, 1)[0]  # the URL follows
    at.run()  # the grid's last click (row 0) does not take the case back on the next rerun
    assert _shown(at) == _row(at, 1)
    at.button(key="case_step_1").click().run()
    assert _shown(at) == _row(at, 2) and _selected(at) == _row(at, 2)
    at.button(key="case_step_-1").click().run()
    assert _shown(at) == _row(at, 1) and _selected(at) == _row(at, 1)
    assert not at.button(key="case_step_-1").disabled


def test_a_grid_selection_never_opens_the_same_row_of_another_table(tiny_full_store):
    """A click names its row's case, never the row's number: after a filter gives another table,
    the case stays in its new row, and a click made on the old table opens nothing else."""
    at = _app(tiny_full_store, "pages/explorer.py")
    grid = grid_table(at)
    # a case whose row moves when the table keeps its outcome only
    k = next(k for k in range(len(grid)) if (grid.outcome == grid.outcome[k])[:k].sum() != k
             and (grid.outcome == grid.outcome[k]).sum() > k)
    _click(at, _row(at, k), 1)  # row k clicked
    picked = _row(at, k)
    assert _shown(at) == picked
    at.multiselect(key="f_outcome").set_value([grid.outcome[k]]).run()
    assert not at.exception, at.exception
    assert _row(at, k) != picked and _selected(at) == picked  # row k is another case now: not opened
    assert _shown(at) == picked  # the chosen case stays, in its new row
    at.multiselect(key="f_outcome").set_value([o for o in ("TP", "FN", "FP", "TN") if o != grid.outcome[k]])
    at.run()
    assert not at.exception, at.exception  # the case filtered out: the page opens another, no stale row
    assert _shown(at) != picked and _selected(at) == _shown(at)
    before = _shown(at)
    _click(at, picked, 2)  # a click on the old table's row (the browser not yet redrawn): ignored
    assert _shown(at) == before and not at.exception
