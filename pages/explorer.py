"""Image explorer: filter cases, see the radiograph with a saliency overlay and the ground truth,
and recompute any explainer live (occlusion patch/stride sliders, coarse → fine, cancellable).

Filters, case, explainer and its parameters survive navigation and live in the URL
(``?finding=Mass&case=ph7-00012&explainer=occlusion&p_patch=16``), so a view can be shared.
Selections made on other pages arrive as filters (a TPR bar: that group's positives) or as exact
(image, finding) pairs (a lasso)."""

import pandas as pd
import streamlit as st

from cxrxai import summaries
from cxrxai.errors import CxrxaiError
from cxrxai.explain import get as get_method
from cxrxai.labels import AGE_BINS, SEXES
from cxrxai.metrics.registry import get as get_metric
from cxrxai.metrics.registry import metric_names
from pages import _case_grid, _multi, _viewer
from pages import _common as ui

OUTCOMES = ["TP", "FN", "FP", "TN"]
URL = {"split": "f_split",
       "finding": "f_finding", "sex": "f_sex", "age": "f_age", "outcome": "f_outcome", "case": "sel_case",
       "explainer": "method_0", "layout": "layout", "pair": ui.SELECTED["pairs"]}
LISTS = ("sex", "age", "outcome", "pair")
#: The case grid's key (its value: :mod:`pages._case_grid`)
GRID = "case_grid"
#: The key of the expander of every label's probability (open or not)
PROBABILITIES = "case_probabilities_open"
LAYOUTS = {"single": "One film", "compare": "Compare side by side", "grid": "Grid of explainers"}


def _parse(param: str, text):
    """A URL value for its widget: explainer parameters (``p_<name>``) typed by the registry; the
    (image, finding) pairs of a selection made on another page."""
    if param == "pair":
        return ui.pairs_from_url(text)
    if param.startswith("p_"):
        method = st.query_params.get("explainer", "gradcam")
        try:
            return get_method(method).param(param[2:]).parse(text)
        except CxrxaiError as err:
            raise ValueError(str(err)) from None
    return text


def _step_to(image_id: str, label: str) -> None:
    """Previous/next case: that case is shown (and highlighted in the grid). A row click that reached
    the page in the same rerun as the button's (a click, then the button, faster than the page
    answered: seen under load) is taken here, so that it cannot undo the step the button named."""
    ui.remember("case", image_id)
    ui.remember("case_label", label)
    _case_grid.take_step(key=GRID)


def _steps(listed: pd.DataFrame, at: int, sort: dict | None) -> None:
    """Previous and next case of the grid, in its order (``listed``: :func:`_case_grid.in_grid_order`;
    ``at``: the shown case's place there)."""
    back, forward, where = st.columns([1, 1, 4], vertical_alignment="center")
    for col, step, text in ((back, -1, "◀ Previous case"), (forward, 1, "Next case ▶")):
        row = at + step
        there = 0 <= row < len(listed)
        col.button(text, key=f"case_step_{step}", disabled=not there, on_click=_step_to, width="stretch",
                   args=(listed.iloc[row]["image_id"], listed.iloc[row]["label"]) if there else ())
    how = "as listed"
    if sort is not None:
        how = f"by {sort['column']}, " + ("descending" if sort["descending"] else "ascending")
    where.caption(f"case {at + 1} of {len(listed)} in the grid's order ({how}; a click on a column header "
                  "sorts it)")


store, model_id = ui.page("Image explorer")
path, built = str(store.path), ui.version(store)
params_in_url = {p: f"{p[2:]}_0" for p in st.query_params if p.startswith("p_")}
ui.from_url({**URL, **params_in_url}, lists=LISTS, parse=_parse)
have = summaries.split_choices(store, model_id)  # every precomputed split, then all
split = st.radio("Split", list(have), horizontal=True, format_func=lambda s: f"{s} ({have[s]:,} images)",
                 key=ui.kept("f_split", next(iter(have)), allowed=list(have)))
cases = ui.case_table(path, built, model_id, "gradcam", split=split)
if cases.empty:
    ui.missing(f"predictions of {model_id}", store=store, model_id=model_id)
    st.stop()

