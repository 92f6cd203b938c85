"""The explorer's Previous/Next case buttons: each shows the neighbouring row of the case table and
makes it the grid's selection, as a click on that row does (AppTest, the tiny demo store)."""

from __future__ import annotations

import pytest
from test_pages import _app  # tests/app is on sys.path (no __init__.py)

pytestmark = pytest.mark.slow


def _shown(at) -> tuple[str, str]:
    """The case and finding the page shows (its subheader)."""
    case, finding = at.subheader[0].value.split(" — ")
    return case, finding


def _row(at, k: int) -> tuple[str, str]:
    """Row ``k`` of the case grid: (image, finding)."""
    grid = at.dataframe[0].value
    return grid.iloc[k]["image_id"], grid.iloc[k]["label"]


def _selected(at) -> list[int]:
    return list(at.session_state["case_grid"]["selection"]["rows"])


def test_next_and_previous_show_the_neighbouring_row_and_select_it_in_the_grid(tiny_full_store):
    at = _app(tiny_full_store, "pages/explorer.py")
    assert not at.exception, at.exception
    assert len(at.dataframe[0].value) >= 3
    at.session_state["case_grid"] = {"selection": {"rows": [0], "columns": [], "cells": []}}  # a row clicked
    at.run()
    assert _shown(at) == _row(at, 0) and at.button(key="case_step_-1").disabled
    at.button(key="case_step_1").click().run()
    assert not at.exception, at.exception
    assert _shown(at) == _row(at, 1) and _selected(at) == [1]
    assert at.query_params["case"] == _row(at, 1)[0]  # the URL follows
    at.run()  # the grid's selection holds the case on the next rerun
    assert _shown(at) == _row(at, 1)
    at.button(key="case_step_1").click().run()
    assert _shown(at) == _row(at, 2) and _selected(at) == [2]
    at.button(key="case_step_-1").click().run()
    assert _shown(at) == _row(at, 1) and _selected(at) == [1]
    assert not at.button(key="case_step_-1").disabled


def test_a_grid_selection_never_opens_the_same_row_of_another_table(tiny_full_store):
    """Streamlit keeps a keyed grid's selection when its data change: after a filter gives another
    table, the old row number must not open that row of the new table (nor fail past its end)."""
    at = _app(tiny_full_store, "pages/explorer.py")
    grid = at.dataframe[0].value.reset_index(drop=True)
    # a case whose row moves when the table keeps its outcome only
    k = next(k for k in range(len(grid)) if (grid.outcome == grid.outcome[k])[:k].sum() != k
             and (grid.outcome == grid.outcome[k]).sum() > k)
    at.session_state["case_grid"] = {"selection": {"rows": [k], "columns": [], "cells": []}}  # row k clicked
    at.run()
    picked = _row(at, k)
    assert _shown(at) == picked
    at.multiselect(key="f_outcome").set_value([grid.outcome[k]]).run()
    assert not at.exception, at.exception
    assert _row(at, k) != picked and _selected(at) == []  # row k is another case now: not opened
    assert _shown(at) == picked  # the chosen case stays, in its new row
    at.multiselect(key="f_outcome").set_value([o for o in ("TP", "FN", "FP", "TN") if o != grid.outcome[k]])
    at.run()
    assert not at.exception, at.exception  # the case filtered out: the page opens another, no stale row
