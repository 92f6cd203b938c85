"""Integrated Gradients (Sundararajan et al. 2017) through Captum; ``nt_samples > 0`` is Smooth IG."""

from __future__ import annotations

from .params import BASELINE, INTERNAL_BATCH, NOISE, OUTPUT, REDUCE, SEED, STEPS, batches
from .registry import Param, deferred, explainer

__all__ = ["INTEGRATIONS", "run"]

INTEGRATIONS = ("gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid")

run = explainer(
    "ig",
    "pixel",
    (
        OUTPUT,
        REDUCE,
        BASELINE,
        STEPS,
        Param("integration", "gausslegendre", str, "quadrature rule along the path", choices=INTEGRATIONS),
        INTERNAL_BATCH,
        Param("nt_samples", 0, int, "noise-tunnel copies (0: plain IG)", range=(0, 10_000)),
        *NOISE,
        SEED,
    ),
    "Sundararajan et al., Axiomatic Attribution for Deep Networks, ICML 2017, arXiv:1703.01365",
    label="Integrated Gradients",
    cost="costly",
    plan_per_label=1,
    passes=lambda p: batches(p) * max(1, p["nt_samples"]),
    unit="integration batches",
)(deferred("cxrxai.explain.gradients", "ig_run"))
