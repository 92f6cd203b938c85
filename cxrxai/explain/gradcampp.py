"""Grad-CAM++ (Chattopadhay et al., WACV 2018, eq. 19): the CAM base (:mod:`.cam`) with
second-order weights."""

from __future__ import annotations

from .params import LAYER, OUTPUT, RELU
from .registry import deferred, explainer

__all__ = ["run"]

run = explainer(
    "gradcam++",
    "cam",
    (LAYER, OUTPUT, RELU),
    "Chattopadhay et al., Grad-CAM++, WACV 2018 (eq. 19), doi:10.1109/WACV.2018.00097",
    label="Grad-CAM++",
    layer=True,
    all_labels=deferred("cxrxai.explain.cam", "gradcam_pp_all_labels"),
)(deferred("cxrxai.explain.cam", "gradcam_pp_run"))
