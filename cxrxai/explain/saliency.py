"""Vanilla gradient saliency (Simonyan et al. 2014), signed, channels reduced."""

from __future__ import annotations

from .params import OUTPUT, REDUCE
from .registry import deferred, explainer

__all__ = ["run"]

run = explainer(
    "saliency",
    "pixel",
    (OUTPUT, REDUCE),
    "Simonyan et al., Deep Inside Convolutional Networks, ICLR workshop 2014, arXiv:1312.6034",
    label="Saliency",
    cost="costly",
)(deferred("cxrxai.explain.gradients", "saliency_run"))
