"""Overview: what the store holds — datasets, cohort, labels, models, AUROC and thresholds."""

import streamlit as st

from cxrxai import summaries, viz
from pages import _common as ui

store, _ = ui.page("Overview", model=False)

info = store.info()
c1, c2, c3, c4 = st.columns(4)
c1.metric("Images", f"{info['counts'].get('images', 0):,}")
c2.metric("Predictions", f"{info['counts'].get('predictions', 0):,}")
c3.metric("Annotations", f"{info['counts'].get('annotations', 0):,}")
c4.metric("Saliency maps", f"{info['counts'].get('maps', 0):,}")
st.caption(f"Store `{store.path}` · schema v{info['schema_version']} · built {info['built_at'] or 'never'} · "
           f"explainers: {', '.join(info['explainers']) or 'none yet'}")
with st.expander("Rows per table"):
    st.dataframe([{"table": k, "rows": v} for k, v in info["counts"].items()], hide_index=True)

datasets = store.datasets()
if datasets.empty:
    st.warning("The store holds no dataset yet. Fill it with `python -m cxrxai demo`.")
    st.stop()

st.subheader("Datasets")
st.dataframe(datasets[["dataset", "source", "description", "labels", "created_at"]], hide_index=True)
dataset = st.selectbox("Dataset", datasets["dataset"].tolist(), key="dataset")
counts = store.problem_counts()
counts = counts[counts.dataset == dataset]
if len(counts):
    problems = store.problems(dataset=dataset)
    by_stage = ", ".join(f"{r.stage} {r.n:,}" for r in counts.itertuples())
    with st.expander(f"⚠ {len(problems):,} problems in {dataset} ({by_stage}): rows and files left out or changed"):
        st.caption("Each bad row or file, and what was done: the rest of the dataset was processed.")
        st.dataframe(problems[["stage", "file", "row", "image_id", "problem"]], hide_index=True, height=240)
        ui.download_csv(problems, f"{dataset}-problems.csv", key="dl_problems")

st.subheader("Cohort")
left, right = st.columns(2)
counts = store.image_counts(["split", "sex", "age_bin"], dataset=dataset)
with left:
    ui.chart(viz.cohort_bars(counts.fillna("missing")), key="cohort_chart")
cohort = summaries.cohort_table(store, dataset=dataset)
with right:
    st.dataframe(cohort, hide_index=True)
    ui.download_csv(cohort, f"{dataset}-cohort.csv", key="dl_cohort")

labels = summaries.label_table(store, dataset=dataset)
ui.chart(viz.prevalence_bars(labels), key="prevalence_chart")
ui.download_csv(labels, f"{dataset}-labels.csv", key="dl_labels")

st.subheader("Models")
model_id = ui.pick_model(store)
if model_id is None:
    st.stop()
spec = store.model_spec(model_id)
st.markdown(
    f"**{spec.arch}** · input {spec.input_size} px · explains the **{spec.explained_output}** · "
    f"Grad-CAM layer `{spec.cam_layer}` · normalisation: {spec.card.get('normalization', 'mean/std ' + str(spec.mean))}"
)
if spec.card.get("description"):
    st.caption(spec.card["description"])

matches = summaries.label_match_table(store, model_id)
if matches.empty:
    st.caption(f"No label matching recorded for {model_id}: its outputs are read by their exact names "
               "(a demo store, or a store built before label matching).")
else:
    outputs, labels = (matches["how"] == "unmatched output").sum(), (matches["how"] == "unmatched label").sum()
    scored = int(matches["how"].isin(["exact", "case", "alias"]).sum())
    with st.expander(f"Label matching: {scored} of {scored + outputs} outputs score a dataset label; "
                     f"{outputs} outputs and {labels} labels unmatched", expanded=scored == 0):
        st.caption("Model output → the dataset label its predictions are compared with: by exact name, by "
                   "case/spacing, or by synonym (alias). Unmatched outputs are stored but never scored.")
        ui.table(matches)

# The splits this model has predictions in (imported predictions may cover one split or none), then all.
have = summaries.split_choices(store, model_id)
split = st.radio("Split", list(have), horizontal=True, key="perf_split",
                 format_func=lambda s: f"{s} ({have[s]:,} images)")
perf = ui.model_performance(str(store.path), ui.version(store), model_id, split)
if perf.empty:
    st.info(f"No {split} predictions for {model_id} in the store.")
else:
    ui.chart(viz.auroc_bars(perf, title=f"AUROC per label, {split} split (95% bootstrap CI)"), key="auroc_chart")
    ui.table(perf)
    ui.download_csv(perf, f"{model_id}-{split}-auroc.csv", key="dl_perf")
thresholds = store.thresholds(model_id)
if not thresholds.empty:
    st.caption("Decision thresholds (probability ≥ threshold is positive); method says where each came "
               "from (chosen on the validation split, the model spec, imported, or file:NAME):")
    ui.table(thresholds[["label", "threshold", "method", "criterion", "split"]], digits=4)
