"""What every chart of the app shares: the layout and the palette."""

from __future__ import annotations

__all__ = ["LAYOUT", "PALETTE"]

LAYOUT = dict(margin=dict(l=10, r=10, t=40, b=10), height=380, template="plotly_white")
PALETTE = ["#3b6ea5", "#d1603d", "#5a9e6f", "#8c6bb1", "#c4a000", "#4d4d4d", "#e377c2", "#17becf"]
