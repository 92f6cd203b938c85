"""Guided Grad-CAM (Selvaraju et al. 2017): guided backprop × the upsampled Grad-CAM."""

from __future__ import annotations

from ._common import layer_of, reduce_channels
from .gradients import guided_gradcam
from .params import LAYER, OUTPUT, REDUCE
from .registry import explainer

__all__ = ["run"]


@explainer(
    "guided_gradcam",
    "pixel",
    (LAYER, OUTPUT, REDUCE),
    "Selvaraju et al., Grad-CAM, ICCV 2017 (guided Grad-CAM), doi:10.1109/ICCV.2017.74",
    label="Guided Grad-CAM",
    layer=True,
    cost="costly",
)
def run(module, spec, images, targets, *, layer=None, output="logit", reduce="sum"):
    resolved = layer_of(module, layer, spec)
    name = next(n for n, m in module.named_modules() if m is resolved)
    return reduce_channels(guided_gradcam(module, name, images, targets, output=output), reduce)
