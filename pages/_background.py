"""The demo's background build as the pages see it: started once per server, its progress in the
sidebar (stage, done/total, ETA), and new results picked up without a restart."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from cxrxai import paths
from cxrxai.pipeline import background
from cxrxai.store import Store
from pages._cache import version

__all__ = ["BACKGROUND_ENV", "background_build"]

#: ``CXRXAI_BACKGROUND=0`` never starts the evidence build (the app serves what the store holds).
BACKGROUND_ENV = "CXRXAI_BACKGROUND"
REFRESH_S = 5.0


@st.cache_resource(show_spinner=False)
def _started(path: str) -> dict | None:
    """Start the evidence build at most once per server and store (a rerun never starts a second)."""
    return background.ensure_started(path, complete=False)


def _is_demo(store: Store) -> bool:
    try:
        return Path(store.path).resolve() == paths.demo_store().resolve()
    except OSError:
        return False


def background_build(store: Store) -> None:
    """On the demo store without its evidence: start the build (unless disabled) and show its status.
    On any other store: the status of a precompute writing it now (local or on Ray), if one is."""
    if not _is_demo(store):
        status = background.read_status(store.path)
        if status is not None and status["running"]:
            with st.sidebar:
                st.fragment(_status, run_every=REFRESH_S)(store)
        return
    if store.meta("evidence_built_at"):
        return
    if os.environ.get(BACKGROUND_ENV, "1") != "0":
        _started(str(store.path))
    with st.sidebar:
        st.fragment(_status, run_every=REFRESH_S)(store)


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "ETA when its first item is done"
    minutes, secs = divmod(int(seconds), 60)
    return f"ETA {minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"ETA {minutes} min {secs:02d} s"


def _where(status: dict) -> str:
    """Where the whole build is: its round (the first look at every analysis, then the full evidence)
    and stage, e.g. "Round 1 of 2 (first look) · Step 4 of 42: maps of demo-densenet121"."""
    text = f"Step {status.get('stage_index')} of {status['stages']}"
    if status.get("step"):
        text += f": {status['step']}" + (f" of {status['model']}" if status.get("model") else "")
    if (status.get("rounds") or 0) > 1:
        text = f"Round {status.get('round')} of {status['rounds']} ({status.get('round_name')}) · " + text
    return text


def _status(store: Store) -> None:
    store.refresh()  # a fragment run does not go through the page's opening
    status = background.read_status(store.path)
    seen = st.session_state.setdefault("_seen_version", version(store))
    phase = (status or {}).get("phase", "")
    st.markdown(f"**{phase[0].upper() + phase[1:]}** writing this store" if phase.startswith("precompute") else
                "**Background build** (the costly explainers, fidelity and trust on enough cases)")
    if status is None:
        st.caption(f"Not started ({BACKGROUND_ENV}=0?): run `python -m cxrxai demo --phase evidence`.")
    elif status["running"]:
        done, total = status.get("done", 0), status.get("total", 0)
        if status.get("stages"):
            st.caption(_where(status))
        st.progress(done / total if total else 0.0, text=f"{status.get('stage', '…')} · {done}/{total}")
        rate = status.get("per_s")
        st.caption((f"{rate:.2f} per s · " if rate else "") + _clock(status.get("eta_s"))
                   + " of this stage; results are published every minute.")
    elif status["state"] == "finished":
        st.caption("Finished: every page shows the full evidence.")
    else:
        st.warning(f"The background build {status['state']}"
                   + (f": {status['error']}" if status.get("error") else "")
                   + f". Restart the app to resume it (log: {background.log_path(store.path)}).")
    if version(store) != seen and st.button("Show new results", key="_new_results"):
        st.session_state["_seen_version"] = version(store)
        st.rerun(scope="app")
