"""Streamlit caches over the store and the models, keyed by the store path and its published
version (``Store.published``), so a store republished by a running precompute is picked up on the
next rerun.

One module though past 300 lines (STYLE.md: Streamlit caching lives in one small UI helper
module): every cache here is a few lines over a library function, keyed the same way, and they
change together when the keying does.
"""

from __future__ import annotations

import atexit
import collections
import hashlib
import os

import numpy as np
import pandas as pd
import streamlit as st

from cxrxai import audit, paths, reports, summaries
from cxrxai.data.cases import case_image, case_masks
from cxrxai.errors import CxrxaiError
from cxrxai.explain import native_map
from cxrxai.labels import GROUPINGS
from cxrxai.live import LiveWorker
from cxrxai.models.spec import ModelSpec
from cxrxai.present import panel, provenance
from cxrxai.store import Store, open_store

__all__ = [
    "STORE_KEY",
    "case_table",
    "current_store",
    "data_audit",
    "digest",
    "finding_choices",
    "grouping_counts",
    "image",
    "model_performance",
    "model_spec",
    "models",
    "panel_state",
    "predicted_models",
    "report",
    "roc_curves",
    "session_memo",
    "shortcut_cases",
    "shortcut_panels",
    "store_box",
    "store_path",
    "stored_map",
    "stored_settings",
    "truth",
    "try_report",
    "version",
    "worker",
]

#: The chosen store's path: plain session state, never a widget's (Streamlit drops the sidebar box's
#: own state on a page switch: in AppTest on every switch, in Chromium on some, and the page then
#: opened "no store at .")
STORE_KEY = "store_path"
#: The sidebar's Store box, shown from STORE_KEY; typing a path there chooses it
STORE_BOX = "store_box"


# --------------------------------------------------------------------------- store
@st.cache_resource(show_spinner=False)
def _open(path: str) -> Store:
    store = open_store(path)
    # Closed when the server exits, before the interpreter's teardown: DuckDB's bindings (nanobind)
    # report every connection still open then as a leak, a page of "nanobind: leaked ..." lines.
    atexit.register(store.close)
    return store


def store_path() -> str:
    """The chosen store: the one typed in the sidebar, else ``CXRXAI_STORE``, else the demo store."""
    if STORE_KEY not in st.session_state:
        st.session_state[STORE_KEY] = os.environ.get("CXRXAI_STORE", str(paths.demo_store()))
    return st.session_state[STORE_KEY]


def store_box() -> None:
    """The sidebar's Store box: it opens at the chosen store (on a page switch Streamlit may drop the
    box's own state: it opens at the store again), and a path typed there becomes the chosen store;
    an emptied box keeps the store and shows it again."""
    st.text_input("Store", value=store_path(), key=STORE_BOX, on_change=_typed,
                  help="Path of a DuckDB store built by `python -m cxrxai`")


def _typed() -> None:
    typed = (st.session_state.get(STORE_BOX) or "").strip()
    if typed:
        st.session_state[STORE_KEY] = typed
    del st.session_state[STORE_BOX]  # the box is drawn anew at the chosen store, as it is used


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
        st.info(
            "Build the demo store with `make app` (or `python -m cxrxai demo`), or pick another store in "
            "the sidebar."
        )
        return None


def version(store: Store) -> str:
    """Cache key part that changes whenever the store is republished."""
    return store.published


# --------------------------------------------------------------------------- cached reads
def _at(path: str, built_at: str) -> Store:
    """The open store, at the version a cached read is keyed by. Every session shares it: when
    another session's run has moved it to a newer published version since this run began, this run
    starts over, rather than file the newer version's rows under the older version's key and show
    both versions on one page."""
    store = _open(path)
    if version(store) != built_at:
        st.rerun()
    return store


@st.cache_data(show_spinner=False, max_entries=8)
def predicted_models(path: str, built_at: str) -> list[str]:
    """The models with predictions (every model when none has any), read once per published version:
    the model picker of every page had run one query per model on every rerun."""
    store = _at(path, built_at)
    models = store.models()
    if models.empty:
        return []
    ids = models["model_id"].tolist()
    return [m for m in ids if store.predicted_image_ids(m)] or ids


