"""The model card's numbers: AUROC per label with its bootstrap CI, TPR and FPR at the stored
thresholds (:func:`cxrxai.summaries.model_performance`)."""

from __future__ import annotations

import pandas as pd

from ..store import Store
from ..summaries import model_performance, prediction_table
from ._registry import report

__all__ = ["performance"]


@report("performance", "AUROC per label with 95% CI (model card)")
def performance(store: Store, model_id: str, *, split: str | None = None) -> pd.DataFrame:
    """AUROC per label with bootstrap CI, TPR/FPR at the stored thresholds (``split``: as in
    :func:`cxrxai.reports.subgroup_tpr`)."""
    prediction_table(store, model_id, split=split)  # a clear error when there is nothing to evaluate
    return model_performance(store, model_id, split=split)
