"""Plotly figure builders shared by the pages (DataFrames in, figures out; no Streamlit).

Figures that open cases carry ``customdata`` = [label, group...] or [image_id, label] so a
page can turn a selection into explorer filters.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..errors import UnknownNameError
from ..labels import AGE_BINS
from ..stats import MIN_CI_N
from .display import (
    SMALL_N,
    decision_text,
    ranking_display,
    reliance_display,
    shortcut_display,
    value_text,
    verdict_table,
)

__all__ = [
    "PAIRED_MEAN",
    "SMALL_N",
    "auroc_bars",
    "cohort_bars",
    "decision_text",
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
    "similarity_boxes",
    "sweep_lines",
    "value_text",
    "verdict_table",
]

_LAYOUT = dict(margin=dict(l=10, r=10, t=40, b=10), height=380, template="plotly_white")
PALETTE = ["#3b6ea5", "#d1603d", "#5a9e6f", "#8c6bb1", "#c4a000", "#4d4d4d", "#e377c2", "#17becf"]
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
        f"{lab}: {value_text(a, 'no AUROC (one class only)')} [{value_text(lo, '—')}, {value_text(hi, '—')}]<br>{k}"
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


def rate_bars(
    rates: pd.DataFrame, by: list[str], *, rate: str = "tpr", title: str | None = None
) -> go.Figure:
    """Grouped bars of a rate per finding and group with CI whiskers and n; small groups hatched."""
    fig = go.Figure()
    names = _group_name(rates, by)
    denom = "n_neg" if rate == "fpr" else "n_pos" if rate in ("tpr", "fnr") else "n"
    for k, (name, g) in enumerate(rates.groupby(names, sort=True)):
        fig.add_bar(
            name=name, x=g["label"], y=g[rate],
            error_y=dict(type="data", symmetric=False, array=g[f"{rate}_upper"] - g[rate],
                         arrayminus=g[rate] - g[f"{rate}_lower"]),
            marker=dict(color=_colour(g, by, k), pattern_shape=np.where(g["small"], "/", "")),
            customdata=np.column_stack([g["label"], *(g[c].astype(str) for c in by), g[denom]]),
            hovertext=[f"{lab} · {name}: {rate.upper()} {value_text(v, 'not defined (no case)')}<br>n = {k}"
                       for lab, v, k in zip(g["label"], g[rate], g[denom])],
            hovertemplate="%{hovertext}<extra></extra>",
        )
    empty = int(rates[rate].isna().sum())
    gaps = f"; {empty} group{'s' * (empty != 1)} with no case: no bar" if empty else ""
    fig.update_layout(
        title=title or f"{rate.upper()} by {' × '.join(by)} (95% CI; hatched: fewer than 10{gaps})",
        barmode="group",
        yaxis=dict(range=[0, 1.05], title=rate.upper()),
        clickmode="event+select",
        **_LAYOUT,
    )
    return fig


def group_metric_bars(df: pd.DataFrame, by: list[str], *, metric: str = "AUC") -> go.Figure:
    """Mean explanation metric per finding and group with CI (``metric_by_group`` output)."""
    fig = go.Figure()
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
        title=f"Explanation {metric} by {' × '.join(by)} (true positives, 95% CI from 5 cases; hatched: "
        f"fewer than {SMALL_N})",
        barmode="group",
        yaxis_title=metric,
        clickmode="event+select",
        **_LAYOUT,
    )
    return fig


def explainer_heatmap(table: pd.DataFrame, value: str = "auc") -> go.Figure:
    """Explainer × finding heatmap of a mean metric (thesis Table 1): each cell shows its value and
    n; cells from fewer than :data:`SMALL_N` cases are grey; a cell with no value says why."""
    wide = table.pivot(index="explainer", columns="label", values=value)

    def count(col):
        return (
            table.pivot(index="explainer", columns="label", values=col)
            .reindex_like(wide)
            .fillna(0)
            .astype(int)
        )

    cases = count("n")
    # the cases with a value (an AUC can be undefined)
    n = count(f"n_{value}") if f"n_{value}" in table else cases
    v = wide.to_numpy(float)
    small = (n.to_numpy() < SMALL_N) | np.isnan(v)
    text = np.where(
        np.isnan(v),
        np.where(
            cases.to_numpy() == 0, "no case", "not defined<br>for its n=" + cases.astype(str).to_numpy()
        ),
        np.char.add(
            np.char.add(np.round(np.nan_to_num(v), 3).astype(str), "<br>n="), n.astype(str).to_numpy()
        ),
    )
    fig = go.Figure(
        [
            go.Heatmap(
                z=np.where(small, np.nan, v),
                x=wide.columns,
                y=wide.index,
                colorscale="Blues",
                text=text,
                texttemplate="%{text}",
                hoverongaps=False,
                name=f"n ≥ {SMALL_N}",
                colorbar=dict(title=value.upper()),
            ),
            go.Heatmap(
                z=np.where(small, 1.0, np.nan),
                x=wide.columns,
                y=wide.index,
                colorscale=[[0, "#e5e5e5"], [1, "#e5e5e5"]],
                showscale=False,
                text=text,
                texttemplate="%{text}",
                hoverongaps=False,
                name=f"n < {SMALL_N}",
            ),
        ]
    )
    fig.update_layout(
        title=f"{value.upper()} per explainer and finding (grey: fewer than {SMALL_N} cases)", **_LAYOUT
    )
    return fig


def sweep_lines(sweep: pd.DataFrame) -> go.Figure:
    """Occlusion patch/stride sweep: metrics with CIs and seconds per map (thesis Fig. 3, Table S4)."""
    x = sweep["patch"].astype(str) + "/" + sweep["stride"].astype(str)
    fig = go.Figure()
    for k, metric in enumerate(("roc_auc", "iou", "pla")):
        if metric not in sweep:
            continue
        err = None
        if f"{metric}_upper" in sweep:
            err = dict(type="data", symmetric=False, array=sweep[f"{metric}_upper"] - sweep[metric],
                       arrayminus=sweep[metric] - sweep[f"{metric}_lower"])
        n = sweep["cases_scored"] if "cases_scored" in sweep else sweep["maps"]
        fig.add_scatter(x=x, y=sweep[metric], name=metric.upper().replace("ROC_", ""), mode="lines+markers",
                        error_y=err, line_color=PALETTE[k], customdata=n,
                        hovertemplate="%{x}: %{y:.3f} (n = %{customdata} cases)<extra></extra>")
    fig.add_bar(
        x=x, y=sweep["seconds_mean"], name="seconds per map", yaxis="y2", opacity=0.3, marker_color="grey"
    )
    fig.update_layout(
        title="Occlusion patch / stride (95 % CI over cases; none from fewer than 5)",
        xaxis_title="patch / stride (px)",
        yaxis=dict(title="metric", range=[0, 1]),
        yaxis2=dict(title="seconds", overlaying="y", side="right"),
        **_LAYOUT,
    )
    return fig


def regression_scatter(
    df: pd.DataFrame, x: str, y: str, *, line: tuple[float, float] | None = None
) -> go.Figure:
    """Scatter of a per-case metric against a predictor, one colour per finding, with the fitted
    line ``(intercept, slope)``; ``customdata`` = [image_id, label] for lasso/box selection."""
    fig = go.Figure()
    usable = np.isfinite(df[x].astype(float)) & np.isfinite(df[y].astype(float))
    for k, (label, g) in enumerate(df[usable].groupby("label", sort=True)):
        fig.add_scatter(
            x=g[x],
            y=g[y],
            mode="markers",
            name=f"{label} (n = {len(g)})",
            marker=dict(size=6, opacity=0.7, color=PALETTE[k % len(PALETTE)]),
            customdata=np.column_stack([g["image_id"], g["label"]]),
            hovertemplate="%{customdata[0]} · %{customdata[1]}<br>"
            + f"{x} "
            + "%{x:.3f}, "
            + f"{y} "
            + "%{y:.3f}<extra></extra>",
        )
    if line is not None and all(np.isfinite(line)) and len(df):
        xs = np.array([df[x].min(), df[x].max()], float)
        fig.add_scatter(
            x=xs,
            y=line[0] + line[1] * xs,
            mode="lines",
            name="OLS fit",
            line=dict(color="black", dash="dash"),
        )
    left_out = f", {int((~usable).sum())} without a value" if (~usable).any() else ""
    fig.update_layout(title=f"{y} vs {x} (n = {int(usable.sum())}{left_out})", xaxis_title=x, yaxis_title=y,
                      dragmode="lasso", **_LAYOUT)
    return fig


def randomization_lines(curves: pd.DataFrame, thresholds: pd.Series) -> go.Figure:
    """Mean SSIM to the original map along cascading randomization, per method, with each
    method's degradation threshold dashed (Arun et al. Fig. 3)."""
    fig = go.Figure()
    for k, (method, g) in enumerate(curves.groupby("method", sort=True)):
        color = PALETTE[k % len(PALETTE)]
        sd = g["std"].where(g["count"] >= MIN_CI_N)  # no spread drawn from fewer than 5 images
        fig.add_scatter(x=g["step"], y=g["mean"], name=method, mode="lines+markers", line_color=color,
                        error_y=dict(type="data", array=sd, visible=True), customdata=g["count"],
                        hovertemplate="%{x}: %{y:.3f} ± SD (n = %{customdata} images)<extra></extra>")
        if method in thresholds:
            fig.add_scatter(
                x=[g["step"].iloc[0], g["step"].iloc[-1]],
                y=[thresholds[method]] * 2,
                mode="lines",
                line=dict(color=color, dash="dash"),
                name=f"{method} threshold",
                showlegend=False,
            )
    fig.update_layout(
        title="Cascading randomization (top layer first; mean ± 1 SD)",
        xaxis_title="randomized down to",
        yaxis=dict(title="SSIM to the trained model's map", range=[0, 1.05]),
        **_LAYOUT,
    )
    return fig


