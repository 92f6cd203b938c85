"""Image explorer: filter cases, see the radiograph with a saliency overlay and the ground truth,
and recompute any explainer live (occlusion patch/stride sliders, coarse → fine, cancellable)."""

import streamlit as st

from cxrxai import summaries
from cxrxai.labels import AGE_BINS, SEXES
from pages import _common as ui
from pages import _viewer

store, model_id = ui.page("Image explorer")
path, built = str(store.path), ui.version(store)
cases = ui.case_table(path, built, model_id, "gradcam")
if cases.empty:
    ui.missing(f"predictions of {model_id}", store=store)
    st.stop()
split = cases["split"].iloc[0] if cases["split"].nunique() == 1 else "all"

with st.expander("Filters", expanded=True):
    c1, c2, c3, c4 = st.columns(4)
    present = set(cases["label"])  # the model's own labels, in its output order
    findings = [f for f in store.model_spec(model_id).labels if f in present]
    remembered = ui.recalled("finding")
    finding = c1.selectbox("Finding", findings, index=findings.index(remembered) if remembered in findings else 0)
    ui.remember("finding", finding)
    sub = ui.recalled("subgroup") or {}
    sexes = c2.multiselect("Sex", SEXES, default=[s for s in SEXES if s == sub.get("sex")])
    ages = c3.multiselect("Age bin", AGE_BINS, default=[a for a in AGE_BINS if a == sub.get("age_bin")])
    outcomes = c4.multiselect("Outcome", ["TP", "FN", "FP", "TN"], default=[])
    c5, c6 = st.columns(2)
    prob_range = c5.slider("Model probability", 0.0, 1.0, (0.0, 1.0), 0.01)
    iou_range = c6.slider("Grad-CAM IoU (positive cases)", 0.0, 1.0, (0.0, 1.0), 0.01)
    chosen = ui.recalled("cases")
    if chosen:
        st.caption(f"Showing the {len(chosen)} cases selected on another page.")
        if st.button("Clear that selection"):
            ui.remember("cases", None)
            st.rerun()

view = summaries.filter_cases(cases, finding=finding, sexes=sexes, age_bins=ages, outcomes=outcomes,
                              prob_range=prob_range, metric="iou", metric_range=iou_range, image_ids=chosen)
st.caption(f"{len(view)} of {int((cases.label == finding).sum())} {finding} cases ({split} split)")
columns = ["image_id", "outcome", "prob", "threshold", "sex", "age", "view", "iou", "hit", "roc_auc"]
event = st.dataframe(view[columns].round(3), hide_index=True, height=220, key="case_grid",
                     on_select="rerun", selection_mode="single-row")
rows = event["selection"]["rows"] if isinstance(event, dict) else event.selection.rows
if rows:
    ui.remember("case", view.iloc[rows[0]]["image_id"])
case_id = ui.recalled("case")
if case_id not in set(view["image_id"]):
    if view.empty:
        st.info("No case matches these filters.")
        st.stop()
    case_id = view.iloc[0]["image_id"]
row = view[view.image_id == case_id].iloc[0]
st.subheader(f"{case_id} — {finding}")
st.markdown(f"**{row['outcome']}** · probability **{row['prob']:.3f}** (threshold {row['threshold']:.3f}) · "
            f"{row['sex'] or 'sex missing'}, {row['age'] if row['age'] == row['age'] else 'age missing'} y · {row['view']}")

compare = st.toggle("Compare side by side", key="compare")
slots = st.columns(2) if compare else [st.container()]
for i, slot in enumerate(slots):
    with slot:
        _viewer.panel(store, model_id, case_id, finding, slot=i)
