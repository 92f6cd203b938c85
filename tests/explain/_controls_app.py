"""A one-widget-panel app for AppTest: the viewer's controls of the method named in session state
(registered by the test process before the run), or with ``picker`` set the panel's explainer
picker and the controls of the explainer picked."""

import streamlit as st

from pages import _viewer

if __name__ == "__main__":  # not when the live worker's spawned child re-imports the main script
    if st.session_state.get("picker"):
        _viewer.model_and_method(None, "m", lambda name: f"{name}_0")
    else:
        _viewer._controls(st.session_state["method"], lambda name: f"{name}_0")
