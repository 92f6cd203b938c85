"""The explorer's "Every label's probability" expander draws its table only while open: closed,
every data click paid for a styled table nobody saw (AppTest, the tiny demo store)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1.element_tree import Dataframe
from test_pages import _app  # tests/app is on sys.path (no __init__.py)

pytestmark = pytest.mark.slow

LABEL = "Every label's probability for this image"


def _tables_in_expander(at) -> int:
    (box,) = [e for e in at.expander if e.label == LABEL]
    return sum(isinstance(e, Dataframe) for e in box.children.values())


def test_the_probabilities_table_is_drawn_only_while_its_expander_is_open(tiny_store):
    at = _app(tiny_store, "pages/explorer.py")
    assert not at.exception, at.exception
    assert _tables_in_expander(at) == 0
    at.session_state["case_probabilities_open"] = True
    at.run()
    assert not at.exception, at.exception
    assert _tables_in_expander(at) == 1
