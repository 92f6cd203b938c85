"""``ui.table``: a dash for a missing value in a table of any size, and a plain table past the Styler's reach."""

from __future__ import annotations

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
    assert len(huge.dataframe[0].value) == STYLED_CELLS // 3 + 1 and huge.caption[0].value.startswith("An empty cell")
