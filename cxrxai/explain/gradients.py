"""Gradient explainers, through Captum where it has the method.

Each returns the raw (N, C, H, W) attribution in model-input space; :mod:`cxrxai.explain`
reduces channels (``reduce=``) to the 2-D map.

* ``saliency`` — the vanilla gradient ∂S/∂x (Simonyan et al. 2014), signed (Captum's
  ``Saliency`` with ``abs=False``).
* ``smoothgrad`` — the gradient averaged over noisy copies (Smilkov et al. 2017): Captum
  ``NoiseTunnel``; ``nt_type="smoothgrad_sq"`` squares before averaging, as the PAIR library's
  ``magnitude=True`` that Arun et al. used (25 samples, σ = 0.15 · (max − min)).
* ``ig`` — Integrated Gradients (Sundararajan et al. 2017): Captum, ``steps`` (default 50,
  Gauss–Legendre; Arun et al. used 25 Riemann steps), black baseline by default (the thesis);
  ``nt_samples > 0`` gives Smooth IG / the thesis's "IG + SmoothGrad".
* ``gradientshap`` — expected gradients over a baseline distribution (Lundberg & Lee 2017;
  Erion et al. 2021): Captum ``GradientShap`` with its defaults (5 samples, no noise), black
  baseline (the thesis used the defaults with a black baseline).
* ``guided_backprop`` (Springenberg et al. 2015) — Captum, on a copy of the model whose ReLUs
  are not in place; DenseNet's functional ReLU after ``norm5`` is not guided (Captum hooks ReLU
  *modules* only).
* ``guided_gradcam`` — guided backprop × Grad-CAM upsampled bilinearly (Selvaraju et al.).
"""

from __future__ import annotations

import warnings

import torch
from captum.attr import (
    GradientShap,
    GuidedBackprop,
    IntegratedGradients,
    LayerAttribution,
    NoiseTunnel,
    Saliency,
)

from ..errors import ExplainerError, UnknownNameError
from ._common import baseline_tensor, isolated_rng, layer_of, no_inplace_copy, reduce_channels, score_fn
from .cam import gradcam
from .params import NT_TYPES

__all__ = [
    "gradientshap",
    "gradientshap_run",
    "guided_backprop",
    "guided_backprop_run",
    "guided_gradcam",
    "guided_gradcam_run",
    "ig_run",
    "integrated_gradients",
    "pixel_run",
    "saliency",
    "saliency_run",
    "smoothgrad",
    "smoothgrad_run",
]


def _prep(images: torch.Tensor) -> torch.Tensor:
    if torch.is_inference_mode_enabled():
        raise ExplainerError("gradient explainers cannot run inside torch.inference_mode()")
    return images.detach().clone().requires_grad_(True)


def _noise(
    method, x, targets, *, nt_samples: int, noise_level: float, nt_type: str, seed, batch: int | None, **kw
):
    if nt_type not in NT_TYPES:
        raise UnknownNameError("noise tunnel type", nt_type, NT_TYPES)
    if nt_samples < 1:
        raise ExplainerError(f"nt_samples must be ≥ 1, got {nt_samples}")
    # σ as a fraction of the input range, like the PAIR library's stdev_spread.
    stdevs = float(noise_level) * float((x.max() - x.min()).detach())
    with isolated_rng(seed):
        return NoiseTunnel(method).attribute(x, nt_type=nt_type, nt_samples=int(nt_samples), stdevs=stdevs,
                                             nt_samples_batch_size=batch, target=targets, **kw)


def saliency(module, images, targets, *, output: str = "logit") -> torch.Tensor:
    x = _prep(images)
    with torch.enable_grad():
        return Saliency(score_fn(module, output)).attribute(x, target=targets, abs=False).detach()


def smoothgrad(
    module,
    images,
    targets,
    *,
    output: str = "logit",
    nt_samples: int = 25,
    noise_level: float = 0.15,
    nt_type: str = "smoothgrad",
    seed: int | None = 0,
    batch_size: int | None = None,
) -> torch.Tensor:
    x = _prep(images)
    with torch.enable_grad():
        return _noise(
            Saliency(score_fn(module, output)),
            x,
            targets,
            nt_samples=nt_samples,
            noise_level=noise_level,
            nt_type=nt_type,
            seed=seed,
            batch=batch_size,
            abs=False,
        ).detach()


