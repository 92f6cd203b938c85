"""Shared widgets and cross-page selections: the model picker, explainer and metric pickers
generated from the registries, "what is missing" notes, charts with selection, downloads."""

from __future__ import annotations

import re
import uuid

import cv2
import numpy as np
import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler

from cxrxai import summaries
from cxrxai.errors import DataError
from cxrxai.explain import get as get_method
from cxrxai.explain import method_names
from cxrxai.metrics import registry as metric_registry
from cxrxai.present.provenance import table_provenance, with_header
from cxrxai.store import Store
from pages._cache import predicted_models, session_memo, version
from pages._state import kept

__all__ = ["DASH", "MISSING_WHY", "SELECTED", "chart", "content_key", "decimals", "download_csv",
           "download_dossier", "download_png", "escape_markdown", "explainer_select", "metric_select",
           "missing", "missing_caption", "open_selected_pairs", "pick_model", "recalled", "remember",
           "selected_points", "session_owner", "table"]

#: What a dash in a table means when the page does not say more.
MISSING_WHY = (
    "—: no value — no case of that kind, a quantity not defined there (e.g. one class only), or an "
    "interval from fewer than 5 cases (never drawn)."
)

#: Cross-page selections (plain session-state keys, not widget keys).
SELECTED = {"model": "sel_model", "case": "sel_case", "case_label": "sel_case_label", "pairs": "sel_pairs"}


def session_owner() -> str:
    """A stable id of this browser session (owner of its live jobs)."""
    if "_owner" not in st.session_state:
        st.session_state["_owner"] = uuid.uuid4().hex
    return st.session_state["_owner"]


def pick_model(store: Store, *, key: str = "model_widget") -> str | None:
    """Model selectbox whose choice carries across pages."""
    with_preds = predicted_models(str(store.path), version(store))
    if not with_preds:
        st.info("No model in the store yet: `python -m cxrxai demo` registers the demo model and predicts.")
        return None
    current = st.session_state.get(SELECTED["model"], with_preds[0])
    choice = st.selectbox(
        "Model", with_preds, index=with_preds.index(current) if current in with_preds else 0, key=key
    )
    st.session_state[SELECTED["model"]] = choice
    return choice


def remember(name: str, value) -> None:
    st.session_state[SELECTED[name]] = value


def recalled(name: str, default=None):
    return st.session_state.get(SELECTED[name], default)


def missing(what: str, command: str | None = None, *, store: Store | None = None, table: str = "predictions",
            model_id: str | None = None) -> None:
    """Say what the store lacks and what fills it, and when (:func:`cxrxai.summaries.fill_hint`: a
    build computing it now, a stopped one to resume, or the command)."""
    if command is None and store is not None:
        hint = summaries.fill_hint(store, table, model_id)
    else:
        hint = f"fill it with `{command or 'python -m cxrxai demo'}`"
    st.info(f"The store has no {what} yet; {hint}. This page updates when it is published.")


def explainer_select(store: Store, model_id: str, *, key: str, container=st, label: str = "Explainer") -> str:
    """The explainers with stored maps for ``model_id`` (registry order and names; every registered
    one when none is stored yet); the choice survives navigation (:func:`pages._state.kept`)."""
    stored = set(store.stored_methods(model_id)) if model_id else set()
    names = [m for m in method_names() if m in stored] or method_names()
    return container.selectbox(label, names, key=kept(key, names[0], allowed=names),
                               format_func=lambda m: get_method(m).title,
                               help="Explainers with maps precomputed for this model")


def metric_select(
    names: list[str], *, key: str, container=st, label: str = "Metric", horizontal: bool = False
) -> str:
    """A metric picker showing each registered metric's label, with its explanation as help; the
    choice survives navigation (:func:`pages._state.kept`)."""
    def title(name: str) -> str:
        return metric_registry.get(name).label if name in metric_registry.METRICS else name

    helps = "; ".join(
        f"{title(n)}: {metric_registry.get(n).help}" for n in names if n in metric_registry.METRICS
    )
    key = kept(key, names[0], allowed=names)
    if horizontal:
        return container.radio(label, names, horizontal=True, key=key, format_func=title, help=helps)
    return container.selectbox(label, names, key=key, format_func=title, help=helps)


_MARKDOWN = re.compile(r"([\\*_\[\]<>|~#])")


