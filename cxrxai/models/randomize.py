"""Cascading randomization of a model's layers (Adebayo et al. 2018; Arun et al. 2021), top down.

:func:`randomization_steps` yields copies of a model with one more group of layers re-drawn at
each step; for DenseNet-121: classifier, denseblock4, transition3, denseblock3, transition2,
denseblock2, transition1, denseblock1, stem (conv0/norm0). The maps of each copy are compared to
the trained model's by :func:`cxrxai.metrics.trust.ssim`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator

import torch

__all__ = ["DENSENET_ORDER", "randomization_order", "randomization_steps"]

#: Cascading-randomization steps for torchvision DenseNets, top down (each step: modules re-drawn).
DENSENET_ORDER: tuple[tuple[str, ...], ...] = (
    ("classifier",),
    ("features.denseblock4", "features.norm5"),
    ("features.transition3",),
    ("features.denseblock3",),
    ("features.transition2",),
    ("features.denseblock2",),
    ("features.transition1",),
    ("features.denseblock1",),
    ("features.conv0", "features.norm0"),
)


def randomization_order(module: torch.nn.Module) -> list[tuple[str, ...]]:
    """Top-down groups of modules to re-draw: DenseNet's named steps, else top-level children reversed."""
    names = {n for n, _ in module.named_modules()}
    if all(n in names for step in DENSENET_ORDER for n in step):
        return list(DENSENET_ORDER)
    return [(n,) for n, _ in reversed(list(module.named_children()))]


def _reinit(module: torch.nn.Module, gen: torch.Generator) -> None:
    """Truncated-normal re-draw (±2σ, He scale) of weights; biases and BN shifts 0, BN scales 1."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
                fan_in = m.weight[0].numel()
                std = math.sqrt(2.0 / fan_in)
                w = torch.empty_like(m.weight).normal_(0, std, generator=gen).clamp_(-2 * std, 2 * std)
                m.weight.copy_(w)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                if m.affine:
                    m.weight.fill_(1.0)
                    m.bias.zero_()


def randomization_steps(module: torch.nn.Module, *, order: list[tuple[str, ...]] | None = None, seed: int = 0
                        ) -> Iterator[tuple[str, torch.nn.Module]]:
    """Yield ``(step, model)``: "original", then the model with each step's modules re-drawn,
    cumulatively (step name = its first module). The caller's model is never modified."""
    order = order or randomization_order(module)
    work = copy.deepcopy(module).eval()
    gen = torch.Generator().manual_seed(seed)
    yield "original", copy.deepcopy(work)
    for step in order:
        for name in step:
            _reinit(work.get_submodule(name), gen)
        # A fresh copy per step: helpers that cache per module (guided backprop's ReLU copy) must
        # never see a model whose weights changed under them.
        yield step[0], copy.deepcopy(work)
