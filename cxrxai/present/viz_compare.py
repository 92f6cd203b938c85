"""The model's curves and the model-comparison charts (DataFrames in, figures out; no Streamlit),
drawn by the pages and the audit dossier from the same frames: the ROC curve per finding, the
paired differences with their CIs (worse in red, better in green, after the family's correction)
and the two models' probabilities per case."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..reports.compare import metric_label
from ._style import LAYOUT as _LAYOUT
from ._style import PALETTE

__all__ = ["comparison_forest", "disagreement_scatter", "roc_curves"]

_VERDICT = {"worse": "#c0392b", "better": "#2e8b57", "no difference shown": "#7f8c8d"}


def _verdict(df: pd.DataFrame) -> pd.Series:
    verdict = np.where(df["worse"], "worse", np.where(df["better"], "better", "no difference shown"))
    return pd.Series(verdict, index=df.index)


def comparison_forest(cmp: pd.DataFrame, *, top: int = 25) -> go.Figure:
    """The ``top`` comparisons of a ``model-comparison`` frame (worse first, then better, then by p):
    new − old with its 95 % CI, one row each, coloured by its verdict after the family's correction;
    hover gives n, the test, p and the corrected p."""
    rows = cmp.assign(verdict=_verdict(cmp))
    rows = rows.sort_values(["worse", "better", "p"], ascending=[False, False, True]).head(top)
    rows = rows.iloc[::-1]  # the first row on top
    where = np.where(rows["grouping"] == "all", "all", rows["grouping"] + " " + rows["group"].astype(str))
    names = rows["label"] + " · " + rows["metric"].map(metric_label) + " · " + where
    fig = go.Figure()
    for verdict, colour in _VERDICT.items():
        part = rows["verdict"] == verdict
        if not part.any():
            continue
        r = rows[part]
        fig.add_trace(go.Scatter(
            x=r["diff"], y=names[part], mode="markers", name=verdict, marker=dict(color=colour, size=8),
            error_x=dict(type="data", symmetric=False, array=r["upper"] - r["diff"],
                         arrayminus=r["diff"] - r["lower"]),
            customdata=np.stack([r["n"], r["test"], r["p"], r["p_adjusted"]], axis=1),
            hovertemplate="%{y}<br>Δ %{x:.3f}<br>n = %{customdata[0]}<br>%{customdata[1]}<br>"
                          "p = %{customdata[2]:.3g}, corrected %{customdata[3]:.3g}<extra></extra>"))
    fig.add_vline(x=0, line=dict(color="#333", width=1))
    fig.update_layout(**{**_LAYOUT, "height": max(300, 22 * len(rows) + 120)},
                      title="New − old, 95% CI (verdict after the family's correction)",
                      xaxis_title="difference (new − old)", legend=dict(orientation="h", y=-0.15))
    return fig


def disagreement_scatter(cases: pd.DataFrame, label: str) -> go.Figure:
    """Each shared case of finding ``label``: the old model's probability against the new one's,
    positives and negatives apart; a point's customdata is (image id, finding) for the explorer."""
    part = cases[cases["label"] == label]
    fig = go.Figure()
    for k, (truth, name) in enumerate(((1, "positive"), (0, "negative"))):
        g = part[part["ground_truth"] == truth]
        fig.add_trace(go.Scatter(
            x=g["prob_old"], y=g["prob"], mode="markers", name=f"{name} (n = {len(g):,})",
            marker=dict(color=PALETTE[k], size=6, opacity=0.7),
            customdata=np.stack([g["image_id"], g["label"]], axis=1) if len(g) else None,
            hovertemplate="%{customdata[0]}<br>old %{x:.3f} → new %{y:.3f}<extra></extra>"))
    fig.add_shape(type="line", x0=0, y0=0, x1=1, y1=1, line=dict(color="#999", dash="dot"))
    fig.update_layout(**_LAYOUT, title=f"{label}: probability, old model → new model",
                      xaxis=dict(title="old model", range=[0, 1]),
                      yaxis=dict(title="new model", range=[0, 1]))
    return fig


def roc_curves(roc: pd.DataFrame, perf: pd.DataFrame | None = None) -> go.Figure:
    """One ROC curve per finding (``summaries.roc_table``), named with its AUROC and n when
    ``perf`` (``summaries.model_performance``) is given; the diagonal is chance."""
    auc = perf.set_index("label")["auroc"] if perf is not None and len(perf) else pd.Series(dtype=float)
    fig = go.Figure()
    for k, (label, g) in enumerate(roc.groupby("label", sort=True)):
        n = f"n = {int(g['n_positive'].iloc[0]):,} + {int(g['n_negative'].iloc[0]):,}"
        name = f"{label} ({auc[label]:.3f}, {n})" if label in auc.index else f"{label} ({n})"
        fig.add_trace(go.Scatter(x=g["fpr"], y=g["tpr"], mode="lines", name=name,
                                 line=dict(color=PALETTE[k % len(PALETTE)], width=1.6)))
    fig.add_shape(type="line", x0=0, y0=0, x1=1, y1=1, line=dict(color="#999", dash="dot"))
    fig.update_layout(**{**_LAYOUT, "height": 440},
                      title="ROC curve per finding (AUROC, positives + negatives)",
                      xaxis=dict(title="false positive rate", range=[0, 1]),
                      yaxis=dict(title="true positive rate", range=[0, 1]))
    return fig
