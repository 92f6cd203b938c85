"""The trust, fidelity and shortcut charts (DataFrames in, figures out; no Streamlit): cascading
randomization and similarity (Arun et al.), deletion/insertion curves and AUDCdiff (thesis §2.4),
and the planted shortcut's marker share."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..errors import UnknownNameError
from ..stats import MIN_CI_N
from ._style import LAYOUT as _LAYOUT
from ._style import PALETTE

__all__ = ["PAIRED_MEAN", "paired_lines", "perturbation_lines", "randomization_lines", "shortcut_differences",
           "similarity_boxes"]


def randomization_lines(curves: pd.DataFrame, thresholds: pd.Series) -> go.Figure:
    """Mean SSIM to the original map along cascading randomization, per method (its n of images in
    the legend), with each method's degradation threshold dashed (Arun et al. Fig. 3)."""
    fig = go.Figure()
    for k, (method, g) in enumerate(curves.groupby("method", sort=True)):
        color = PALETTE[k % len(PALETTE)]
        sd = g["std"].where(g["count"] >= MIN_CI_N)  # no spread drawn from fewer than 5 images
        low, high = int(g["count"].min()), int(g["count"].max())
        n = f"n = {high}" if low == high else f"n = {low}–{high}"
        fig.add_scatter(x=g["step"], y=g["mean"], name=f"{method} ({n} images)", mode="lines+markers",
                        line_color=color,
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
    fig.update_layout(showlegend=True)  # the legend holds n: shown for one kind alone too
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
