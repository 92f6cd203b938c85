"""Plotly figure builders shared by the pages (DataFrames in, figures out; no Streamlit): the cohort,
performance and subgroup charts here, with the localization charts (:mod:`.viz_localization`), the
trust, fidelity and shortcut charts (:mod:`.viz_trust`) and the tables (:mod:`.display`) re-exported,
so a page has one import for presentation.

Figures that open cases carry ``customdata`` = [label, group...] or [image_id, label] so a
page can turn a selection into explorer filters.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..labels import AGE_BINS
from ..metrics import registry as metric_registry
from ._style import LAYOUT as _LAYOUT
from ._style import PALETTE
from .display import (
    SMALL_N,
    decision_text,
    ranking_display,
    reliance_display,
    shortcut_display,
    sweep_counts,
    sweep_timing,
    value_text,
    verdict_table,
)
from .viz_compare import comparison_forest, disagreement_scatter, roc_curves
from .viz_localization import explainer_heatmap, regression_scatter, sweep_lines
from .viz_trust import (
    PAIRED_MEAN,
    paired_lines,
    perturbation_lines,
    randomization_lines,
    shortcut_differences,
    similarity_boxes,
)

__all__ = [
    "PAIRED_MEAN",
    "SMALL_N",
    "auroc_bars",
    "cohort_bars",
    "comparison_forest",
    "decision_text",
    "disagreement_scatter",
    "explainer_heatmap",
    "group_colour",
    "group_metric_bars",
    "paired_lines",
    "perturbation_lines",
    "prevalence_bars",
    "randomization_lines",
    "ranking_display",
    "rate_bars",
    "regression_scatter",
    "reliance_display",
    "shortcut_differences",
    "shortcut_display",
    "roc_curves",
    "similarity_boxes",
    "sweep_counts",
    "sweep_lines",
    "sweep_timing",
    "value_text",
    "verdict_table",
]

#: Subgroup colours: a hue per sex (a purple when a chart groups by age alone, grey for a sex not
#: recorded) and a lightness per age bin, young light to old dark (a pale one for an age not recorded).
SEX_HUES = {"F": 15, "M": 212}
_AGE_ONLY_HUE = 275
_AGE_LIGHTNESS = dict(zip(AGE_BINS, (78, 66, 54, 42, 30)))


def group_colour(group: dict[str, str], fallback: str = PALETTE[0]) -> str:
    """The colour of one subgroup, the same in every chart whatever other groups it shows:
    ``{"sex": "F", "age_bin": "0-20"}`` (or either alone); ``fallback`` for a grouping by other columns.

    >>> group_colour({"sex": "F", "age_bin": "0-20"}), group_colour({"sex": "M", "age_bin": "80+"})
    ('hsl(15, 65%, 78%)', 'hsl(212, 65%, 30%)')
    """
    if not group or not set(group) <= {"sex", "age_bin"}:
        return fallback
    sex, age = str(group.get("sex")), str(group.get("age_bin"))
    hue = _AGE_ONLY_HUE if "sex" not in group else SEX_HUES.get(sex)
    saturation = 0 if hue is None else 65 if "age_bin" not in group or age in _AGE_LIGHTNESS else 25
    lightness = 46 if "age_bin" not in group else _AGE_LIGHTNESS.get(age, 62)
    return f"hsl({hue or 0}, {saturation}%, {lightness}%)"


def auroc_bars(perf: pd.DataFrame, *, title: str = "Test AUROC per label (95% bootstrap CI)") -> go.Figure:
    """Horizontal bars of AUROC with CI whiskers, n positive / negative under each label on the axis
    (a bar starts at 0, off the visible range, so text inside it would be cut); a label without an
    AUROC (one class only in the split) says why beside its axis label."""
    df = perf.sort_values("auroc", na_position="first")
    n = "n+ " + df["n_positive"].astype(str) + ", n− " + df["n_negative"].astype(str)
    hover = [
        f"{lab}: {value_text(a, 'no AUROC (one class only)')} "
        f"[{value_text(lo, '—')}, {value_text(hi, '—')}]<br>{k}"
        for lab, a, lo, hi, k in zip(df["label"], df["auroc"], df["lower"], df["upper"], n)
    ]
    lowest = pd.concat([df["lower"], df["auroc"]]).min()
    # a poor model's bars stay in view
    left = 0.4 if not lowest < 0.45 else float(np.floor(lowest * 10 - 0.5) / 10)
    fig = go.Figure(
        go.Bar(
            x=df["auroc"],
            y=df["label"],
            orientation="h",
            error_x=dict(
                type="data",
                symmetric=False,
                array=df["upper"] - df["auroc"],
                arrayminus=df["auroc"] - df["lower"],
            ),
            customdata=df[["n_positive", "n_negative", "lower", "upper"]],
            hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>",
            marker_color=PALETTE[0],
        )
    )
    for lab, k in zip(df["label"][df["auroc"].isna()], n[df["auroc"].isna()]):
        fig.add_annotation(
            x=left + 0.01, y=lab, text=f"no AUROC: one class only ({k})", showarrow=False, xanchor="left"
        )
    fig.add_vline(x=0.5, line_dash="dot", line_color="grey")
    fig.update_layout(title=title, xaxis=dict(range=[left, 1.0], title="AUROC"),
                      yaxis=dict(tickmode="array", tickvals=list(df["label"]), automargin=True,
                                 ticktext=[f"{lab} ({k})" for lab, k in zip(df["label"], n)]),
                      **{**_LAYOUT, "height": max(_LAYOUT["height"], 120 + 32 * len(df))})
    return fig


def prevalence_bars(labels: pd.DataFrame) -> go.Figure:
    """Positive cases per label, grouped by split; the hover gives the prevalence's denominator
    (labelled images) and, where the table counts them, the images without a label."""
    fig = go.Figure()
    for split, grp in labels.groupby("split"):
        # the prevalence's denominator: uncertain or missing labels are not in it
        known = grp["positive"] + grp["negative"]
        unknown = grp["unknown"] if "unknown" in grp else [None] * len(grp)
        hover = [
            f"{lab}: {pos} of {k} labelled images ("
            + ("no labelled image" if not prev == prev else f"{prev:.1%}")
            + ")"
            + ("" if u is None or u != u else f"; {u:.0f} without a label")
            for lab, pos, k, prev, u in zip(grp["label"], grp["positive"], known, grp["prevalence"], unknown)
        ]
        fig.add_bar(name=str(split), x=grp["label"], y=grp["positive"], hovertext=hover,
                    hovertemplate="%{hovertext}<extra>" + str(split) + "</extra>")
    fig.update_layout(
        title="Positive cases per label and split", barmode="group", yaxis_title="images", **_LAYOUT
    )
    return fig


def cohort_bars(counts: pd.DataFrame) -> go.Figure:
    """Images per age bin, stacked by sex, one group per split (``counts``: split, sex, age_bin, n)."""
    fig = go.Figure()
    for sex, grp in counts.groupby("sex", dropna=False):
        fig.add_bar(name=str(sex), x=[grp["split"], grp["age_bin"]], y=grp["n"],
                    marker_color=group_colour({"sex": sex}))
    fig.update_layout(
        title="Images by split, age bin and sex", barmode="stack", yaxis_title="images", **_LAYOUT
    )
    return fig


def _group_name(df: pd.DataFrame, by: list[str]) -> pd.Series:
    return df[by].astype(str).agg(" · ".join, axis=1)


def _colour(g: pd.DataFrame, by: list[str], k: int) -> str:
    """The colour of the group whose rows are ``g`` (:func:`group_colour`; the k-th of the palette
    for a grouping by other columns)."""
    return group_colour({c: str(g[c].iloc[0]) for c in by}, PALETTE[k % len(PALETTE)])


#: Half the height of the mark a rate of 0 is drawn as: a bar of height 0 is not drawn, and a group
#: whose positives were all missed must be seen and opened like any other.
ZERO_MARK = 0.015


def _zero_marks(g: pd.DataFrame, rate: str, n: pd.Series) -> dict:
    """A bar trace's ``base``, heights, whiskers, outlines and texts: a rate of 0 as a short outlined
    mark straddling 0, labelled "0 of n", its whisker from 0; every other value a plain bar from 0."""
    values, zero = g[rate], (g[rate] == 0).to_numpy()
    top = np.where(zero, ZERO_MARK, values)  # where a whisker starts: the value, the mark's top for a 0
    return dict(base=np.where(zero, -ZERO_MARK, 0.0), y=np.where(zero, 2 * ZERO_MARK, values),
                text=[f"0 of {k}" if z else "" for z, k in zip(zero, n)],
                error_y=dict(type="data", symmetric=False, array=g[f"{rate}_upper"] - top,
                             arrayminus=np.where(zero, ZERO_MARK, values - g[f"{rate}_lower"])),
                line=dict(color=np.where(zero, "black", "rgba(0,0,0,0)"), width=np.where(zero, 1.5, 0)))


def rate_bars(
    rates: pd.DataFrame, by: list[str], *, rate: str = "tpr", title: str | None = None
) -> go.Figure:
    """Grouped bars of a rate per finding and group with CI whiskers and n; small groups hatched; a
    rate of 0 (every positive missed, say) an outlined mark at 0 with its n, clickable as any bar,
    unlike a group with no case, which has no bar."""
    fig = go.Figure()
    names = _group_name(rates, by)
    denom = "n_neg" if rate == "fpr" else "n_pos" if rate in ("tpr", "fnr") else "n"
    for k, (name, g) in enumerate(rates.groupby(names, sort=True)):
        mark = _zero_marks(g, rate, g[denom])
        fig.add_bar(
            name=name, x=g["label"], y=mark["y"], base=mark["base"], error_y=mark["error_y"],
            text=mark["text"], textposition="outside", cliponaxis=False,
            marker=dict(color=_colour(g, by, k), pattern_shape=np.where(g["small"], "/", ""),
                        line=mark["line"]),
            customdata=np.column_stack([g["label"], *(g[c].astype(str) for c in by), g[denom]]),
            hovertext=[f"{lab} · {name}: {rate.upper()} {value_text(v, 'not defined (no case)')}<br>n = {k}"
                       for lab, v, k in zip(g["label"], g[rate], g[denom])],
            hovertemplate="%{hovertext}<extra></extra>",
        )
    empty = int(rates[rate].isna().sum())
    gaps = f"; {empty} group{'s' * (empty != 1)} with no case: no bar" if empty else ""
    zeros = "; rate 0: outlined mark, 0 of n" if (rates[rate] == 0).any() else ""
    fig.update_layout(
        title=title or f"{rate.upper()} by {' × '.join(by)} (95% CI; hatched: fewer than 10{zeros}{gaps})",
        barmode="group",
        yaxis=dict(range=[-2 * ZERO_MARK, 1.05], title=rate.upper()),
        clickmode="event+select",
        **_LAYOUT,
    )
    return fig


def group_metric_bars(df: pd.DataFrame, by: list[str], *, metric: str | None = None) -> go.Figure:
    """Mean explanation ``metric`` per finding and group with CI (``metric_by_group`` output), under
    the metric's registered label."""
    fig, title = go.Figure(), metric_registry.label(metric) if metric else "metric"
    names = _group_name(df, by)
    for k, (name, g) in enumerate(df.groupby(names, sort=True)):
        fig.add_bar(
            name=name,
            x=g["label"],
            y=g["mean"],
            error_y=dict(
                type="data", symmetric=False, array=g["upper"] - g["mean"], arrayminus=g["mean"] - g["lower"]
            ),
            marker=dict(color=_colour(g, by, k), pattern_shape=np.where(g["n"] < SMALL_N, "/", "")),
            text=g["n"].map(lambda n: f"n={n}"),
            textposition="outside",
            customdata=np.column_stack([g["label"], *(g[c].astype(str) for c in by)]),
        )
    fig.update_layout(
        title=f"Explanation {title} by {' × '.join(by)} (true positives, 95% CI from 5 cases; hatched: "
        f"fewer than {SMALL_N})",
        barmode="group",
        yaxis_title=title,
        clickmode="event+select",
        **_LAYOUT,
    )
    return fig
