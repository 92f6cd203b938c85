"""The localization charts (DataFrames in, figures out; no Streamlit): Table 1's heat map, the
occlusion sweep and the regression scatters. Each metric is drawn under its registered label
(:func:`cxrxai.metrics.registry.label`), and the sweep draws every metric of the ``sweep`` view."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..metrics import registry as metric_registry
from ._style import LAYOUT as _LAYOUT
from ._style import PALETTE
from .display import CLOCKS, SMALL_N

__all__ = ["explainer_heatmap", "regression_scatter", "sweep_lines"]


def explainer_heatmap(table: pd.DataFrame, value: str) -> go.Figure:
    """Explainer × finding heatmap of the mean metric ``value`` (a column of thesis Table 1): each
    cell shows its value and n (``n_<value>`` where the table counts the cases with a value); cells
    from fewer than :data:`SMALL_N` cases are grey; a cell with no value says why."""
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
                colorbar=dict(title=metric_registry.label(value)),
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
        title=f"{metric_registry.label(value)} per explainer and finding (grey: fewer than {SMALL_N} cases)",
        **_LAYOUT,
    )
    return fig


def _clocks(sweep: pd.DataFrame) -> str:
    """The clocks of the sweep's seconds, as a reader calls them (``CPU``, ``wall-clock``)."""
    kinds = sweep["timing"].dropna().unique() if "timing" in sweep else []
    return " / ".join(CLOCKS.get(k, (k,))[0] for k in sorted(kinds)) or "no map timed"


def _seconds_bars(fig: go.Figure, x: pd.Series, sweep: pd.DataFrame) -> None:
    """Median seconds per map with their interquartile range; n and the clock in the hover."""
    median = sweep["seconds_median"]
    n = sweep["timed_maps"].fillna(0).astype(int)
    clock = [CLOCKS.get(k, (k,))[0] if isinstance(k, str) else "" for k in sweep["timing"]]
    fig.add_bar(x=x, y=median, name="seconds per map (median, IQR)", yaxis="y2", opacity=0.3,
                marker_color="grey", customdata=list(zip(n, clock)),
                error_y=dict(type="data", symmetric=False, array=sweep["seconds_q3"] - median,
                             arrayminus=median - sweep["seconds_q1"]),
                hovertemplate="%{x}: median %{y:.1f} s (n = %{customdata[0]} maps, %{customdata[1]})"
                              "<extra></extra>")


def sweep_lines(sweep: pd.DataFrame) -> go.Figure:
    """Occlusion patch/stride sweep: every metric of the ``sweep`` view the table has, with CIs, and
    seconds per map (median and interquartile range, their clock and n: :func:`map_timing
    <cxrxai.reports.thesis.map_timing>`; thesis Fig. 3, Table S4); the cases each setting rests on in
    the title."""
    x = sweep["patch"].astype(str) + "/" + sweep["stride"].astype(str)
    fig = go.Figure()
    for k, metric in enumerate(m for m in metric_registry.metric_names(view="sweep") if m in sweep):
        err = None
        if f"{metric}_upper" in sweep:
            err = dict(type="data", symmetric=False, array=sweep[f"{metric}_upper"] - sweep[metric],
                       arrayminus=sweep[metric] - sweep[f"{metric}_lower"])
        n = sweep["cases_scored"] if "cases_scored" in sweep else sweep["maps"]
        fig.add_scatter(x=x, y=sweep[metric], name=metric_registry.label(metric), mode="lines+markers",
                        error_y=err, line_color=PALETTE[k % len(PALETTE)], customdata=n,
                        hovertemplate="%{x}: %{y:.3f} (n = %{customdata} cases)<extra></extra>")
    _seconds_bars(fig, x, sweep)
    cases = sweep["cases_scored"] if "cases_scored" in sweep else sweep["maps"]
    low, high = int(cases.min()), int(cases.max())
    fig.update_layout(
        title=f"Occlusion patch / stride (n = {high if low == high else f'{low}–{high}'} cases a setting; "
              "95 % CI over cases, none from fewer than 5)",
        xaxis_title="patch / stride (px)",
        yaxis=dict(title="metric", range=[0, 1]),
        yaxis2=dict(title=f"seconds per map ({_clocks(sweep)})", overlaying="y", side="right"),
        # below the plot: at the right it covered the top of the seconds axis
        **{**_LAYOUT, "legend": dict(orientation="h", yanchor="top", y=-0.22, x=0),
           "margin": {**_LAYOUT["margin"], "b": 60}},
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
    fig.update_layout(title=f"{y} vs {x} (n = {int(usable.sum())}{left_out})",
                      xaxis_title=metric_registry.label(x), yaxis_title=metric_registry.label(y),
                      dragmode="lasso", **_LAYOUT)
    return fig