with st.expander("Filters", expanded=True):
    pairs = ui.recalled("pairs")
    c1, c2, c3, c4 = st.columns(4)
    # the model's labels in its output order; it opens on one the dataset labels (with positives if any)
    choice = ui.finding_choices(path, built, model_id, "gradcam", split).set_index("finding")
    findings, first = list(choice.index), choice.index[choice["default"]][0]
    finding = c1.selectbox("Finding", findings, key=ui.kept("f_finding", first, allowed=findings),
                           disabled=bool(pairs),
                           format_func=lambda f: f if choice.labelled[f] else f"{f} (not labelled here)")
    sexes = c2.multiselect("Sex", SEXES, key=ui.kept("f_sex", [], allowed=SEXES))
    ages = c3.multiselect("Age bin", AGE_BINS, key=ui.kept("f_age", [], allowed=AGE_BINS))
    outcomes = c4.multiselect("Outcome", OUTCOMES, key=ui.kept("f_outcome", [], allowed=OUTCOMES),
                              help="TP/FN: the finding is present; FP/TN: absent (at the stored threshold)")
    c5, c6, c7 = st.columns(3)
    prob_range = c5.slider("Model probability", 0.0, 1.0, step=0.01, key=ui.kept("f_prob", (0.0, 1.0)))
    score = ui.metric_select(metric_names(view="cases"), key="f_metric", container=c6, label="Score")
    score_range = c7.slider(f"Grad-CAM {get_metric(score).label} (positive cases)", 0.0, 1.0, step=0.01,
                            key=ui.kept("f_score", (0.0, 1.0)))
    if pairs:
        st.caption(f"Showing exactly the {len(pairs)} (image, finding) pairs selected on another page"
                   + ("." if ui.pairs_to_url(pairs) else f" (over {ui.URL_PAIRS}: too many for the URL, "
                                                          "which holds the filters instead)."))
        if st.button("Clear that selection"):
            ui.remember("pairs", None)
            st.rerun()

view = summaries.filter_cases(cases, finding=finding, sexes=sexes, age_bins=ages, outcomes=outcomes,
                              prob_range=prob_range, metric=score, metric_range=score_range, pairs=pairs)
of = f"{len(pairs)} selected pairs" if pairs else f"{int((cases.label == finding).sum())} {finding} cases"
st.caption(f"{len(view)} of {of} (" + ("every split" if split == summaries.ALL else f"{split} split") + ")")
columns = ["image_id", "label", "outcome", "prob", "threshold", "sex", "age", "view",
           *metric_names(view="cases")]
shown, cells = _case_grid.grid_data(view[columns])
grid = _case_grid.take_click(shown, key=GRID)  # a row clicked: its case (the grid's value)
case_id, case_label = ui.recalled("case"), ui.recalled("case_label")
match = view[(view.image_id == case_id) & ((view.label == case_label) | (case_label is None))]
if match.empty:  # open on a true positive when there is one (a case with something to localize)
    tp = view[view.outcome == "TP"]
    match = (tp if len(tp) else view).head(1)
selected = tuple(match.iloc[0][["image_id", "label"]]) if len(match) else None
_case_grid.case_grid(cells, selected, grid, key=GRID)
ui.missing_caption(view[columns], "—: no threshold stored, no localization score (a negative case or no "
                   "map), or sex, age or view not recorded.")
if view.empty:
    st.info("No case matches these filters.")
    st.stop()
row = match.iloc[0]
case_id, finding = row["image_id"], row["label"]
ui.remember("case", case_id)
ui.remember("case_label", finding)
sort = _case_grid.sort_of(grid, shown)
listed = _case_grid.in_grid_order(shown, sort)
_steps(listed, listed.index.get_loc(match.index[0]), sort)
st.subheader(f"{case_id} — {finding}")
def _known(value, missing: str):
    return missing if value is None or pd.isna(value) or value == "" else value


age = _known(row["age"], None)  # the model's probability and outcome are each panel's own (its model's)
st.markdown(f"{_known(row['sex'], 'sex missing')}, {'age missing' if age is None else f'{age:g} y'} · "
            f"{_known(row['view'], 'view missing')}")
# drawn only while open (a click on it reruns the page): closed, every data click paid for the
# table's styling and its messages, the costliest element above the film
probabilities = st.expander("Every label's probability for this image", key=PROBABILITIES, on_change="rerun")
with probabilities:
    if probabilities.open:
        ui.table(summaries.case_probabilities(cases, case_id))


def _url() -> None:
    """The view to the URL: the page's filters and case, the explainer and its settings."""
    method = ui.current("method_0")
    params = get_method(method).controls if method else ()
    controls = {f"p_{p.name}": ui.current(f"{p.name}_0") for p in params}
    ui.to_url({"split": split,
               "finding": finding, "sex": sexes, "age": ages, "outcome": outcomes, "case": case_id,
               "explainer": method, "pair": ui.pairs_to_url(pairs),
               "layout": None if ui.current("layout") == "single" else ui.current("layout"), **controls})


# The URL before the panels: a live map's polling may end this run early, and the widgets' new
# values are already in the session at the start of the run. The single film's panel writes it
# again on its own reruns (a click on its explainer reruns that panel only).
_url()

_viewer.warm(store, model_id)
layout = st.radio(
    "Layout",
    LAYOUTS,
    horizontal=True,
    key=ui.kept("layout", "single", allowed=list(LAYOUTS)),
    format_func=LAYOUTS.get,
    help="compare: two explainers, models or cases with zoom synced; grid: "
    "several explainers of this case on one colour scale",
)
if layout == "compare":
    _multi.compare(
        store, model_id, case_id, finding, view.loc[view.label == finding, "image_id"].head(500).tolist()
    )
elif layout == "grid":
    _multi.grid(store, model_id, case_id, finding)
else:
    _viewer.panel(store, model_id, case_id, finding, slot=0, url=_url)
