"""``ui.table``: a dash for a missing value in a table of any size and any column (the browser draws a
missing cell with the dataframe's placeholder, "None" unless told), a plain table past the Styler's reach,
and every table of every page drawn through it."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
from streamlit.testing.v1 import AppTest


def _render(rows: int) -> AppTest:
    def script(rows):
        import numpy as np
        import pandas as pd

        from pages import _widgets

        df = pd.DataFrame({"n": np.arange(rows, dtype=float), "y": np.nan, "z": 0.25, "auroc": 1.0,
                           "age": 40.0, "ground_truth": np.where(np.arange(rows) % 2, 1.0, np.nan)})
        _widgets.table(df, key="t")

    at = AppTest.from_function(script, args=(rows,), default_timeout=60)
    return at.run()


def test_a_small_table_prints_a_dash_and_a_huge_one_goes_plain_with_its_own_caption():
    from pages._widgets import STYLED_CELLS

    small, huge = _render(10), _render(STYLED_CELLS // 3 + 1)
    assert not small.exception and not huge.exception, (small.exception, huge.exception)
    shown = pa.ipc.open_stream(small.dataframe[0].proto.arrow_data.styler.display_values).read_all().to_pandas()
    assert shown.y.eq("—").all() and shown.n.tolist()[:3] == ["0", "1", "2"] and shown.z.eq("0.250").all()
    assert shown.auroc.eq("1.000").all()  # whole by chance, not a count: its decimals stay
    assert shown.age.eq("40").all() and shown.ground_truth.tolist()[:2] == ["—", "1"]
    assert small.caption[0].value.startswith("—: no value")
    assert not huge.dataframe[0].proto.arrow_data.styler.display_values  # plain: no Styler past the limit
    assert len(huge.dataframe[0].value) == STYLED_CELLS // 3 + 1
    # the browser draws every missing cell, small or huge table, with the placeholder: the caption's dash
    assert small.dataframe[0].proto.placeholder == huge.dataframe[0].proto.placeholder == "—"
    assert huge.caption[0].value.startswith("—: no value")


def test_a_none_in_a_text_column_shows_the_dash_the_caption_promises():
    def script():
        import pandas as pd

        from pages import _widgets

        df = pd.DataFrame({"image_id": ["a", "b"], "sex": ["F", None], "iou": [0.5, None]})
        _widgets.table(df, key="t")

    at = AppTest.from_function(script, default_timeout=60).run()
    assert not at.exception, at.exception
    frame = at.dataframe[0].proto
    shown = pa.ipc.open_stream(frame.arrow_data.styler.display_values).read_all().to_pandas()
    assert shown.sex.tolist() == ["F", "—"] and shown.iou.tolist() == ["0.500", "—"]
    assert frame.placeholder == "—" and at.caption[0].value.startswith("—:")


def test_every_page_draws_its_tables_through_ui_table():
    """A page's own ``st.dataframe`` would show "None" for a missing value (and no caption saying why)."""
    pages = Path(__file__).resolve().parents[2] / "pages"
    own = re.compile(r"\bst\.(dataframe|table)\(")
    direct = [f"{p.name}:{n}" for p in sorted(pages.glob("*.py")) if p.name != "_widgets.py"
              for n, line in enumerate(p.read_text().splitlines(), 1) if own.search(line)]
    assert not direct, direct


def test_a_table_shown_again_is_not_rendered_again_and_a_changed_one_is(monkeypatch):
    """The Styler's per-cell rendering runs once per table content in a session (a click on a case
    reran it for the whole case table); a table with one value changed is rendered afresh."""
    from pandas.io.formats.style import Styler

    rendered = []
    translate = Styler._translate

    def counted(self, *args, **kwargs):
        rendered.append(len(self.data))
        return translate(self, *args, **kwargs)

    monkeypatch.setattr(Styler, "_translate", counted)

    def script():
        import pandas as pd
        import streamlit as st

        from pages import _widgets

        _widgets.table(pd.DataFrame({"image_id": ["a", "b"], "iou": [0.5, st.session_state.get("iou")]}),
                       key="t")

    def shown(at) -> list[str]:
        return pa.ipc.open_stream(at.dataframe[0].proto.arrow_data.styler.display_values).read_all(
        ).to_pandas().iou.tolist()

    at = AppTest.from_function(script, default_timeout=60).run()
    first = at.dataframe[0].proto.SerializeToString()
    at.run()
    assert not at.exception, at.exception
    assert len(rendered) == 1 and shown(at) == ["0.500", "—"]
    assert at.dataframe[0].proto.SerializeToString() == first  # the same element, sent again
    at.session_state["iou"] = 0.25
    at.run()
    assert len(rendered) == 2 and shown(at) == ["0.500", "0.250"]


def test_a_plain_table_has_its_numbers_formatted_as_the_styled_one_prints_them():
    """Past the Styler's reach (the explorer's case grid: no display strings rendered and sent on
    every click) the browser formats the numbers: decimals, whole counts without, the dash."""
    import json

    from pages._widgets import STYLED_CELLS

    small, huge = _render(10), _render(STYLED_CELLS // 3 + 1)
    assert not huge.exception, huge.exception
    styled = small.dataframe[0].proto.arrow_data.styler.display_values
    printed = pa.ipc.open_stream(styled).read_all().to_pandas()
    formats = {name: column["type_config"]["format"]
               for name, column in json.loads(huge.dataframe[0].proto.columns).items() if name != "_index"}
    assert formats == {"n": "%d", "y": "%.3f", "z": "%.3f", "auroc": "%.3f", "age": "%d",
                       "ground_truth": "%d"}
    row = huge.dataframe[0].value.iloc[1]  # the browser's printf prints what the Styler printed
    shown = ("n", "z", "auroc", "age", "ground_truth")
    assert all(formats[name] % row[name] == printed[name][1] for name in shown)
    assert huge.dataframe[0].value.z.eq(0.25).all()  # the numbers stay numbers (no rounding sent)
