"""The demo's background build as the pages see it: started once per server, its progress in the
sidebar (stage, done/total, ETA) with a Stop (and a Resume once stopped), and new results picked up
without a restart. The build stops with the server unless ``CXRXAI_BACKGROUND=keep``."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from cxrxai import paths, summaries
from cxrxai.pipeline import background
from cxrxai.pipeline.background import BACKGROUND_ENV
from cxrxai.store import Store
from pages._cache import version

__all__ = ["BACKGROUND_ENV", "background_build"]

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
    if background.background_mode() != "off":  # 0: never started (the app serves what the store holds)
        _started(str(store.path))
    with st.sidebar:
        st.fragment(_status, run_every=REFRESH_S)(store)


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "ETA when its first item is done"
    minutes, secs = divmod(int(seconds), 60)
    return (
        f"ETA {minutes // 60} h {minutes % 60:02d} min"
        if minutes >= 60
        else f"ETA {minutes} min {secs:02d} s"
    )


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
    st.markdown(
        f"**{phase[0].upper() + phase[1:]}** writing this store"
        if phase.startswith("precompute")
        else "**Background build** (the costly explainers, fidelity and trust on enough cases)"
    )
    if status is None:
        off = background.background_mode() == "off"
        st.caption(f"Not started: {BACKGROUND_ENV}=0 keeps the app from starting it; run `python -m cxrxai "
                   "demo --phase evidence`." if off else "Not started yet.")
    elif status["running"]:
        done, total = status.get("done", 0), status.get("total", 0)
        if status.get("stages"):
            st.caption(_where(status))
        task = status.get("stage") or "starting"  # no task reported yet: the build is loading
        st.progress(done / total if total else 0.0, text=f"{task} · {done}/{total}" if total else task)
        rate = status.get("per_s")
        st.caption((f"{rate:.2f} per s · " if rate else "") + _clock(status.get("eta_s"))
                   + " of this stage; results are published every minute.")
    elif status["state"] == "finished":
        st.caption("Finished: every page shows the full evidence.")
    else:
        st.warning(summaries.resume_hint(store, status) + f" Log: {background.log_path(store.path)}")
    _controls(store, status)
    if version(store) != seen and st.button("Show new results", key="_new_results"):
        st.session_state["_seen_version"] = version(store)
        st.rerun(scope="app")


def _controls(store: Store, status: dict | None) -> None:
    """Stop a running build (cleanly: what it published stays, a later start resumes); Resume a stopped
    one unless ``CXRXAI_BACKGROUND=0`` (the app then never starts it)."""
    if status is None or str(status.get("phase", "")).startswith("precompute"):
        return  # a precompute is the terminal's own: stopped there
    # Not callbacks: this is a fragment, and after a click the whole page is drawn again from the
    # status the click left, its own empty states too (a fragment's rerun would redraw the sidebar only).
    if status["running"]:
        if st.button("Stop", key="_stop_build",
                     help="Stop the background build; what it has published stays and a later start (Resume, "
                          "or the next server) resumes where it stopped"):
            background.stop(store.path)
            st.rerun(scope="app")
    elif status["state"] != "finished" and background.background_mode() != "off":
        if st.button("Resume", key="_resume_build", help="Start the background build again where it stopped"):
            _resume(store.path)
            st.rerun(scope="app")


def _resume(path) -> None:
    background.ensure_started(path, complete=False)
