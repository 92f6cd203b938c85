"""Trust: cascading randomization with degradation thresholds, repeatability and
reproducibility, and the PASS/FAIL summary (Arun et al.)."""

import streamlit as st

from cxrxai import reports, summaries
from cxrxai.present import viz
from pages import _common as ui

store, model_id = ui.page("Trust")
data_range = st.radio(
    "SSIM data range",
    [1.0, 2.0],
    horizontal=True,
    key="dr",
    help="2.0 reproduces Arun et al. (scikit-image's old float default); 1.0 is correct for [0, 1] maps",
)

table = ui.try_report(store, "trust", model_id, data_range=data_range)
if table is None:
    st.stop()  # no trust scores at all: the curves and boxes below would say so twice more
st.subheader("Summary (PASS = significantly better than the baseline, one-sided p < 0.005)")
ui.table(viz.verdict_table(table))
st.caption(summaries.trust_gaps(store, model_id, table))
ui.download_csv(table, f"{model_id}-trust.csv", key="dl_trust", store=store)

curves = ui.try_report(store, "randomization", model_id, data_range=data_range)
if curves is not None and not curves.empty:
    t = reports.degradation_thresholds(store, model_id, data_range=data_range)
    thresholds = t.set_index("method")["ssim"] if not t.empty else t
    ui.chart(viz.randomization_lines(curves, thresholds), key="rand_chart")
    ui.download_csv(curves, f"{model_id}-randomization.csv", key="dl_rand", store=store)

sim = ui.try_report(store, "similarity", model_id, data_range=data_range)
if sim is not None:
    ui.chart(viz.similarity_boxes(sim), key="sim_chart")
    st.caption("Other models: " + ", ".join(sorted(sim.other_model.unique())))