@st.cache_data(show_spinner="Computing…", max_entries=64)
def report(path: str, built_at: str, name: str, model_id: str, **options) -> pd.DataFrame:
    """Report ``name``; its export header (model, thresholds, explainer parameters, seed, interval
    method) rides along in ``attrs["provenance"]`` for :func:`pages._widgets.download_csv`."""
    store = _at(path, built_at)
    table = reports.run_report(store, name, model_id, **options)
    table.attrs["provenance"] = provenance.report_provenance(store, name, model_id, table, **options)
    return table


def try_report(store: Store, name: str, model_id: str, **options) -> pd.DataFrame | None:
    """A report, or None with an explanation of which command fills its data."""
    try:
        return report(str(store.path), version(store), name, model_id, **options)
    except CxrxaiError as err:
        st.info(str(err))
        return None


@st.cache_data(show_spinner=False, max_entries=2)
def _shortcut_rows(path: str, built_at: str) -> pd.DataFrame:
    # read once per version: the cases and every case's panels share it
    return _at(path, built_at).table("shortcut")


@st.cache_data(show_spinner=False, max_entries=4)
def shortcut_panels(path: str, built_at: str, image_id: str) -> list[dict]:
    """The film panels of one case of the planted-shortcut analysis (re-rendered, with its maps)."""
    from cxrxai.present.shortcut_panels import shortcut_panels as panels

    return panels(_shortcut_rows(path, built_at), image_id)


@st.cache_data(show_spinner=False, max_entries=4)
def shortcut_cases(path: str, built_at: str) -> pd.DataFrame:
    """One row per case of the planted-shortcut analysis: id, ground truth, each model's shift."""
    rows = _shortcut_rows(path, built_at)
    if rows.empty:
        return rows
    one = rows.drop_duplicates(["role", "image_id"]).assign(shift=lambda d: d.prob - d.prob_without)
    wide = one.pivot(index="image_id", columns="role", values="shift").add_prefix("shift_")
    return one.drop_duplicates("image_id")[["image_id", "label", "gt_positive"]].merge(
        wide.reset_index(), on="image_id"
    )


@st.cache_data(show_spinner="Auditing the data…", max_entries=8)
def data_audit(path: str, built_at: str, dataset: str) -> audit.DatasetAudit:
    """What cxrxai did to ``dataset``'s data (:func:`cxrxai.audit.audit_store`; ``audit-data`` prints it)."""
    return audit.audit_store(_at(path, built_at), dataset=dataset).datasets[0]


@st.cache_data(show_spinner=False, max_entries=32)
def roc_curves(path: str, built_at: str, model_id: str, split: str) -> pd.DataFrame:
    """The ROC curve per label (:func:`cxrxai.summaries.roc_table`), once per published version: the
    Overview reruns on every click, and at MIMIC size a curve is a sort of 377,000 cases per finding."""
    return summaries.roc_table(_at(path, built_at), model_id, split=split)


@st.cache_data(show_spinner="Computing AUROC with bootstrap CIs…", max_entries=32)
def model_performance(path: str, built_at: str, model_id: str, split: str) -> pd.DataFrame:
    """The ``performance`` report's table, with its export header (as :func:`report`)."""
    store = _at(path, built_at)
    table = summaries.model_performance(store, model_id, split=split)
    table.attrs["provenance"] = provenance.report_provenance(store, "performance", model_id, table,
                                                             split=split)
    return table


@st.cache_data(show_spinner=False, max_entries=16)
def case_table(path: str, built_at: str, model_id: str, method: str | None = None,
               params_key: str | None = None, split: str | None = None) -> pd.DataFrame:
    return summaries.case_table(_at(path, built_at), model_id, method=method, params_key=params_key,
                                split=split)


@st.cache_data(show_spinner=False, max_entries=16)
def finding_choices(path: str, built_at: str, model_id: str, method: str, split: str) -> pd.DataFrame:
    """:func:`cxrxai.summaries.finding_choices` of the model's case table, once per published version
    (a grouping of the whole table on every click of the explorer before)."""
    cases = case_table(path, built_at, model_id, method, split=split)
    return summaries.finding_choices(cases, _at(path, built_at).model_spec(model_id).labels)


@st.cache_data(show_spinner=False, max_entries=16)
def grouping_counts(path: str, built_at: str, model_id: str) -> dict[str, int]:
    """:func:`cxrxai.summaries.grouping_counts` over the split the subgroup reports evaluate; none
    when the model has no predictions there (the page's reports then say why, :func:`try_report`)."""
    try:
        return summaries.grouping_counts(_at(path, built_at), model_id)
    except CxrxaiError:
        return dict.fromkeys(GROUPINGS, 0)


