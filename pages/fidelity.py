"""Fidelity: deletion / insertion curves for a case and AUDCdiff distributions (thesis §2.4)."""

import streamlit as st

from cxrxai.explain import setting_names
from cxrxai.present import viz
from pages import _common as ui

store, model_id = ui.page("Fidelity")

summary = ui.try_report(store, "fidelity", model_id)
if summary is None:
    st.stop()
ui.table(summary)
ui.download_csv(summary, f"{model_id}-fidelity.csv", key="dl_fid", store=store)

rows = store.table("fidelity", model_id=model_id)
rows["explainer"] = setting_names(rows)  # occlusion 32/16 and 16/16 are different explainers here
choice = st.selectbox(
    "Case",
    range(len(rows)),
    key="fid_case",
    format_func=lambda i: f"{rows.image_id.iloc[i]} · {rows.label.iloc[i]} · {rows.explainer.iloc[i]}",
)
row = rows.iloc[choice]
c1, c2 = st.columns(2)
with c1:
    ui.chart(viz.perturbation_lines(row), key="curves")
    flat = "not defined (the map or the model's response did not vary over the perturbed subsets)"
    st.caption(
        f"Faithfulness correlation {viz.value_text(row.faithfulness, flat)} · AUDCdiff black "
        f"{viz.value_text(row.audc_diff_black, 'not computed')}, mean image "
        f"{viz.value_text(row.audc_diff_mean, 'not computed')} (normalised "
        + viz.value_text(row.audc_diff_mean_normalized,
                         "not defined: the mean-image deletion curve ends where it starts") + ")"
    )
with c2:
    mean = st.radio(
        "Mean-image AUDCdiff",
        list(viz.PAIRED_MEAN),
        format_func=viz.PAIRED_MEAN.get,
        horizontal=True,
        key="fid_mean",
    )
    ui.chart(viz.paired_lines(rows, mean), key="paired")
