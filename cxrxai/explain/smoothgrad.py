"""SmoothGrad (Smilkov et al. 2017): the gradient averaged over noisy copies (Captum NoiseTunnel)."""

from __future__ import annotations

from .params import NOISE, OUTPUT, REDUCE, SEED
from .registry import Param, deferred, explainer

__all__ = ["run"]

NT_SAMPLES = Param(
    "nt_samples",
    25,
    int,
    "noisy copies averaged",
    range=(1, 10_000),
    control=(5, 10, 25, 50),
    label="Noisy samples",
)

run = explainer(
    "smoothgrad",
    "pixel",
    (OUTPUT, REDUCE, NT_SAMPLES, *NOISE, SEED),
    "Smilkov et al., SmoothGrad, 2017, arXiv:1706.03825",
    label="SmoothGrad",
    stochastic=True,
    cost="costly",
)(deferred("cxrxai.explain.gradients", "smoothgrad_run"))
