"""Grad-CAM++ (Chattopadhay et al., WACV 2018, eq. 19): the CAM base (:mod:`.cam`) with
second-order weights."""

from __future__ import annotations

from .cam import cam_all_labels, cam_run, gradcam_pp
from .params import LAYER, OUTPUT, RELU
from .registry import explainer

__all__ = ["run"]

run = explainer(
    "gradcam++",
    "cam",
    (LAYER, OUTPUT, RELU),
    "Chattopadhay et al., Grad-CAM++, WACV 2018 (eq. 19), doi:10.1109/WACV.2018.00097",
    label="Grad-CAM++",
    layer=True,
    all_labels=cam_all_labels(2),
)(cam_run(gradcam_pp))