def integrated_gradients(
    module,
    images,
    targets,
    baseline: torch.Tensor,
    *,
    output: str = "logit",
    steps: int = 50,
    integration: str = "gausslegendre",
    internal_batch_size: int | None = 16,
    nt_samples: int = 0,
    noise_level: float = 0.15,
    nt_type: str = "smoothgrad",
    seed: int | None = 0,
) -> torch.Tensor:
    if steps < 1:
        raise ExplainerError(f"steps must be ≥ 1, got {steps}")
    x = _prep(images)
    ig = IntegratedGradients(score_fn(module, output))
    kw = dict(baselines=baseline.expand_as(x), n_steps=int(steps), method=integration,
              internal_batch_size=internal_batch_size)
    with torch.enable_grad():
        if nt_samples:
            return _noise(ig, x, targets, nt_samples=nt_samples, noise_level=noise_level, nt_type=nt_type,
                          seed=seed, batch=None, **kw).detach()
        return ig.attribute(x, target=targets, **kw).detach()


def gradientshap(
    module,
    images,
    targets,
    baseline: torch.Tensor,
    *,
    output: str = "logit",
    n_samples: int = 5,
    stdevs: float = 0.0,
    seed: int | None = 0,
) -> torch.Tensor:
    x = _prep(images)
    baselines = (
        baseline
        if baseline.shape[0] > 1 and baseline.shape[1:] == x.shape[1:]
        else baseline.expand(1, *x.shape[1:])
    )
    with torch.enable_grad(), isolated_rng(seed):
        return (
            GradientShap(score_fn(module, output))
            .attribute(
                x,
                baselines=baselines.contiguous(),
                target=targets,
                n_samples=int(n_samples),
                stdevs=float(stdevs),
            )
            .detach()
        )


def guided_backprop(module, images, targets, *, output: str = "logit") -> torch.Tensor:
    x = _prep(images)
    copy_ = no_inplace_copy(module)
    model = copy_ if output == "logit" else torch.nn.Sequential(copy_, torch.nn.Sigmoid())
    with torch.enable_grad(), warnings.catch_warnings():
        # Captum's notice, expected
        warnings.filterwarnings("ignore", message="Setting backward hooks on ReLU")
        return GuidedBackprop(model).attribute(x, target=targets).detach()


def guided_gradcam(module, layer_name: str, images, targets, *, output: str = "logit") -> torch.Tensor:
    """Guided backprop × (Grad-CAM with ReLU, upsampled bilinearly to the input)."""
    gbp = guided_backprop(module, images, targets, output=output)
    copy_ = no_inplace_copy(module)
    cam = gradcam(copy_, copy_.get_submodule(layer_name), images, targets, output=output, relu=True)
    up = LayerAttribution.interpolate(cam[:, None], tuple(images.shape[-2:]), interpolate_mode="bilinear")
    return gbp * up


def pixel_run(fn, *, needs_baseline: bool = False):
    """An input-space attribution function as a registry ``run``: its (N, C, H, W) attribution
    reduced over channels (``reduce``), the ``baseline`` passed as a tensor where it takes one."""

    def run(module, spec, images, targets, *, reduce="sum", baseline="black", **kw):
        args = (baseline_tensor(baseline, images, spec),) if needs_baseline else ()
        return reduce_channels(fn(module, images, targets, *args, **kw), reduce)

    return run


#: The computations the pixel methods' modules register (by name: :func:`~.registry.deferred`).
saliency_run = pixel_run(saliency)
smoothgrad_run = pixel_run(smoothgrad)
ig_run = pixel_run(integrated_gradients, needs_baseline=True)
gradientshap_run = pixel_run(gradientshap, needs_baseline=True)
guided_backprop_run = pixel_run(guided_backprop)


def guided_gradcam_run(module, spec, images, targets, *, layer=None, output="logit", reduce="sum"):
    """Guided Grad-CAM as :mod:`.guided_gradcam` registers it: the CAM layer resolved from the
    parameter or the model card, channels reduced."""
    resolved = layer_of(module, layer, spec)
    name = next(n for n, m in module.named_modules() if m is resolved)
    return reduce_channels(guided_gradcam(module, name, images, targets, output=output), reduce)
