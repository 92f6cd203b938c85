"""The one UI helper module: Streamlit caching, shared selections and widgets for every page.

The library (``cxrxai``) never imports Streamlit. Caches here are keyed by the store path and
the store's ``built_at`` stamp, so a store republished by a running precompute is picked up on
the next rerun without a restart. Selections that carry across pages live in plain
``st.session_state`` keys (widget state is dropped when a page is left).
"""

from __future__ import annotations

import hmac
import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import cv2
import numpy as np
import pandas as pd
import streamlit as st

from cxrxai import paths, reports, summaries
from cxrxai.data.cases import case_image, case_masks
from cxrxai.errors import CxrxaiError
from cxrxai.explain.stage import native_map
from cxrxai.live import LiveWorker
from cxrxai.models.registry import LoadedModel
from cxrxai.models.spec import ModelSpec
from cxrxai.models.stored import load_stored
from cxrxai.store import Store, open_store

STORE_KEY = "store_path"
#: Cross-page selections (plain session-state keys, not widget keys).
SELECTED = {"model": "sel_model", "finding": "sel_finding", "case": "sel_case", "subgroup": "sel_subgroup",
            "cases": "sel_cases"}


PASSWORD_ENV = "CXRXAI_PASSWORD"
_ROUTING = threading.local()


# --------------------------------------------------------------------------- routing
SECTIONS = {
    "Audit": [("overview", "Overview", "dashboard"), ("explorer", "Image explorer", "image_search"),
              ("subgroups", "Subgroups", "groups")],
    "Explanations": [("benchmark", "Explainer benchmark", "leaderboard"),
                     ("geometry", "Geometry & confidence", "scatter_plot"), ("trust", "Trust", "verified"),
                     ("fidelity", "Fidelity", "stacked_line_chart")],
}


def _navigation(position: str = "sidebar") -> st.Page:
    return st.navigation({
        section: [st.Page(f"pages/{name}.py", title=title, icon=f":material/{icon}:", default=name == "overview")
                  for name, title, icon in pages]
        for section, pages in SECTIONS.items()}, position=position)


def app_shell() -> st.Page:
    """What every page stands in: page config, the password gate, the sidebar and the
    navigation; returns the page the navigation chose."""
    st.set_page_config(page_title="cxrxai — chest X-ray classifier audit", page_icon=":material/radiology:",
                       layout="wide")
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
    st.title(title)
    store = current_store()
    if store is None:
        st.stop()
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


# --------------------------------------------------------------------------- store
@st.cache_resource(show_spinner=False)
def _open(path: str) -> Store:
    return open_store(path)


def store_path() -> str:
    if STORE_KEY not in st.session_state:
        st.session_state[STORE_KEY] = os.environ.get("CXRXAI_STORE", str(paths.demo_store()))
    return st.session_state[STORE_KEY]


def current_store() -> Store | None:
    """The selected store, refreshed if a precompute published a new version; None with an error shown."""
    path = store_path()
    try:
        store = _open(path)
        store.refresh()
        return store
    except CxrxaiError as err:
        _open.clear()
        st.error(f"{err}")
        st.info("Build the demo store with `make app` (or `python -m cxrxai demo`), or pick another store in the sidebar.")
        return None


def version(store: Store) -> str:
    """Cache key part that changes whenever the store is republished."""
    return store.meta("built_at") or ""


def sidebar() -> None:
    with st.sidebar:
        store_path()  # seeds the default before the widget reads it
        st.text_input("Store", key=STORE_KEY, help="Path of a DuckDB store built by `python -m cxrxai`")


def session_owner() -> str:
    """A stable id of this browser session (owner of its live jobs)."""
    if "_owner" not in st.session_state:
        st.session_state["_owner"] = uuid.uuid4().hex
    return st.session_state["_owner"]


def pick_model(store: Store, *, key: str = "model_widget") -> str | None:
    """Model selectbox whose choice carries across pages."""
    models = store.models()
    if models.empty:
        st.info("No model in the store yet: `python -m cxrxai demo` registers the demo model and predicts.")
        return None
    with_preds = [m for m in models["model_id"] if store.predicted_image_ids(m)] or models["model_id"].tolist()
    current = st.session_state.get(SELECTED["model"], with_preds[0])
    choice = st.selectbox("Model", with_preds, index=with_preds.index(current) if current in with_preds else 0, key=key)
    st.session_state[SELECTED["model"]] = choice
    return choice


def remember(name: str, value) -> None:
    st.session_state[SELECTED[name]] = value


def recalled(name: str, default=None):
    return st.session_state.get(SELECTED[name], default)


