"""Guided backpropagation (Springenberg et al. 2015) through Captum, channels reduced."""

from __future__ import annotations

from .params import OUTPUT, REDUCE
from .registry import deferred, explainer

__all__ = ["run"]

run = explainer(
    "guided_backprop",
    "pixel",
    (OUTPUT, REDUCE),
    "Springenberg et al., Striving for Simplicity, ICLR workshop 2015, arXiv:1412.6806",
    label="Guided backprop",
    cost="costly",
)(deferred("cxrxai.explain.gradients", "guided_backprop_run"))
