"""cxrxai — entry point: page routing and the shared sidebar; no computation here."""

import streamlit as st

from pages import _common as ui

st.set_page_config(page_title="cxrxai — chest X-ray classifier audit", page_icon=":material/radiology:", layout="wide")
if not ui.password_gate():
    st.stop()
ui.sidebar()
page = st.navigation({
    "Audit": [
        st.Page("pages/overview.py", title="Overview", icon=":material/dashboard:", default=True),
        st.Page("pages/explorer.py", title="Image explorer", icon=":material/image_search:"),
        st.Page("pages/subgroups.py", title="Subgroups", icon=":material/groups:"),
    ],
    "Explanations": [
        st.Page("pages/benchmark.py", title="Explainer benchmark", icon=":material/leaderboard:"),
        st.Page("pages/geometry.py", title="Geometry & confidence", icon=":material/scatter_plot:"),
        st.Page("pages/trust.py", title="Trust", icon=":material/verified:"),
        st.Page("pages/fidelity.py", title="Fidelity", icon=":material/stacked_line_chart:"),
    ],
})
page.run()
