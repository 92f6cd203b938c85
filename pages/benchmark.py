"""Explainer benchmark: explainer × finding IoU / PLA / AUC (thesis Table 1), the occlusion
patch/stride sweep with timings (thesis Fig. 3, Table S4), localization with CIs and the human
benchmark comparison when a second reader exists (Saporta Fig. 2)."""

import streamlit as st

from cxrxai import reports, summaries
from cxrxai.metrics.registry import get as get_metric
from cxrxai.metrics.registry import metric_names
from cxrxai.pipeline.evidence import SNAPSHOT_META
from cxrxai.present import film, viz
from pages import _common as ui

store, model_id = ui.page("Explainer benchmark")

slice_ = st.radio(
    "Cases",
    ["true_positive", "positive"],
    horizontal=True,
    key="bench_slice",
    format_func={"true_positive": "true positives (thesis)", "positive": "all positives (Saporta)"}.get,
)
every = st.checkbox(
    "Include the occlusion sweep's other patch/stride settings (few cases each)", key="bench_every"
)
table = ui.try_report(store, "explainers", model_id, slice_=slice_,
                      settings="all" if every else "main")
if table is not None and not table.empty:
    value = ui.metric_select(metric_names(view="table1"), key="bench_value", label="Heat map of",
                             horizontal=True)
    ui.chart(viz.explainer_heatmap(table, value), key="bench_heat")
    if dropped := summaries.findings_without_rows(store, model_id, table, slice_):
        st.caption(dropped)
    ui.table(table)
    ui.download_csv(table, f"{model_id}-explainers.csv", key="dl_bench", store=store)
    st.caption("; ".join(f"{get_metric(n).label}: {get_metric(n).help}" for n in metric_names(view="table1"))
               + ". Only positive attributions count.")

st.subheader("Which explainer finds the lesion")
c1, c2 = st.columns(2)
rank_metric = ui.metric_select(reports.metric_choices("explainer-ranking"), key="rank_metric", container=c1,
                               horizontal=True)
rank_slice = c2.radio("Cases", ["positive", "true_positive"], horizontal=True, key="rank_slice",
                      format_func={"true_positive": "true positives", "positive": "all positives"}.get)
ranking = ui.try_report(store, "explainer-ranking", model_id, metric=rank_metric, slice_=rank_slice)
if ranking is not None and not ranking.empty:
    ui.table(viz.ranking_display(ranking, rank_metric))
    ui.download_csv(ranking, f"{model_id}-explainer-ranking-{rank_metric}.csv", key="dl_rank", store=store)
    st.caption(summaries.ranking_caption(store))

st.subheader("Model or method? A planted shortcut")
summary = ui.try_report(store, "shortcut", model_id)
if summary is not None and not summary.empty:
    cases = ui.shortcut_cases(str(store.path), ui.version(store))
    finding = cases.label.iloc[0]
    st.caption(
        f"A ResNet-18 fine-tuned on phantoms where a ring marker goes with {finding} (on 90 % of "
        f"positives, 5 % of negatives) against its control, the same network before fine-tuning. Both "
        f"are explained on the same {len(cases)} test cases rendered with the marker "
        f"({int(cases.gt_positive.sum())} {finding} positives, {int((~cases.gt_positive).sum())} "
        "negatives). Removing the marker from the same image shows what each model uses; an explainer "
        "that shows the shortcut puts more of its mass on the marker under the shortcut model than "
        "under the control."
    )
    reliance = ui.try_report(store, "shortcut-reliance", model_id)
    if reliance is not None:
        ui.table(viz.reliance_display(reliance))
    ui.chart(viz.shortcut_differences(summary), key="shortcut_chart")
    ui.table(viz.shortcut_display(summary))
    ui.download_csv(summary, "shortcut-explainers.csv", key="dl_shortcut", store=store)
    pick = st.selectbox(
        "Case",
        cases.image_id.tolist(),
        key="shortcut_case",
        format_func=lambda i: (
            lambda r: (
                f"{i} · {'positive' if r.gt_positive else 'negative'} · shift with the marker: "
                f"shortcut model {r.shift_shortcut:+.2f}, control {r.shift_control:+.2f}"
            )
        )(cases.set_index("image_id").loc[i]),
    )
    panels = ui.shortcut_panels(str(store.path), ui.version(store), pick)
    ui.chart(film.film_grid(panels, columns=len(panels) // 2, height_per_row=300, otsu=False,
                            revision=f"shortcut-{pick}"), key="shortcut_films")
    st.caption(
        "White: the lesion (reference); yellow dashed: the marker zone the shares are counted in (the "
        "marker dilated by 4 % of the side; its area is the chance level). Maps are stored at 56 × 56."
    )

st.subheader("Occlusion patch / stride")
sweep = ui.try_report(store, "occlusion-sweep", model_id)
if sweep is not None and not sweep.empty:
    ui.chart(viz.sweep_lines(sweep), key="sweep_chart")
    ui.table(sweep)
    stored = viz.sweep_counts(sweep, **({} if summaries.sweep_ran(store, model_id) else {"unplanned": ""}))
    counts = summaries.sweep_stored(store, model_id, stored)  # no plan note where no sweep ran: none was made
    st.caption(f"Maps stored per setting: {counts}. Metrics on the cases every stored "
               f"setting has (`cases_scored`). {viz.sweep_timing(sweep)}" + (
        " This store started from the demo's shipped evidence snapshot: its maps were timed on the machine "
        "that built it (`data_cache/evidence/provenance.json`, `timed_on`), not this one."
        if store.meta(SNAPSHOT_META) else ""))
    ui.download_csv(sweep, f"{model_id}-occlusion-sweep.csv", key="dl_sweep", store=store)

st.subheader("Localization per finding (95% bootstrap CI)")
c1, c2 = st.columns(2)
metric = ui.metric_select(reports.metric_choices("localization"), key="loc_metric", container=c1,
                          horizontal=True)
method = ui.explainer_select(store, model_id, key="loc_method", container=c2)
loc = ui.try_report(store, "localization", model_id, metric=metric, method=method)
if loc is not None:
    ui.table(loc)
    ui.download_csv(loc, f"{model_id}-{method}-{metric}.csv", key="dl_loc", store=store)

st.subheader("Against a human benchmark")
hb = ui.try_report(store, "human-benchmark", model_id, metric=metric, method=method)
if hb is not None:
    ui.table(hb, digits=2)
    ui.download_csv(hb, f"{model_id}-human-benchmark.csv", key="dl_hb", store=store)
