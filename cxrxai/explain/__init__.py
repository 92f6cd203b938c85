"""One API over every saliency method of the three papers.

>>> m = explain(model, image, target, "gradcam")          # doctest: +SKIP
>>> heat = postprocess.to_image(m, (224, 224))             # doctest: +SKIP

``explain(model, image, target, method, **params) -> np.ndarray`` returns the raw, signed 2-D
map at the method's native resolution: the CAM layer's grid for ``gradcam``/``gradcam++``,
the input grid for gradient methods, ``occlusion`` (per pixel, Captum's mean over covering
windows) and ``xrai``. ``image`` is a preprocessed float tensor (1, C, H, W); ``target`` is an
output index. Post-processing (upsampling, min–max, ReLU, |·|, percentile clip, ensembles) is
in :mod:`cxrxai.explain.postprocess`.

Common parameters: ``output`` — explain the ``"logit"`` (default; the spec's
``explained_output`` when the model is a :class:`~cxrxai.models.registry.LoadedModel`) or the
``"probability"``; ``reduce`` — channel reduction of input-space methods (``"sum"``,
``"abs_sum"``, ``"mean"``, ``"max_abs"``); ``baseline`` — ``"black"`` (grey level 0, the
papers'), ``"white"``, ``"zero"`` or a tensor such as :func:`mean_image`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import ExplainerError, UnknownNameError
from ..models.registry import LoadedModel
from ..models.spec import preprocess
from . import postprocess
from ._common import (
    as_module,
    baseline_tensor,
    check_image,
    check_target,
    layer_of,
    n_outputs,
    reduce_channels,
)
from .cam import gradcam, gradcam_pp
from .gradients import (
    gradientshap,
    guided_backprop,
    guided_gradcam,
    integrated_gradients,
    saliency,
    smoothgrad,
)
from .occlusion import Cancelled, OcclusionGrid, occlusion_grid, occlusion_progressive, rebuild_map
from .xrai import xrai_map, xrai_segments

__all__ = [
    "METHODS",
    "Cancelled",
    "Method",
    "OcclusionGrid",
    "average_mask",
    "explain",
    "explain_batch",
    "explain_ensemble",
    "mean_image",
    "method_names",
    "occlusion_grid",
    "occlusion_progressive",
    "postprocess",
    "random_map",
    "rebuild_map",
]


@dataclass(frozen=True)
class Method:
    """A registered explainer: native map kind, defaults, and its reference."""

    name: str
    kind: str  # "cam" (layer grid) | "pixel" (input grid) | "occlusion_grid"
    defaults: dict
    reference: str
    stochastic: bool = False
    run: Callable = field(repr=False, default=None)


def _cam(fn):
    def run(module, spec, images, targets, *, layer=None, output="logit", relu=False):
        return fn(module, layer_of(module, layer, spec), images, targets, output=output, relu=relu)

    return run


def _pixel(fn, *, needs_baseline=False):
    def run(module, spec, images, targets, *, reduce="sum", baseline="black", **kw):
        args = (baseline_tensor(baseline, images, spec),) if needs_baseline else ()
        return reduce_channels(fn(module, images, targets, *args, **kw), reduce)

    return run


def _guided_gradcam(module, spec, images, targets, *, layer=None, output="logit", reduce="sum"):
    resolved = layer_of(module, layer, spec)
    name = next(n for n, m in module.named_modules() if m is resolved)
    return reduce_channels(guided_gradcam(module, name, images, targets, output=output), reduce)


def _occlusion(module, spec, images, targets, *, patch=32, stride=16, baseline="black", output="logit",
               batch_size=None, precision="fp32", engine="auto", progress=None, cancel=None):
    maps = []
    for i in range(images.shape[0]):
        img = images[i:i + 1]
        grid = occlusion_grid(module, img, int(targets[i]), baseline_tensor(baseline, img, spec), patch=patch,
                              stride=stride, output=output, batch_size=batch_size, precision=precision,
                              progress=progress, cancel=cancel, engine=engine,
                              baseline_name=baseline if isinstance(baseline, str) else "custom")
        maps.append(torch.from_numpy(grid.to_map()))
    return torch.stack(maps)


def _xrai(module, spec, images, targets, *, steps=50, output="logit", internal_batch_size=16,
          scales=(50, 100, 150, 250, 500, 1200), sigma=0.8, min_size=None, dilation_radius=5):
    out = []
    for i in range(images.shape[0]):
        img, tgt = images[i:i + 1], targets[i:i + 1]
        attr = sum(
            integrated_gradients(module, img, tgt, baseline_tensor(b, img, spec), output=output, steps=steps,
                                 internal_batch_size=internal_batch_size).sum(1)[0]
            for b in ("black", "white")
        ) / 2
        grey = img[0].mean(0).cpu().numpy()
        grey = (grey - grey.min()) / max(float(grey.max() - grey.min()), 1e-12)
        segs = xrai_segments(grey, scales=scales, sigma=sigma, min_size=min_size, dilation_radius=dilation_radius)
        out.append(torch.from_numpy(xrai_map(attr.cpu().numpy(), segs)))
    return torch.stack(out)


METHODS: dict[str, Method] = {m.name: m for m in [
    Method("gradcam", "cam", dict(layer=None, output="logit", relu=False),
           "Selvaraju et al., Grad-CAM, ICCV 2017", run=_cam(gradcam)),
    Method("gradcam++", "cam", dict(layer=None, output="logit", relu=False),
           "Chattopadhay et al., Grad-CAM++, WACV 2018 (eq. 19)", run=_cam(gradcam_pp)),
    Method("saliency", "pixel", dict(output="logit", reduce="sum"),
           "Simonyan et al., Deep Inside Convolutional Networks, 2014", run=_pixel(saliency)),
    Method("smoothgrad", "pixel", dict(output="logit", reduce="sum", nt_samples=25, noise_level=0.15,
                                      nt_type="smoothgrad", seed=0),
           "Smilkov et al., SmoothGrad, 2017", stochastic=True, run=_pixel(smoothgrad)),
    Method("ig", "pixel", dict(output="logit", reduce="sum", baseline="black", steps=50,
                              integration="gausslegendre", internal_batch_size=16, nt_samples=0,
                              noise_level=0.15, nt_type="smoothgrad", seed=0),
           "Sundararajan et al., Axiomatic Attribution for Deep Networks, ICML 2017",
           run=_pixel(integrated_gradients, needs_baseline=True)),
    Method("gradientshap", "pixel", dict(output="logit", reduce="sum", baseline="black", n_samples=5,
                                        stdevs=0.0, seed=0),
           "Lundberg & Lee, SHAP, NeurIPS 2017; Captum GradientShap", stochastic=True,
           run=_pixel(gradientshap, needs_baseline=True)),
    Method("guided_backprop", "pixel", dict(output="logit", reduce="sum"),
           "Springenberg et al., Striving for Simplicity, 2015", run=_pixel(guided_backprop)),
    Method("guided_gradcam", "pixel", dict(layer=None, output="logit", reduce="sum"),
           "Selvaraju et al., Grad-CAM, ICCV 2017 (guided Grad-CAM)", run=_guided_gradcam),
    Method("occlusion", "occlusion_grid", dict(patch=32, stride=16, baseline="black", output="logit",
                                               batch_size=None, precision="fp32", engine="auto", progress=None,
                                               cancel=None),
           "Zeiler & Fergus, ECCV 2014; Captum Occlusion", run=_occlusion),
    Method("xrai", "pixel", dict(steps=50, output="logit", internal_batch_size=16,
                                 scales=(50, 100, 150, 250, 500, 1200), sigma=0.8, min_size=None,
                                 dilation_radius=5),
           "Kapishnikov et al., XRAI, ICCV 2019", run=_xrai),
]}


def method_names() -> list[str]:
    return list(METHODS)


def _resolve(model, method: str, params: dict):
    if method not in METHODS:
        raise UnknownNameError("explainer", method, METHODS)
    meth = METHODS[method]
    unknown = set(params) - set(meth.defaults)
    if unknown:
        raise ExplainerError(f"{method} has no parameter(s) {sorted(unknown)}; allowed: {sorted(meth.defaults)}")
    module, spec = as_module(model)
    kwargs = dict(meth.defaults)
    if spec is not None and "output" in meth.defaults and "output" not in params:
        kwargs["output"] = spec.explained_output
    kwargs.update(params)
    return meth, module, spec, kwargs


def explain_batch(model, images: torch.Tensor, targets, method: str, **params) -> np.ndarray:
    """Maps for a batch: ``targets`` is one index for all images or one per image → (N, h, w)."""
    meth, module, spec, kwargs = _resolve(model, method, params)
    images = check_image(images)
    n_out = n_outputs(module, images)
    tgt = [targets] * images.shape[0] if np.ndim(targets) == 0 else list(targets)
    if len(tgt) != images.shape[0]:
        raise ExplainerError(f"got {len(tgt)} targets for {images.shape[0]} images")
    t = torch.tensor([check_target(x, n_out, spec) for x in tgt], device=images.device)
    out = meth.run(module, spec, images, t, **kwargs)
    return out.detach().float().cpu().numpy().astype(np.float32)


def explain(model, image: torch.Tensor, target: int, method: str, **params) -> np.ndarray:
    """The raw 2-D map of one image (see the module docstring)."""
    image = check_image(image)
    if image.shape[0] != 1:
        raise ExplainerError(f"explain() takes one image (1, C, H, W); use explain_batch for {image.shape[0]}")
    return explain_batch(model, image, [target], method, **params)[0]


def explain_ensemble(models: Sequence, image: torch.Tensor, target: int, method: str, **params) -> np.ndarray:
    """Mean of the members' maps (Saporta et al.'s ensemble); members must agree on map shape."""
    return postprocess.ensemble([explain(m, image, target, method, **params) for m in models])


def mean_image(images: np.ndarray, model: LoadedModel) -> torch.Tensor:
    """Mean of uint8 grey images, preprocessed for ``model`` — a "mean image" baseline (thesis)."""
    arr = np.asarray(images)
    if arr.ndim != 3 or len(arr) == 0:
        raise ExplainerError(f"mean_image needs a non-empty (N, H, W) stack, got {arr.shape}")
    mean = arr.astype(np.float64).mean(0) / 255.0
    return preprocess(mean.astype(np.float32), model.spec).to(model.device)


def average_mask(masks: Sequence[np.ndarray]) -> np.ndarray:
    """Arun et al.'s low baseline: the pixel-wise mean of ground-truth masks (training split)."""
    arrs = [np.asarray(m, np.float32) for m in masks]
    if not arrs:
        raise ExplainerError("average_mask needs at least one mask")
    if len({a.shape for a in arrs}) != 1:
        raise ExplainerError("masks differ in shape; resample them to one size first")
    return np.mean(arrs, axis=0)


def random_map(shape: tuple[int, int], *, seed: int = 0) -> np.ndarray:
    """A uniform random map — the chance-level baseline scored like any explainer."""
    return np.random.default_rng(seed).random(shape, dtype=np.float32)
