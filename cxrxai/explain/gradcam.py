"""Grad-CAM (Selvaraju et al., ICCV 2017): the CAM base (:mod:`.cam`) with mean-gradient weights."""

from __future__ import annotations

from .params import LAYER, OUTPUT, RELU
from .registry import deferred, explainer

__all__ = ["run"]

run = explainer(
    "gradcam",
    "cam",
    (LAYER, OUTPUT, RELU),
    "Selvaraju et al., Grad-CAM, ICCV 2017, doi:10.1109/ICCV.2017.74",
    label="Grad-CAM",
    layer=True,
    all_labels=deferred("cxrxai.explain.cam", "gradcam_all_labels"),
)(deferred("cxrxai.explain.cam", "gradcam_run"))
