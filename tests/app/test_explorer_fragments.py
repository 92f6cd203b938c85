"""The explorer's film panel is a fragment: a click on its explainer or the explainer's settings
reruns that panel only, never the page's filters and case table (AppTest, the tiny demo store;
the browser tests pin that such a click still writes the URL)."""

from __future__ import annotations

import pytest
from test_pages import _app  # tests/app is on sys.path (no __init__.py)

pytestmark = pytest.mark.slow


def _fragments(at) -> dict[str, str | None]:
    """Each keyed widget's fragment (None: the page's own), from the session's widget metadata."""
    widgets = at.session_state._state._state._new_widget_state.widget_metadata
    return {wid.rsplit("-", 1)[-1]: meta.fragment_id for wid, meta in widgets.items()}


def test_the_explainer_is_the_panels_own_and_the_filters_and_cases_are_the_pages(tiny_full_store):
    at = _app(tiny_full_store, "pages/explorer.py")
    assert not at.exception, at.exception
    fragment = _fragments(at)
    assert fragment["method_0"] is not None  # the explainer: the panel's fragment reruns alone
    assert fragment["f_finding"] is None and fragment["case_grid"] is None and fragment["layout"] is None
    at.selectbox(key="method_0").set_value("occlusion").run()
    assert not at.exception, at.exception
    fragment = _fragments(at)
    assert fragment["patch_0"] == fragment["stride_0"] == fragment["method_0"] is not None
    assert at.query_params["explainer"] == "occlusion"
