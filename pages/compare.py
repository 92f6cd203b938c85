"""Compare models: the chosen model against the one it replaces, on the images both predicted — is it
worse, for anyone? The same report, sentence and figures as the audit dossier; a point of the
probability scatter opens that case in the explorer."""

import streamlit as st

from cxrxai.dossier import comparison_sentence
from cxrxai.metrics.comparison import CORRECTIONS
from cxrxai.present import viz
from pages import _common as ui

store, model_id = ui.page("Compare models")
others = [m for m in ui.predicted_models(str(store.path), ui.version(store)) if m != model_id]
if not others:
    st.info(f"{model_id} is the store's only model with predictions: predict the model it replaces on the "
            "same dataset (`python -m cxrxai precompute --model OLD … --store "
            f"{store.path}`), then compare them here.")
    st.stop()
c1, c2 = st.columns(2)
vs = c1.selectbox(f"{model_id} against (the model it replaces)", others,
                  key=ui.kept("cmp_vs", others[0], allowed=others))
corrections = list(CORRECTIONS)
correction = c2.radio("Family correction", corrections, format_func=CORRECTIONS.get, horizontal=True,
                      key=ui.kept("cmp_correction", corrections[0], allowed=corrections))
cmp = ui.try_report(store, "model-comparison", model_id, vs=vs, correction=correction)
if cmp is None:
    st.stop()
st.markdown(ui.escape_markdown(comparison_sentence(store, model_id, vs, correction=correction, frame=cmp)))
ui.download_dossier(store, model_id, vs=vs, correction=correction, key="dl_dossier_cmp")
ui.chart(viz.comparison_forest(cmp), key="cmp_forest")
st.caption("AUROC: DeLong's paired test; TPR (positives) and FPR (negatives) at each model's own threshold: "
           "McNemar's test; every comparison in one family. explained_by: a smaller group without whose "
           "images the difference is not significant.")
ui.table(cmp, digits=4)
ui.download_csv(cmp, f"{model_id}-vs-{vs}.csv", key="dl_cmp", store=store)

st.subheader("Where the two models disagree")
findings = sorted(cmp["label"].unique())
finding = st.selectbox("Finding", findings, key=ui.kept("cmp_finding", findings[0], allowed=findings))
cases = ui.try_report(store, "model-disagreements", model_id, vs=vs, top=None)  # every shared case
if cases is not None:
    event = ui.chart(viz.disagreement_scatter(cases, finding), key="cmp_scatter", select=True)
    ui.open_selected_pairs(event)
    top = cases[cases["label"] == finding].head(10)
    st.caption(f"The 10 shared {finding} cases whose probabilities differ most (select points above to open "
               "them in the explorer):")
    ui.table(top, digits=4)
