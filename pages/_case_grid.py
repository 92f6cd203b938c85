"""The explorer's case grid as a small Streamlit component: a click on a row opens that case at once.

Streamlit's data grid (``on_select="rerun"``) reports a row click about 150 ms after it (a debounce in its
frontend), and its selection is a row number of the table it was drawn with. The component
(``pages/_grid_component/``: a static ``index.html``, ``rows.js`` and ``grid.js``, no build step,
assembled by :func:`pages._component_dir.assembled`) draws the table with the theme's fonts and
colours, only the rows in view (thousands of cases scroll as fast as ten), and on a click sends at
once the (image_id, label) pair of the row, never its number: a filter change can never open another
case. A click on a column header sorts by that column (again: reversed), numbers as numbers and a
missing value last; the sort comes back in the component's value and the explorer's Previous/Next
buttons follow it (:func:`in_grid_order`). Up/Down move the selection when the grid has focus.

Its value: ``{"pair": [image_id, label] | None, "clicked": stamp | None, "sort": {"column",
"descending"} | None}``: ``clicked`` is the time of the last row click (each click a new value, so
a click on the row of a case the buttons left is a click again), the pair that row's.

The cells go as compact JSON (the columns, then the rows as lists): each number already rounded to
the decimals the app's tables print it with (:func:`pages._widgets.decimals`, Python's rounding), so
the browser prints exactly what :func:`pages._widgets.table` prints and both sort the same values.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st
import streamlit.components.v1 as components

from pages._cache import session_memo
from pages._component_dir import assembled
from pages._widgets import DASH, content_key, decimals, remember

SOURCE = Path(__file__).parent / "_grid_component"
FILES = ("index.html", "rows.js", "grid.js")
#: The columns that name a row: its case
PAIR = ("image_id", "label")
#: How many tables' cells a session keeps (going back and forth between two findings needs two)
KEPT = 4


def component_dir() -> Path:
    """The component's directory under the home's cache (:func:`pages._component_dir.assembled`)."""
    return assembled("grid", SOURCE, FILES)


@st.cache_resource
def _component():
    return components.declare_component("cxrxai_grid", path=str(component_dir()))


def _rounded(column: pd.Series, places: int) -> pd.Series:
    """``column``'s values as the app's tables print them with ``places`` decimals, as numbers
    (Python's rounding of the printed digits; a missing or infinite value as it is)."""
    return column.map(lambda v: float(f"{v:.{places}f}") if math.isfinite(v) else v, na_action="ignore")


def _cells(column: pd.Series) -> list:
    """A column's cells as JSON values: None for a missing value, an infinite number as Python
    prints it ("inf": JSON has no infinity), numpy's numbers as Python's."""
    cells = column.astype(object).where(column.notna(), None)
    if pd.api.types.is_float_dtype(column):
        infinite = np.isinf(column.to_numpy(float))
        cells[infinite] = column[infinite].map(str)
    return cells.tolist()


def _build(df: pd.DataFrame, digits: int, rev: str | None) -> tuple[pd.DataFrame, dict]:
    places = decimals(df, digits)
    shown = df.assign(**{c: _rounded(df[c], p) for c, p in places.items()})
    columns = [{"name": str(c), "decimals": places.get(c),
                "number": bool(pd.api.types.is_numeric_dtype(df[c]))} for c in df.columns]
    rows = [list(row) for row in zip(*(_cells(shown[c]) for c in shown.columns), strict=True)]
    if rev is None:  # a digest of the cells themselves
        rev = hashlib.blake2b(json.dumps([columns, rows]).encode(), digest_size=12).hexdigest()
    return shown, {"columns": columns, "rows": rows, "dash": DASH, "rev": rev}


def grid_data(df: pd.DataFrame, digits: int = 3) -> tuple[pd.DataFrame, dict]:
    """``df`` as the grid shows it (its numbers rounded as printed, its index kept) and the cells the
    component receives: ``{"columns": [{"name", "decimals", "number"}], "rows", "dash", "rev"}``
    (``decimals``: None for a column printed as is; ``rev``: a digest of what the table shows, so
    the browser lays out the rows again only when they change). The session keeps its last few."""
    content = content_key(df)
    if content is None:  # values that cannot be hashed: never kept
        return _build(df, digits, rev=None)
    rev = hashlib.blake2b(repr((content, digits)).encode(), digest_size=12).hexdigest()
    return session_memo("case_grid", (content, digits), lambda: _build(df, digits, rev), size=KEPT)


def clicked(value: dict | None, shown: pd.DataFrame, taken) -> tuple[str, str] | None:
    """The case a row click chose: the value's pair when its click is not the one ``taken`` already
    and the pair is a row of ``shown`` (a click on a table the filters have changed since opens
    nothing); None otherwise."""
    if not value or value.get("clicked") is None or value["clicked"] == taken or not value.get("pair"):
        return None
    image_id, label = value["pair"]
    there = (shown[PAIR[0]] == image_id) & (shown[PAIR[1]] == label)
    return (image_id, label) if there.any() else None


def sort_of(value: dict | None, shown: pd.DataFrame) -> dict | None:
    """The grid's sort, ``{"column", "descending"}``, from its value: None when it is not sorted
    (or by a column the table no longer has)."""
    sort = (value or {}).get("sort")
    if not sort or sort.get("column") not in shown.columns:
        return None
    return {"column": sort["column"], "descending": bool(sort.get("descending"))}


def in_grid_order(shown: pd.DataFrame, sort: dict | None) -> pd.DataFrame:
    """``shown`` in the order the grid lists it: as sent, or sorted by ``sort``'s column (a stable
    sort of the values shown, a missing value last either way), as ``rows.js`` sorts it."""
    if sort is None:
        return shown
    return shown.sort_values(sort["column"], ascending=not sort["descending"], kind="stable",
                             na_position="last")


def take_click(shown: pd.DataFrame, *, key: str) -> dict | None:
    """The grid ``key``'s value; a row click on it not taken yet makes that row's case the one shown
    (:func:`clicked`: a row of ``shown``), once: a Previous/Next step after it is not undone."""
    value = st.session_state.get(key)
    picked = clicked(value, shown, st.session_state.get(f"{key}_taken"))
    take_step(key=key)  # the click is taken either way
    if picked:
        remember("case", picked[0])
        remember("case_label", picked[1])
    return value


def take_step(*, key: str) -> None:
    """The grid ``key``'s last row click counts as taken: called by :func:`take_click`, and by a
    Previous/Next step, so that :func:`take_click` later in the same rerun does not open that row
    over the step."""
    value = st.session_state.get(key)
    if value and value.get("clicked") is not None:
        st.session_state[f"{key}_taken"] = value["clicked"]


def case_grid(payload: dict, selected: tuple[str, str] | None, value: dict | None, *, key: str,
              height: int = 220) -> None:
    """Draw the grid of ``payload`` (:func:`grid_data`), ``selected`` (the case shown) highlighted
    and scrolled into view; ``value``: the component's (its sort, for a grid drawn afresh). The
    browser keeps the highlight of its own click until the page has taken it (``taken``)."""
    _component()(data=payload, selected=list(selected) if selected else None, sort=(value or {}).get("sort"),
                 taken=st.session_state.get(f"{key}_taken"), pair_columns=list(PAIR), height=height, key=key,
                 default=None)