def escape_markdown(text: str) -> str:
    """``text`` shown as written in ``st.markdown`` (``Pleural_Thickening`` not half in italics); the
    parts between backticks stay code."""
    parts = str(text).split("`")
    return "`".join(p if i % 2 else _MARKDOWN.sub(r"\\\1", p) for i, p in enumerate(parts))


# --------------------------------------------------------------------------- downloads
def download_dossier(store: Store, model_id: str, *, vs: str | None = None, correction: str = "holm",
                     key: str) -> None:
    """"Download the audit dossier": the file `python -m cxrxai dossier` writes (the same function),
    built when clicked (a few seconds) on Streamlit's download thread, never on a page rerun."""
    from cxrxai.dossier import build_dossier

    name = f"audit-{model_id}" + (f"-vs-{vs}" if vs else "") + ".html"
    st.download_button("Download the audit dossier (HTML, opens offline, prints on A4)", key=key,
                       data=lambda: build_dossier(store, model_id, vs=vs, correction=correction),
                       file_name=name, mime="text/html", icon=":material/description:")


def download_csv(df: pd.DataFrame, name: str, *, key: str, store: Store, what: str | None = None,
                 **context) -> None:
    """Every CSV download of the app, under a provenance header (``# key: value`` lines): a report's
    own (``attrs["provenance"]``: model, thresholds, explainer parameters, seed, interval method,
    store and its version), else :func:`cxrxai.present.provenance.table_provenance` — ``what`` the table is
    (its file name by default), the store and its published version, ``context`` (``dataset=...``)."""
    head = df.attrs.get("provenance") or table_provenance(store, what or name.removesuffix(".csv"), **context)
    st.download_button(
        "Download CSV",
        with_header(df, head).encode(),
        file_name=name,
        mime="text/csv",
        key=key,
        help="Lines starting with # say what the table was computed from "
        "(`cxrxai.present.provenance.read_export` reads both)",
    )


def download_png(render, name: str, *, key: str) -> None:
    """A PNG download of ``render()`` (an RGB array), rendered and encoded only when clicked: a
    rerun (a poll of a live map, a display click) pays nothing for it."""
    def data() -> bytes:
        ok, buf = cv2.imencode(".png", render()[..., ::-1])
        if not ok:
            raise DataError(f"could not encode {name} as PNG")
        return buf.tobytes()

    st.download_button("Download PNG", data, file_name=name, mime="image/png", key=key, on_click="ignore")


#: Above this many cells a table is sent plain, its numbers formatted by the browser as the Styler
#: would print them (:func:`_formats`). A Styler's display strings are made and sent beside the
#: numbers on every rerun: for a 688-row table of 11 columns (7,568 cells) 96 kB more to send and
#: 20-35 ms of the server's time before the film, on every click of the page.
STYLED_CELLS = 2_000


#: Columns that count (n, n_paired, maps, cases_scored), hold an age or a 0/1 truth: as floats (a NaN
#: beside them) they print without decimals when every value is whole; a metric of 1.0 keeps its decimals.
COUNT_COLUMNS = re.compile(r"age|n|n_\w+|\w+_n|maps|cases\w*|ground_truth|predicted")


#: What every table shows for a missing value (a None in a text column, a NaN in a number column).
DASH = "—"

#: How many styled tables a session keeps (the explorer shows two a rerun: its cases and a case's
#: probabilities; going back and forth between two findings or cases needs four).
TABLES_KEPT = 6


def _rendered_once(styler: Styler) -> Styler:
    """``styler``, rendering its cells once (pandas' ``_translate``, one Python call per cell, is what
    ``st.dataframe`` reads of a Styler, on every rerun): :func:`table` keeps one per table content,
    so a rerun showing the same table again (a click on a case, on an explainer) renders nothing
    again. On the instance: Streamlit takes only a ``Styler`` itself for one, not a subclass."""
    translate, kept = styler._translate, {}

    def once(*args, **kwargs):
        signature = (args, tuple(sorted(kwargs.items())))
        if signature not in kept:
            kept[signature] = translate(*args, **kwargs)
        return kept[signature]

    styler._translate = once
    return styler


def _whole(df: pd.DataFrame) -> list:
    """The float columns that count (:data:`COUNT_COLUMNS`) and hold whole numbers only: no decimals."""
    return [c for c in df.select_dtypes("float").columns if COUNT_COLUMNS.fullmatch(str(c))
            and df[c].notna().any() and (df[c].dropna() % 1 == 0).all()]