def similarity_boxes(t: pd.DataFrame) -> go.Figure:
    """SSIM distributions for repeatability and reproducibility per method, with the 0.5 line."""
    fig = go.Figure()
    for k, (kind, g) in enumerate(t.groupby("kind", sort=True)):
        n = g.groupby("method")["ssim"].transform("count")
        fig.add_box(
            x=g["method"],
            y=g["ssim"],
            name=f"{kind} (n = {int(n.max())} a method)" if n.nunique() == 1 else kind,
            marker_color=PALETTE[k],
            boxmean=True,
            customdata=n,
            hovertemplate="%{x}: %{y:.3f} (n = %{customdata})<extra></extra>",
        )
    fig.add_hline(y=0.5, line_dash="dash", line_color="grey")
    fig.update_layout(title="Repeatability (same architecture) and reproducibility (another architecture)",
                      boxmode="group", yaxis=dict(title="SSIM", range=[0, 1.05]), **_LAYOUT)
    return fig


def perturbation_lines(row: pd.Series) -> go.Figure:
    """Deletion (ordered, random) and insertion curves of one case, black and mean-image fill."""
    fig = go.Figure()
    for fill in ("black", "mean"):
        dash = "solid" if fill == "black" else "dot"
        for name, col, color in (("deletion", f"deletion_{fill}", PALETTE[1]),
                                 ("random deletion", f"deletion_random_{fill}", "grey"),
                                 ("insertion", f"insertion_{fill}", PALETTE[2])):
            y = np.asarray(row[col], float)
            fig.add_scatter(x=np.linspace(0, 1, len(y)), y=y, mode="lines", name=f"{name} ({fill})",
                            line=dict(color=color, dash=dash))
    fig.update_layout(title="Deletion / insertion curves", xaxis_title="fraction of regions perturbed",
                      yaxis=dict(title="probability", range=[0, 1.02]), **_LAYOUT)
    return fig


