"""Geometry & confidence: localization regressed on lesion geometry (Saporta Table 1) and on
model confidence (Table 2), with scatter plots and fitted lines; a lasso or box selection
opens those cases in the explorer."""

import streamlit as st

from cxrxai import reports, stats, summaries
from cxrxai.metrics.registry import metric_names
from cxrxai.present import viz
from pages import _common as ui

store, model_id = ui.page("Geometry & confidence")
method = ui.explainer_select(store, model_id, key="geo_method")

st.subheader("Localization ~ lesion geometry (single-feature OLS, Bonferroni k = 4)")
norm = st.radio("Predictor normalization", ["minmax", "zscore"], horizontal=True, key="geo_norm",
                help="min–max as CheXlocalize's code; z-score as the paper's text")
reg = ui.try_report(store, "geometry", model_id, method=method, normalize=norm)
if reg is not None and not reg.empty:
    ui.table(reg, digits=4)
    if caveat := summaries.box_geometry_caveat(store):
        st.caption(caveat)
    ui.download_csv(reg, f"{model_id}-geometry-regressions.csv", key="dl_geo", store=store)
    df = reports.geometry_cases(store, model_id, method=method)
    c1, c2 = st.columns(2)
    feature = c1.selectbox(
        "Feature", ["size", "elongation", "irrectangularity", "instances"], key="geo_feature"
    )
    outcome = ui.metric_select(
        metric_names(view="geometry"), key="geo_outcome", container=c2, label="Outcome", horizontal=True
    )
    event = ui.chart(viz.regression_scatter(df, feature, outcome, line=stats.ols_line(df, outcome, feature)),
                     key="geo_scatter", select=True)
    ui.open_selected_pairs(event)

st.subheader("Localization ~ model confidence (OLS + Spearman, per finding and pooled)")
metric = ui.metric_select(
    reports.metric_choices("confidence"),
    key="conf_metric",
    label="Localization (full dataset, "
    "Saporta Table 2: every precomputed image; negatives score 0 when segmented)",
    horizontal=True,
)
conf = ui.try_report(store, "confidence", model_id, method=method, metric=metric)
if conf is not None and not conf.empty:
    ui.table(conf)
    ui.download_csv(conf, f"{model_id}-confidence-regressions.csv", key="dl_conf", store=store)
    cases = reports.localization_cases(store, model_id, slice_="all", method=method)
    ui.chart(
        viz.regression_scatter(cases, "prob", metric, line=stats.ols_line(cases, metric, "prob")),
        key="conf_scatter",
    )
