"""Plumbing shared by the explainers: the explained score, baselines, hooks, RNG isolation."""

from __future__ import annotations

import copy
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import ExplainerError, UnknownNameError, shown
from ..models.registry import LoadedModel
from ..models.spec import OUTPUTS, ModelSpec
from .params import BASELINES, CHANNEL_REDUCTIONS

__all__ = [
    "Target",
    "as_module",
    "baseline_tensor",
    "check_image",
    "check_target",
    "isolated_rng",
    "layer_of",
    "no_inplace_copy",
    "reduce_channels",
    "runs_stock_code",
    "score_fn",
]



@dataclass(frozen=True)
class Target:
    """Which score is explained: output ``index`` as a ``logit`` or sigmoid ``probability``."""

    index: int
    output: str = "logit"


def as_module(model: torch.nn.Module | LoadedModel) -> tuple[torch.nn.Module, ModelSpec | None]:
    if isinstance(model, LoadedModel):
        return model.module, model.spec
    if isinstance(model, torch.nn.Module):
        return model, None
    raise ExplainerError(f"model must be a torch.nn.Module or LoadedModel, got {type(model).__name__}")


def score_fn(module: torch.nn.Module, output: str):
    """``f(x) -> (N, n_outputs)``: logits, or their sigmoid for ``output="probability"``."""
    if output not in OUTPUTS:
        raise UnknownNameError("explained output", output, OUTPUTS)
    if output == "logit":
        return module

    def prob(x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(module(x))

    return prob


def check_image(image) -> torch.Tensor:
    if not isinstance(image, torch.Tensor):
        raise ExplainerError(
            f"image must be a preprocessed float tensor (1, C, H, W), got {type(image).__name__}"
        )
    if image.ndim != 4 or not image.is_floating_point():
        raise ExplainerError(
            f"image must be a float tensor (N, C, H, W), got {tuple(image.shape)} {image.dtype}"
        )
    if not torch.isfinite(image).all():
        raise ExplainerError("image contains NaN or infinite values")
    return image


def check_target(target: int, n_outputs: int, spec: ModelSpec | None) -> int:
    if (
        isinstance(target, bool)
        or not isinstance(target, (int, np.integer))
        or not 0 <= int(target) < n_outputs
    ):
        names = f" ({', '.join(f'{i}={lab}' for i, lab in enumerate(spec.labels))})" if spec else ""
        raise ExplainerError(f"target {shown(target)} is out of range; allowed: 0..{n_outputs - 1}{names}")
    return int(target)


_N_OUTPUTS: weakref.WeakKeyDictionary[torch.nn.Module, int] = weakref.WeakKeyDictionary()


def n_outputs(module: torch.nn.Module, image: torch.Tensor) -> int:
    """How many outputs ``module`` has: one forward pass of one image, the first time a module is
    asked (a classifier's count does not depend on the input), remembered while it lives: a map
    of a model already asked costs no extra forward pass."""
    known = _N_OUTPUTS.get(module)
    if known is None:
        with torch.inference_mode():
            known = _N_OUTPUTS[module] = int(module(image[:1]).shape[1])
    return known


def baseline_tensor(baseline, image: torch.Tensor, spec: ModelSpec | None) -> torch.Tensor:
    """A baseline in model-input space, broadcastable to ``image``.

    ``"black"``: grey level 0 through the model's normalisation (the papers' "black image");
    ``"white"``: grey level 1; ``"zero"``: 0 in model space (Captum's default, mid-grey for
    ImageNet normalisation); ``"mean"`` needs an explicit mean image, so pass the tensor itself;
    a tensor or array is used as given (e.g. the mean training image, preprocessed).
    """
    if isinstance(baseline, (torch.Tensor, np.ndarray)):
        b = torch.as_tensor(baseline, dtype=image.dtype, device=image.device)
        if b.ndim == 3:
            b = b[None]
        try:
            torch.broadcast_shapes(b.shape, image.shape)
        except RuntimeError:
            raise ExplainerError(
                f"baseline of shape {tuple(b.shape)} does not broadcast to the image {tuple(image.shape)}"
            ) from None
        return b
    if baseline == "zero":
        return torch.zeros(1, image.shape[1], 1, 1, dtype=image.dtype, device=image.device)
    if baseline in ("black", "white"):
        grey = 0.0 if baseline == "black" else 1.0
        if spec is None:
            raise ExplainerError(
                f"baseline {baseline!r} needs the model's normalisation: pass a LoadedModel, "
                "or a baseline tensor in model-input space"
            )
        mean = torch.tensor(spec.mean, dtype=image.dtype, device=image.device).view(1, -1, 1, 1)
        std = torch.tensor(spec.std, dtype=image.dtype, device=image.device).view(1, -1, 1, 1)
        return (grey - mean) / std
    if baseline == "mean":
        raise ExplainerError(
            "baseline 'mean' needs the mean image itself: pass it as a tensor in model-input space "
            "(cxrxai.explain.mean_image computes it)"
        )
    raise UnknownNameError("baseline", baseline, BASELINES + ("<tensor>",))


@contextmanager
def isolated_rng(seed: int | None) -> Iterator[None]:
    """Seed torch and NumPy's global RNGs inside the block and restore them after.

    Captum draws noise with ``torch.randn`` and GradientSHAP's α with ``np.random.uniform``;
    this makes those draws reproducible without leaving global state changed.
    """
    if seed is None:
        yield
        return
    np_state = np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        np.random.seed(seed)
        try:
            yield
        finally:
            np.random.set_state(np_state)


_NO_INPLACE: weakref.WeakKeyDictionary[torch.nn.Module, torch.nn.Module] = weakref.WeakKeyDictionary()
_HOOK_READY: weakref.WeakSet[torch.nn.Module] = weakref.WeakSet()


def no_inplace_copy(module: torch.nn.Module) -> torch.nn.Module:
    """A cached deep copy whose ReLU modules are not in-place (for backward-hook methods).

    Captum's guided backprop hooks ReLU modules; in-place ReLUs break module backward hooks.
    The caller's model is never modified.
    """
    if module in _HOOK_READY:
        return module
    cached = _NO_INPLACE.get(module)
    if cached is None:
        cached = copy.deepcopy(module).eval()
        for m in cached.modules():
            if isinstance(m, torch.nn.ReLU):
                m.inplace = False
        _NO_INPLACE[module] = cached
    return cached


def hook_ready(module: torch.nn.Module) -> torch.nn.Module:
    """``module`` itself, made usable as it is by the backward-hook methods: its ReLUs stop working in
    place (the values they give are the same) and :func:`no_inplace_copy` returns it, uncopied.

    Only for a private copy that nothing else runs meanwhile (a cascading-randomization step): the
    hook methods hook the module they are given, so a model shared with other callers (the app's)
    goes through :func:`no_inplace_copy` instead."""
    for m in module.modules():
        if isinstance(m, torch.nn.ReLU):
            m.inplace = False
    _HOOK_READY.add(module)  # weakly: the module goes when its caller drops it
    return module


def layer_of(module: torch.nn.Module, layer, spec: ModelSpec | None) -> torch.nn.Module:
    """Resolve a layer given as a module, a dotted name, or None (the spec's CAM layer)."""
    if isinstance(layer, torch.nn.Module):
        return layer
    name = layer or (spec.cam_layer if spec else None)
    if name is None:
        raise ExplainerError(
            "a CAM method needs `layer` (a module or dotted name) when the model has no spec"
        )
    try:
        return module.get_submodule(name)
    except AttributeError:
        names = [n for n, _ in module.named_modules() if n]
        raise UnknownNameError("layer", name, names[-12:]) from None


def reduce_channels(attr: torch.Tensor, how: str) -> torch.Tensor:
    """(N, C, H, W) attributions → (N, H, W).

    ``sum`` (default): the attribution of the grey pixel shared by the replicated channels;
    ``abs_sum``: Σ|a| (the PAIR saliency library's greyscale, used by Arun et al.); ``mean``;
    ``max_abs``: the channel value of largest magnitude.
    """
    if how == "sum":
        return attr.sum(1)
    if how == "abs_sum":
        return attr.abs().sum(1)
    if how == "mean":
        return attr.mean(1)
    if how == "max_abs":
        idx = attr.abs().argmax(1, keepdim=True)
        return attr.gather(1, idx)[:, 0]
    raise UnknownNameError("channel reduction", how, CHANNEL_REDUCTIONS)


def runs_stock_code(module: torch.nn.Module, base: type, *methods: str) -> bool:
    """Whether ``module`` runs ``base``'s own ``methods`` (a subclass may have replaced its head, and
    code that re-derives the head, like the closed-form CAMs or incremental occlusion, would be wrong)."""
    return all(getattr(type(module), m) is getattr(base, m) for m in methods)
