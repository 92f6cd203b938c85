"""Overview: what the store holds — datasets, what cxrxai did to their data, cohort, labels, models,
AUROC and thresholds."""

import pandas as pd
import streamlit as st

from cxrxai import audit, summaries
from cxrxai.present import viz
from pages import _common as ui

store, _ = ui.page("Overview", model=False)
#: Data sections open at first: what was skipped, and whom the cohort covers.
OPEN_SECTIONS = ("films", "demographics")
NO_MATCH = "—: nothing on that side (a model output scoring no dataset label, or a label no output scores)"

info = store.info()
c1, c2, c3, c4 = st.columns(4)
c1.metric("Images", f"{info['counts'].get('images', 0):,}")
c2.metric("Predictions", f"{info['counts'].get('predictions', 0):,}")
c3.metric("Annotations", f"{info['counts'].get('annotations', 0):,}")
c4.metric("Saliency maps", f"{info['counts'].get('maps', 0):,}")
st.caption(f"Store `{store.path}` · schema v{info['schema_version']} · built {info['built_at'] or 'never'} · "
           f"explainers: {', '.join(info['explainers']) or 'none yet'}")
with st.expander("Rows per table"):
    ui.table(pd.DataFrame({"table": list(info["counts"]), "rows": list(info["counts"].values())}))

datasets = store.datasets()
if datasets.empty:
    st.warning("The store holds no dataset yet. Fill it with `python -m cxrxai demo`.")
    st.stop()

st.subheader("Datasets")
ui.table(datasets[["dataset", "source", "description", "labels", "created_at"]], why="—: not recorded")
dataset = st.selectbox("Dataset", datasets["dataset"].tolist(), key="dataset")

st.subheader("Data")
st.caption("What cxrxai did to this dataset's files: what it skipped and why, what it rescaled or turned, "
           "where each demographic value came from — as "
           f"`{audit.list_command(store.path, dataset, 'text')}` prints it.")
data = ui.data_audit(str(store.path), ui.version(store), dataset)
for sec in data.sections:
    if sec.key == "problems":
        continue
    heading = sec.title + (" — nothing to show" if sec.empty else "")
    with st.expander(heading, expanded=sec.key in OPEN_SECTIONS):
        if sec.lines:
            st.markdown("\n".join(f"- {ui.escape_markdown(line)}" for line in sec.lines))
        if sec.empty:
            st.info(sec.empty)
            continue
        ui.table(sec.table, why=NO_MATCH if sec.key == "label_matches" else ui.MISSING_WHY)
        if sec.key == "problem_kinds":
            rows = data.section("problems").table
            st.caption(f"Every problem row ({len(rows):,}): the rest of the dataset was processed.")
            ui.table(rows, height=240)
            ui.download_csv(rows, f"{dataset}-problems.csv", key="dl_problems", store=store,
                            what="problem rows", dataset=dataset)

st.subheader("Cohort")
left, right = st.columns(2)
counts = store.image_counts(["split", "sex", "age_bin"], dataset=dataset)
with left:
    ui.chart(viz.cohort_bars(counts.fillna("missing")), key="cohort_chart")
cohort = summaries.cohort_table(store, dataset=dataset)
with right:
    ui.table(cohort)
    ui.download_csv(cohort, f"{dataset}-cohort.csv", key="dl_cohort", store=store, what="cohort",
                        dataset=dataset)

labels = summaries.label_table(store, dataset=dataset)
ui.chart(viz.prevalence_bars(labels), key="prevalence_chart")
ui.download_csv(labels, f"{dataset}-labels.csv", key="dl_labels", store=store, what="labels per split",
                dataset=dataset)

st.subheader("Models")
model_id = ui.pick_model(store)
if model_id is None:
    st.stop()
spec = store.model_spec(model_id)
st.markdown(
    f"**{spec.arch}** · weights sha256 `{store.model_identity(model_id).short}` · "
    f"input {spec.input_size} px · explains the **{spec.explained_output}** · "
    f"Grad-CAM layer `{spec.cam_layer}` · normalisation: "
    f"{spec.card.get('normalization', 'mean/std ' + str(spec.mean))}"
)
if spec.card.get("description"):
    st.caption(spec.card["description"])

st.caption("Which of its outputs scores which dataset label (by exact name, case/spacing or synonym), and "
           "which matched nothing: under Data, “Model outputs and dataset labels”.")

# The splits this model has predictions in (imported predictions may cover one split or none), then all.
have = summaries.split_choices(store, model_id)
split = st.radio("Split", list(have), horizontal=True, key="perf_split",
                 format_func=lambda s: f"{s} ({have[s]:,} images)")
perf = ui.model_performance(str(store.path), ui.version(store), model_id, split)
if perf.empty:
    st.info(f"No {split} predictions for {model_id} in the store.")
else:
    left, right = st.columns(2)
    with left:
        ui.chart(viz.auroc_bars(perf, title=f"AUROC per label, {split} split (95% CI)"), key="auroc_chart")
    with right:
        roc = ui.roc_curves(str(store.path), ui.version(store), model_id, split)
        ui.chart(viz.roc_curves(roc, perf), key="roc_chart")
    ui.table(perf)
    ui.download_csv(perf, f"{model_id}-{split}-auroc.csv", key="dl_perf", store=store)
ui.download_dossier(store, model_id, key="dl_dossier")
thresholds = store.thresholds(model_id)
if not thresholds.empty:
    st.caption("Decision thresholds (probability ≥ threshold is positive); method says where each came "
               "from (chosen on the validation split, the model spec, imported, or file:NAME):")
    ui.table(thresholds[["label", "threshold", "method", "criterion", "split"]], digits=4)
