"""Arun et al. (Radiol. Artif. Intell. 2021), "Assessing the trustworthiness of saliency maps":
the PASS/FAIL table (utility, randomization, repeatability, reproducibility; Table 2), the
cascading-randomization curves (Fig. 3), the degradation thresholds and the similarity scores (Fig. 4)."""

from __future__ import annotations

import pandas as pd

from ..errors import StoreError
from ..metrics import trust
from ..store import Store, main_rows
from ..summaries import comparison_hint
from ._cases import need, require_metrics
from ._registry import report

__all__ = ["degradation_thresholds", "randomization_curves", "similarity_scores", "trust_table"]


def _utility(store: Store, model_id: str, methods, metric: str) -> list[pd.DataFrame]:
    """Per method, its ``metric`` on each positive case beside the average mask's (one setting per
    method: its default)."""
    loc = store.table("localization", model_id=model_id, reader="gt")
    if loc.empty:
        return []
    require_metrics(loc, store, model_id, metric)
    expl = main_rows(loc[loc.source == "explainer"], store.default_settings(model_id))
    loc = loc[loc.gt_positive]
    avg = loc[(loc.source == "baseline") & (loc.method == "average_mask")].set_index(["image_id", "label"])
    rows = []
    for method in methods:
        m = expl[expl.gt_positive & (expl.method == method)].set_index(["image_id", "label"])[metric]
        both = pd.concat({"v": m, "b": avg[metric]}, axis=1).dropna()
        rows.append(
            pd.DataFrame({"method": method, "criterion": "utility", "value": both.v, "baseline": both.b})
        )
    return rows


@report("trust", "Arun et al. Table 2: PASS/FAIL", view="utility")
def trust_table(
    store: Store, model_id: str, *, data_range: float = 1.0, alpha: float = 0.005, metric: str = "pr_auc"
) -> pd.DataFrame:
    """Arun et al. Table 2: PASS/FAIL for utility (``metric``, a metric of the ``utility`` view — the
    paper's AUPRC by default — vs the average mask), randomization, repeatability and
    reproducibility, with the means and p-values behind each verdict."""
    t = need(store.table("trust", model_id=model_id), store, "trust scores", "trust", model_id)
    t = t[t.data_range == data_range]
    thresholds = t[t.kind == "threshold"].set_index("method")["ssim"]
    last = t[t.kind == "randomization"].step_index.max()
    rand = t[(t.kind == "randomization") & (t.step_index == last)]
    rows = [pd.DataFrame({"method": rand.method, "criterion": "randomization", "value": rand.ssim,
                          "baseline": rand.method.map(thresholds)})]
    for kind in ("repeatability", "reproducibility"):
        k = t[t.kind == kind]
        rows.append(pd.DataFrame({"method": k.method, "criterion": kind, "value": k.ssim, "baseline": 0.5}))
    rows += _utility(store, model_id, rand.method.unique(), metric)
    return trust.pass_fail(pd.concat(rows, ignore_index=True), alpha=alpha)


@report("randomization", "Arun et al. Fig. 3: SSIM along cascading randomization")
def randomization_curves(store: Store, model_id: str, *, data_range: float = 1.0) -> pd.DataFrame:
    """Mean SSIM to the original map per method and randomization step (Arun Fig. 3)."""
    t = need(store.table("trust", model_id=model_id), store, "trust scores", "trust", model_id)
    t = t[(t.kind == "randomization") & (t.data_range == data_range)]
    return (t.groupby(["method", "step_index", "step"]).ssim.agg(["mean", "std", "count"]).reset_index()
            .sort_values(["method", "step_index"]))


def degradation_thresholds(store: Store, model_id: str, *, data_range: float = 1.0) -> pd.DataFrame:
    """Arun et al.'s degradation threshold (SSIM between maps of random image pairs) per method."""
    t = store.table("trust", model_id=model_id, kind="threshold")
    return t[t.data_range == data_range][["method", "ssim"]].reset_index(drop=True) if not t.empty else t


@report("similarity", "Arun et al. Fig. 4: repeatability / reproducibility SSIM")
def similarity_scores(store: Store, model_id: str, *, data_range: float = 1.0) -> pd.DataFrame:
    """Repeatability (a second training seed) and reproducibility (another architecture): SSIM of
    the two models' maps per case and method (Arun et al. Fig. 4)."""
    t = need(store.table("trust", model_id=model_id), store, "trust scores", "trust", model_id)
    t = t[t.kind.isin(["repeatability", "reproducibility"]) & (t.data_range == data_range)]
    if t.empty:
        raise StoreError(f"model {model_id!r} has no repeatability/reproducibility scores (table trust): "
                         f"{comparison_hint(store, model_id)}")
    return t.reset_index(drop=True)