def missing(what: str, command: str | None = None, *, store: Store | None = None, table: str = "predictions") -> None:
    """Say what the store lacks and the command that fills it (the demo build for the demo store,
    a precompute or an import for a real one)."""
    command = command or (summaries.fill_command(store, table) if store is not None else "python -m cxrxai demo")
    st.info(f"The store has no {what} yet. Fill it with `{command}` — this page updates when it is published.")


# --------------------------------------------------------------------------- cached reads
@st.cache_data(show_spinner="Computing…", max_entries=64)
def report(path: str, built_at: str, name: str, model_id: str, **options) -> pd.DataFrame:
    return reports.run_report(_open(path), name, model_id, **options)


def try_report(store: Store, name: str, model_id: str, **options) -> pd.DataFrame | None:
    """A report, or None with an explanation of which command fills its data."""
    try:
        return report(str(store.path), version(store), name, model_id, **options)
    except CxrxaiError as err:
        st.info(str(err))
        return None


@st.cache_data(show_spinner="Computing AUROC with bootstrap CIs…", max_entries=32)
def model_performance(path: str, built_at: str, model_id: str, split: str) -> pd.DataFrame:
    return summaries.model_performance(_open(path), model_id, split=split)


@st.cache_data(show_spinner=False, max_entries=16)
def case_table(path: str, built_at: str, model_id: str, method: str | None = None,
               params_key: str | None = None) -> pd.DataFrame:
    return summaries.case_table(_open(path), model_id, method=method, params_key=params_key)


@st.cache_data(show_spinner=False, max_entries=256)
def image(path: str, built_at: str, image_id: str) -> np.ndarray:
    store = _open(path)
    row = store.image(image_id)
    ds = store.datasets().set_index("dataset").loc[row["dataset"]].to_dict()
    return case_image(row, ds)


@st.cache_data(show_spinner=False, max_entries=256)
def truth(path: str, built_at: str, image_id: str) -> dict:
    store = _open(path)
    row = store.image(image_id)
    ann = store.annotations(image_id=image_id)
    boxes = [(r.label, r.reader, (r.x, r.y, r.w, r.h)) for r in ann[ann.kind == "box"].itertuples()]
    return {"masks": dict(case_masks(ann, int(row["height"]), int(row["width"]))), "boxes": boxes}


@st.cache_data(show_spinner=False, max_entries=256)
def stored_map(path: str, built_at: str, model_id: str, image_id: str, label: str, method: str,
               params_key: str) -> np.ndarray | None:
    m = _open(path).get_map(model_id, image_id, label, method, params_key)
    return None if m is None else native_map(m)


@st.cache_resource(show_spinner="Loading the model…")
def model(spec_json: str, weights_path: str | None) -> LoadedModel:
    return load_stored(ModelSpec.from_json(spec_json), weights_path)


def model_for(store: Store, model_id: str) -> LoadedModel | None:
    """The store's model ``model_id`` for live maps, or None with a warning saying why not."""
    row = store.models().set_index("model_id").loc[model_id]
    try:
        return model(str(row["spec"]), None if pd.isna(row["weights_path"]) else str(row["weights_path"]))
    except CxrxaiError as err:
        st.warning(f"Live recomputation is off: {err}")
        return None


@st.cache_resource(show_spinner=False)
def worker() -> LiveWorker:
    """The server's one device worker: live jobs of every viewer queue here and run in its own
    process, so page reruns never slow the maps down (see ``cxrxai.live``)."""
    return LiveWorker(process=True)


# --------------------------------------------------------------------------- downloads
def download_csv(df: pd.DataFrame, name: str, *, key: str) -> None:
    st.download_button("Download CSV", df.to_csv(index=False).encode(), file_name=name, mime="text/csv", key=key)


def download_png(rgb: np.ndarray, name: str, *, key: str) -> None:
    ok, buf = cv2.imencode(".png", rgb[..., ::-1])
    if ok:
        st.download_button("Download PNG", buf.tobytes(), file_name=name, mime="image/png", key=key)


def chart(fig, *, key: str, select: bool = False):
    """A Plotly chart (its toolbar exports PNG offline); with ``select`` the selection event."""
    config = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}
    if select:
        return st.plotly_chart(fig, key=key, on_select="rerun", selection_mode=("points", "box", "lasso"), config=config)
    st.plotly_chart(fig, key=key, config=config)
    return None


def selected_points(event) -> list[dict]:
    """Points of a Plotly selection event (dict-style access, which AppTest can inject)."""
    if not event:
        return []
    selection = event["selection"] if isinstance(event, dict) else event.selection
    return list(selection["points"] if isinstance(selection, dict) else selection.points)
