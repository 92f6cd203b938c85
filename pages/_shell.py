"""The app's frame: page config, password gate, sidebar, navigation and every page's opening.

``app.py`` runs :func:`app_shell` and the chosen page inside :func:`routing`; a page reached
before routing existed (a first deep link) is sent back through it by :func:`require_app`.
"""

from __future__ import annotations

import hmac
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from cxrxai.store import Store
from pages._background import background_build
from pages._cache import current_store, store_box
from pages._state import keep_all
from pages._widgets import pick_model

__all__ = [
    "PASSWORD_ENV",
    "SECTIONS",
    "app_shell",
    "page",
    "password_gate",
    "require_app",
    "routing",
    "sidebar",
]

PASSWORD_ENV = "CXRXAI_PASSWORD"
_ROUTING = threading.local()


# --------------------------------------------------------------------------- routing
SECTIONS = {
    "Audit": [("overview", "Overview", "dashboard"), ("explorer", "Image explorer", "image_search"),
              ("subgroups", "Subgroups", "groups"), ("compare", "Compare models", "compare_arrows")],
    "Explanations": [("benchmark", "Explainer benchmark", "leaderboard"),
                     ("geometry", "Geometry & confidence", "scatter_plot"), ("trust", "Trust", "verified"),
                     ("fidelity", "Fidelity", "stacked_line_chart")],
}


#: The page served at the app's root; ``/overview`` (its name, as a link or a typed URL says it) opens
#: it too, through a hidden page of the same file (the root page's own path is "").
DEFAULT_PAGE = "overview"


def _page(name: str, title: str, icon: str) -> st.Page:
    root = name == DEFAULT_PAGE
    return st.Page(f"pages/{name}.py", title=title, icon=f":material/{icon}:", default=root,
                   url_path="" if root else None)


def _navigation(position: str = "sidebar") -> st.Page:
    sections = {section: [_page(*page) for page in pages] for section, pages in SECTIONS.items()}
    first = next(iter(sections.values()))
    first.append(st.Page(f"pages/{DEFAULT_PAGE}.py", title=next(p.title for p in first if p.url_path == ""),
                         url_path=DEFAULT_PAGE, visibility="hidden"))
    return st.navigation(sections, position=position)


def app_shell() -> st.Page:
    """What every page stands in: page config, the password gate, the sidebar and the
    navigation; returns the page the navigation chose."""
    st.set_page_config(page_title="cxrxai — chest X-ray classifier audit", page_icon=":material/radiology:",
                       layout="wide")
    # Narrower side margins than Streamlit's 5 rem: two films side by side stay ≥ 300 px wide on a
    # 1000 px screen with the sidebar open.
    st.html(
        "<style>.stMainBlockContainer, .block-container {padding-left: 1.5rem; padding-right: 1.5rem}</style>"
    )
    if not password_gate():
        st.stop()
    sidebar()
    return _navigation()


@contextmanager
def routing() -> Iterator[None]:
    """``app.py`` runs the chosen page inside this block."""
    _ROUTING.active = True
    try:
        yield
    finally:
        _ROUTING.active = False


def require_app() -> None:
    """Send a page run that did not come through ``app.py`` back through it, on the same page.

    Until ``st.navigation`` has been called in a server process, Streamlit treats a ``pages/``
    folder beside the entry point the old way: a first visitor's deep link (``/explorer``)
    runs that file alone — without the sidebar, the layout or the password gate — and lists
    every file of the folder as a page (AppTest starts every run that way). Calling
    ``st.navigation`` switches Streamlit over; the rerun then goes through ``app.py``. Nothing
    of the page has been drawn yet, so no widget state is lost.
    """
    if not getattr(_ROUTING, "active", False):
        _navigation(position="hidden")
        st.rerun()


def page(title: str, *, model: bool = True) -> tuple[Store, str | None]:
    """Every page's opening: through the app's shell, the title, the open store and (unless
    ``model=False``) the chosen model; the page stops, with a message, when either is missing."""
    require_app()
    keep_all()  # before any widget is drawn: what the last page's widgets hold is kept for its return
    st.title(title)
    store = current_store()
    if store is None:
        st.stop()
    background_build(store)
    if not model:
        return store, None
    model_id = pick_model(store)
    if model_id is None:
        st.stop()
    return store, model_id


# --------------------------------------------------------------------------- access
def password_gate() -> bool:
    """True when the viewer may see the app. With ``CXRXAI_PASSWORD`` set (serving beyond
    localhost), asks for it once per browser session; without it, always True."""
    expected = os.environ.get(PASSWORD_ENV)
    if not expected or st.session_state.get("_authenticated"):
        return True
    st.title("cxrxai")
    with st.form("login"):
        given = st.text_input("Password", type="password")
        if st.form_submit_button("Enter"):
            if hmac.compare_digest(given.encode(), expected.encode()):
                st.session_state["_authenticated"] = True
                st.rerun()
            st.error("Wrong password.")
    return False


# --------------------------------------------------------------------------- sidebar
def sidebar() -> None:
    with st.sidebar:
        store_box()