def _styled(df: pd.DataFrame, digits: int) -> Styler:
    """``df`` with ``digits`` decimals, counts without any, and a dash for every missing value."""
    styled = df.style.format(precision=digits, na_rep=DASH).format("{:.0f}", subset=_whole(df), na_rep=DASH)
    return _rendered_once(styled)


def decimals(df: pd.DataFrame, digits: int) -> dict:
    """How many decimals :func:`_styled` prints each float column of ``df`` with: ``digits``, none for
    a column that counts and holds whole numbers only (:func:`_whole`)."""
    whole = set(_whole(df))
    return {c: 0 if c in whole else digits for c in df.select_dtypes("float").columns}


def _formats(df: pd.DataFrame, digits: int) -> dict:
    """A plain table's number formats, as :func:`_styled` prints them, for the browser to apply: its
    floats with ``digits`` decimals, its whole counts without any (a missing value is the dash,
    the dataframe's placeholder). Two differences: the browser rounds an exact binary tie up (0.0625
    → 0.063) where Python rounds it to even (0.062), and leaves an infinite value blank."""
    return {c: st.column_config.NumberColumn(format=f"%.{places}f" if places else "%d")
            for c, places in decimals(df, digits).items()}


def content_key(df: pd.DataFrame) -> tuple | None:
    """What a table shows, as a memo key: its columns, their types, a hash of every value and of
    the index, and which values are missing (the hash reads None and "None" alike); None for a
    table whose values cannot be hashed (never kept)."""
    try:
        values = pd.util.hash_pandas_object(df, index=True).to_numpy()
    except TypeError:
        return None
    missing = np.packbits(df.isna().to_numpy()).tobytes()
    return tuple(map(str, df.columns)), tuple(map(str, df.dtypes)), values.tobytes(), missing


def table(df: pd.DataFrame, *, digits: int = 3, why: str = MISSING_WHY, **kwargs):
    """Every table of the app: ``digits`` decimals and a dash, never "None" or "nan", for a missing
    value of any column, and ``why`` as its caption when there is one; the numbers stay numbers (the
    columns sort as such). The browser draws a missing cell with the dataframe's ``placeholder``
    whatever the Styler says, so both carry the dash. A table over :data:`STYLED_CELLS` cells goes
    without a Styler (its missing cells keep the dash; the browser formats its numbers as the Styler
    would print them, :func:`_formats`). The session keeps
    the styled form of its last few tables (rendered once each, :func:`_rendered_once`)."""
    if df.size <= STYLED_CELLS:
        content = content_key(df)
        if content is None:
            data = _styled(df, digits)
        else:
            data = session_memo("table", (content, digits), lambda: _styled(df, digits), size=TABLES_KEPT)
    else:
        data = df
        kwargs["column_config"] = {**_formats(df, digits), **kwargs.get("column_config", {})}
    event = st.dataframe(data, hide_index=True, placeholder=DASH, **kwargs)
    missing_caption(df, why)
    return event


def missing_caption(df: pd.DataFrame, why: str = MISSING_WHY) -> None:
    """``why`` under a table of ``df`` when a value of it is missing (drawn as :data:`DASH`)."""
    if df.isna().any().any():
        st.caption(why)


def chart(fig, *, key: str, select: bool = False):
    """A Plotly chart (its toolbar exports PNG offline); with ``select`` the selection event."""
    config = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}
    if select:
        return st.plotly_chart(
            fig, key=key, on_select="rerun", selection_mode=("points", "box", "lasso"), config=config
        )
    st.plotly_chart(fig, key=key, config=config)
    return None


def selected_points(event) -> list[dict]:
    """Points of a Plotly selection event (dict-style access, which AppTest can inject)."""
    if not event:
        return []
    selection = event["selection"] if isinstance(event, dict) else event.selection
    return list(selection["points"] if isinstance(selection, dict) else selection.points)


def open_selected_pairs(event) -> None:
    """A chart's selected points, whose customdata starts (image id, finding), become the explorer's
    selection: exactly those pairs, with a link to open them."""
    picked = selected_points(event)
    if not picked:
        return
    pairs = sorted({(p["customdata"][0], p["customdata"][1]) for p in picked})
    remember("pairs", pairs)
    remember("case", None)
    st.success(f"{len(pairs)} (image, finding) pairs selected.")
    st.page_link("pages/explorer.py", label="Open them in the explorer", icon=":material/image_search:")
