"""Guided Grad-CAM (Selvaraju et al. 2017): guided backprop × the upsampled Grad-CAM."""

from __future__ import annotations

from .params import LAYER, OUTPUT, REDUCE
from .registry import deferred, explainer

__all__ = ["run"]

run = explainer(
    "guided_gradcam",
    "pixel",
    (LAYER, OUTPUT, REDUCE),
    "Selvaraju et al., Grad-CAM, ICCV 2017 (guided Grad-CAM), doi:10.1109/ICCV.2017.74",
    label="Guided Grad-CAM",
    layer=True,
    cost="costly",
)(deferred("cxrxai.explain.gradients", "guided_gradcam_run"))