#: The mean-image value of :func:`paired_lines`: as measured, or rescaled to the black fill's range.
PAIRED_MEAN = {
    "audc_diff_mean": "AUDCdiff",
    "audc_diff_mean_normalized": "normalised to black's range (thesis Fig. 6)",
}


def paired_lines(f: pd.DataFrame, mean: str = "audc_diff_mean") -> go.Figure:
    """AUDCdiff with black vs mean-image fill, one line per case (thesis Fig. 6), a colour per explainer
    setting (column ``explainer`` where given, else ``method``) with its n of cases in the legend (a case
    without both values is left out). ``mean``: a key of :data:`PAIRED_MEAN`. A normalised value explodes
    where the mean-image curve barely moves, so the axis spans the middle 90 % of the values (and ±1)
    and the title counts the cases beyond it."""
    if mean not in PAIRED_MEAN:
        raise UnknownNameError("mean-image value", mean, tuple(PAIRED_MEAN))
    fig, ys = go.Figure(), []
    for k, (method, g) in enumerate(f.groupby("explainer" if "explainer" in f else "method", sort=True)):
        g = g[np.isfinite(g.audc_diff_black.astype(float)) & np.isfinite(g[mean].astype(float))]
        for i, r in enumerate(g.itertuples()):
            y = [r.audc_diff_black, getattr(r, mean)]
            ys += y
            fig.add_scatter(
                x=["black", "mean image"],
                y=y,
                mode="lines+markers",
                line=dict(color=PALETTE[k % len(PALETTE)], width=1),
                opacity=0.6,
                name=f"{method} (n = {len(g)})",
                legendgroup=method,
                showlegend=i == 0,
                hovertemplate=f"{method} · {r.image_id} · {r.label}: " + "%{y:.3f}<extra></extra>",
            )
    fig.add_hline(y=0, line_dash="dash")
    title = "AUDCdiff by fill (> 0: the explanation beats a random order)"
    if mean == "audc_diff_mean_normalized" and ys:
        lo, hi = np.percentile(ys, [5, 95])
        lo, hi = min(lo, -1.0), max(hi, 1.0)
        pad = 0.05 * (hi - lo)
        fig.update_yaxes(range=[lo - pad, hi + pad])
        beyond = int(np.sum((np.asarray(ys) < lo - pad) | (np.asarray(ys) > hi + pad)))
        title += f"<br><sub>mean image normalised; {beyond} value{'s' * (beyond != 1)} beyond the axis</sub>"
    fig.update_layout(title=title, yaxis_title="AUDCdiff", **_LAYOUT)
    return fig


