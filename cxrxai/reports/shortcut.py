"""Model or method? The planted shortcut (:mod:`cxrxai.metrics.shortcut`): how much each model of the
shortcut pair relies on the marker, and each explainer's mass on it under the shortcut model vs its
control. Both read the store's shortcut pair, whatever ``model_id``."""

from __future__ import annotations

import pandas as pd

from ..metrics import shortcut
from ..store import Store
from ._cases import need
from ._registry import report

__all__ = ["shortcut_explainers", "shortcut_reliance"]


@report("shortcut", "model or method: explainers' mass on a planted marker a model learned",
        needs_model=False)
def shortcut_explainers(store: Store, model_id: str, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Model or method? Per explainer, marker share under the shortcut model vs its control on the same
    marked cases (:mod:`cxrxai.metrics.shortcut`; the store's shortcut pair, whatever ``model_id``)."""
    rows = need(store.table("shortcut"), store, "planted-shortcut scores", "shortcut")
    return shortcut.shortcut_summary(rows, n_boot=n_boot, seed=seed)


@report("shortcut-reliance", "planted shortcut: probability with and without the marker", needs_model=False)
def shortcut_reliance(store: Store, model_id: str) -> pd.DataFrame:
    """How much each model of the shortcut pair uses the marker: probability with − without it."""
    return shortcut.reliance(need(store.table("shortcut"), store, "planted-shortcut scores", "shortcut"))