@st.cache_data(show_spinner=False, max_entries=16)
def models(path: str, built_at: str) -> pd.DataFrame:
    """The store's models table (``Store.models``), read once per published version."""
    return _at(path, built_at).models()


@st.cache_data(show_spinner=False, max_entries=16)
def model_spec(path: str, built_at: str, model_id: str) -> ModelSpec:
    """A model's spec (``Store.model_spec``), read once per published version: every rerun of a
    panel resolves its explainer's settings for the model with it."""
    return _at(path, built_at).model_spec(model_id)


@st.cache_data(show_spinner=False, max_entries=256)
def panel_state(path: str, built_at: str, model_id: str, case_id: str, label: str) -> panel.PanelState:
    """A panel's model with that model's probability, threshold and outcome on one case and finding
    (:func:`cxrxai.present.panel.panel_state` of its case table over every split: the explorer opens
    a case of any split), once per published version: a rerun read and searched the whole table."""
    cases = case_table(path, built_at, model_id, split="all")
    return panel.panel_state(cases, model_id, case_id, label)


@st.cache_data(show_spinner=False, max_entries=8)
def _datasets(path: str, built_at: str) -> dict[str, dict]:
    """Every dataset's row by name, read once per published version."""
    return _at(path, built_at).datasets().set_index("dataset").to_dict("index")


@st.cache_data(show_spinner=False, max_entries=256)
def _image_row(path: str, built_at: str, image_id: str) -> dict:
    """One image's row, read once per version for its pixels and its ground truth together."""
    return _at(path, built_at).image(image_id)


@st.cache_data(show_spinner=False, max_entries=256)
def image(path: str, built_at: str, image_id: str) -> np.ndarray:
    row = _image_row(path, built_at, image_id)
    return case_image(row, _datasets(path, built_at)[row["dataset"]])


@st.cache_data(show_spinner=False, max_entries=256)
def truth(path: str, built_at: str, image_id: str) -> dict:
    store = _at(path, built_at)
    row = _image_row(path, built_at, image_id)
    ann = store.annotations(image_id=image_id)
    boxes = [(r.label, r.reader, (r.x, r.y, r.w, r.h)) for r in ann[ann.kind == "box"].itertuples()]
    points = [(r.label, r.reader, (r.x, r.y)) for r in ann[ann.kind == "point"].itertuples()]
    return {
        "masks": dict(case_masks(ann, int(row["height"]), int(row["width"]))),
        "boxes": boxes,
        "points": points,
    }


@st.cache_data(show_spinner=False, max_entries=256)
def stored_settings(path: str, built_at: str, model_id: str, image_id: str, label: str,
                    method: str) -> list[tuple[str, str]]:
    """(params JSON, params_key) of every stored map of one case, finding and explainer."""
    index = _at(path, built_at).map_index(model_id=model_id, image_id=image_id, label=label, method=method)
    return [(r.params, r.params_key) for r in index.itertuples()]


@st.cache_data(show_spinner=False, max_entries=256)
def stored_map(path: str, built_at: str, model_id: str, image_id: str, label: str, method: str,
               params_key: str) -> np.ndarray | None:
    m = _at(path, built_at).get_map(model_id, image_id, label, method, params_key)
    return None if m is None else native_map(m)


@st.cache_resource(show_spinner=False)
def worker() -> LiveWorker:
    """The server's one device worker: live jobs of every viewer queue here and run in its own
    process, so page reruns never slow the maps down (see ``cxrxai.live``)."""
    return LiveWorker(process=True)


def session_memo(name: str, signature: tuple, compute, *, size: int = 4):
    """``compute()`` once per ``signature`` among the session's last ``size`` of ``name``."""
    kept = st.session_state.setdefault(f"memo_{name}", collections.OrderedDict())
    if signature in kept:
        kept.move_to_end(signature)
    else:
        kept[signature] = compute()
        while len(kept) > size:
            kept.popitem(last=False)
    return kept[signature]


def digest(m: np.ndarray | None) -> str | None:
    """A short fingerprint of an array's shape, dtype and bytes (``None`` for none): a memo key."""
    if m is None:
        return None
    m = np.ascontiguousarray(m)
    return f"{m.shape}{m.dtype}" + hashlib.blake2b(m.tobytes(), digest_size=16).hexdigest()
