"""Subgroups: TPR / FPR / FNR per finding by sex, age bin and their intersection (with CIs and
n), No Finding under/overdiagnosis, and explanation metrics by subgroup. Selecting a bar opens
those cases in the explorer. A grouping with no group (no image has a sex, say) shows the report's
reason: which dataset lacks the value, where it was looked for, and how to supply it. View, race and
insurance are offered where the images record them (race and insurance: MIMIC-CXR with MIMIC-IV's
admissions), as recorded or in the Underdiagnosis paper's groups; a bar of a grouping the explorer
has no filter for opens exactly its (image, finding) pairs."""

import streamlit as st

from cxrxai import reports, summaries
from cxrxai.demographic_groups import GROUPINGS
from cxrxai.labels import ADMISSION_FIELDS
from cxrxai.present import viz
from cxrxai.summaries.predictions import split_note
from pages import _common as ui

INTERSECTION = "sex × age_bin"
#: Offered where the model's images record them (summaries.grouping_counts), after sex, age bin and both
RECORDED = ("view", *ADMISSION_FIELDS)
#: The explorer's filter of a grouping: a bar of these opens as filters, of any other as exact pairs
FILTERS = {"sex": "f_sex", "age_bin": "f_age"}
#: How race and insurance are grouped: the reports' race= / insurance= choices, and what each is called
SCHEMES = list(GROUPINGS)
SCHEME_NAMES = {"paper": "the Underdiagnosis paper's groups (Seyyed-Kalantari et al. 2021)"}
RATES, INTERVALS = ["tpr", "fpr", "fnr"], ["wilson", "bootstrap"]


def _kept(key: str, options: list[str]) -> str:
    return ui.kept(key, options[0], allowed=options)  # every setting survives a visit to another page


store, model_id = ui.page("Subgroups")
path, built = str(store.path), ui.version(store)
counts = ui.grouping_counts(path, built, model_id)
groupings = ["sex", "age_bin", INTERSECTION, *(g for g in RECORDED if counts[g])]
c1, c2, c3 = st.columns(3)
grouping = c1.radio("Group by", groupings, horizontal=True, key=_kept("grouping", groupings))
by = ["sex", "age_bin"] if grouping == INTERSECTION else [grouping]
rate = c2.radio("Rate", RATES, horizontal=True, key=_kept("rate", RATES), format_func=str.upper)
ci = c3.radio("Interval", INTERVALS, horizontal=True, key=_kept("ci", INTERVALS))
options = {g: st.radio(f"{g.capitalize()} groups", SCHEMES, key=_kept(f"{g}_groups", SCHEMES),
                       horizontal=True, format_func=lambda s: SCHEME_NAMES.get(s, s.replace("_", " ")))
           for g in by if g in ADMISSION_FIELDS}
grouped = "".join(f"-{g}-{s}" for g, s in options.items())  # how race / insurance were grouped, in CSV names
if note := summaries.missing_groupings_note({g: counts[g] for g in RECORDED}):
    st.caption(note)

st.caption(split_note(store, model_id))  # a store precomputed with --split all is not read as all
rates = ui.try_report(store, "subgroup-tpr", model_id, by=by, ci=ci, **options)
if rates is not None and not rates.empty:
    event = ui.chart(viz.rate_bars(rates, by, rate=rate), key="rate_chart", select=True)
    points = ui.selected_points(event)
    if points:
        label, *group = points[0]["customdata"][: 1 + len(by)]
        chosen = dict(zip(by, group))
        # A TPR (or FNR) bar is about the group's positives, an FPR bar about its negatives.
        outcomes = ["FP", "TN"] if rate == "fpr" else ["TP", "FN"]
        ui.set_kept("f_finding", label)
        # the explorer on the split the report evaluated (test when the model has one, else every image)
        ui.set_kept("f_split", summaries.resolve_split(store, model_id, None) or summaries.ALL)
        for column, key in FILTERS.items():
            ui.set_kept(key, [chosen[column]] if column in chosen else [])
        ui.set_kept("f_outcome", outcomes)
        # the explorer has no view, race or insurance filter: such a bar opens exactly the pairs it counts
        ui.remember("pairs", None if set(by) <= set(FILTERS) else summaries.group_pairs(
            store, model_id, label, chosen, positives=rate != "fpr", **options))
        ui.remember("case", None)
        st.success(
            f"Selected {label} · {' · '.join(group)} · {'negatives' if rate == 'fpr' else 'positives'}."
        )
        st.page_link(
            "pages/explorer.py", label="Open these cases in the explorer", icon=":material/image_search:"
        )
    cols = [
        "label",
        *by,
        "n",
        "n_pos",
        "n_neg",
        rate,
        f"{rate}_lower",
        f"{rate}_upper",
        f"{rate}_gap_overall",
        f"{rate}_gap_median",
        "auroc",
        "small",
    ]
    ui.table(rates[[c for c in cols if c in rates]])
    ui.download_csv(rates, f"{model_id}-{rate}-by-{'-'.join(by)}{grouped}.csv", key="dl_rates", store=store)
    st.caption(
        "Gaps: against the label's overall rate and the median group (CheXclusion). Groups with fewer than "
        "10 positives (or negatives, for FPR) are flagged `small`, never dropped."
    )

st.subheader("No Finding: underdiagnosis (FPR) and overdiagnosis (FNR)")
under = ui.try_report(store, "underdiagnosis", model_id, by=by, **options)
if under is not None:
    ui.table(under)
    ui.download_csv(under, f"{model_id}-underdiagnosis-by-{'-'.join(by)}{grouped}.csv", key="dl_under",
                    store=store)

st.subheader("Explanation quality by subgroup")
c1, c2 = st.columns(2)
method = ui.explainer_select(store, model_id, key="sub_method", container=c1)
metric = ui.metric_select(reports.metric_choices("explanation-auc-subgroups"), key="sub_metric", container=c2)
expl_by = by if len(by) == 1 else ["sex"]
expl = ui.try_report(store, "explanation-auc-subgroups", model_id, by=expl_by[0], method=method,
                     metric=metric, **{g: s for g, s in options.items() if g in expl_by})
if expl is not None and not expl.empty:
    ui.chart(viz.group_metric_bars(expl, expl_by, metric=metric), key="expl_chart")
    for row in expl[expl["n"] == 0].itertuples() if "note" in expl else []:  # shown, never silently dropped
        st.warning(f"{row.label} · {getattr(row, expl_by[0])}: {row.note}")
    ui.table(expl)
    ui.download_csv(expl, f"{model_id}-{method}-{metric}-by-{expl_by[0]}{grouped}.csv", key="dl_expl",
                    store=store)