def shortcut_differences(summary: pd.DataFrame) -> go.Figure:
    """Per explainer: marker share under the shortcut model minus under its control (paired mean,
    95 % CI; no bar where fewer than 5 pairs), with n pairs and the verdict on hover."""
    s = summary.sort_values("difference")
    ci = s.lower.notna()
    fig = go.Figure(
        go.Scatter(
            x=s.difference,
            y=s.method,
            mode="markers",
            marker=dict(size=10, color=np.where(ci, "#1f77b4", "#aaaaaa")),
            error_x=dict(
                type="data",
                symmetric=False,
                array=(s.upper - s.difference).fillna(0),
                arrayminus=(s.difference - s.lower).fillna(0),
            ),
            customdata=np.stack([s.pairs, s.verdict, s.shortcut_share, s.control_share], axis=1),
            hovertemplate="%{y}: %{x:.3f} (n=%{customdata[0]} pairs)<br>%{customdata[1]}<br>shortcut model "
            "%{customdata[2]:.3f}, control %{customdata[3]:.3f}<extra></extra>",
        )
    )
    fig.add_vline(x=0, line_dash="dot", line_color="grey")
    for r in s.itertuples():
        fig.add_annotation(
            x=1, xref="paper", y=r.method, text=f"n={r.pairs}", showarrow=False, xanchor="left"
        )
    fig.update_layout(title="Marker share: shortcut model − control (95% paired bootstrap CI)",
                      xaxis_title="difference in share of the map's positive mass in the marker zone",
                      height=120 + 40 * len(s), margin=dict(r=60))
    return fig
