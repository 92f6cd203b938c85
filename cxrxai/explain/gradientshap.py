"""GradientSHAP (Lundberg & Lee 2017): expected gradients over random baselines (Captum GradientShap)."""

from __future__ import annotations

from .params import BASELINE, OUTPUT, REDUCE, SEED
from .registry import Param, deferred, explainer

__all__ = ["run"]

N_SAMPLES = Param(
    "n_samples",
    5,
    int,
    "random baselines × points per map",
    range=(1, 10_000),
    control=(5, 10, 20, 50),
    label="Samples",
)

run = explainer(
    "gradientshap",
    "pixel",
    (OUTPUT, REDUCE, BASELINE, N_SAMPLES,
     Param("stdevs", 0.0, float, "noise added to each sample", range=(0.0, 10.0)), SEED),
    "Lundberg & Lee, SHAP, NeurIPS 2017, arXiv:1705.07874; Captum GradientShap",
    label="GradientSHAP",
    stochastic=True,
    cost="costly",
    plan_per_label=4,
)(deferred("cxrxai.explain.gradients", "gradientshap_run"))
