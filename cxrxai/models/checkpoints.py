"""Other groups' checkpoint layouts, mapped onto torchvision's module names.

A checkpoint is a ``state_dict`` (or a dict holding one under ``state_dict``, ``model_state_dict``,
``model`` or ``net``) whose keys say how it was saved. :func:`normalise_state_dict` recognises,
and records in a list of notes, each of :data:`LAYOUTS`:

* ``dataparallel`` — a ``module.`` prefix (``nn.DataParallel``, DDP);
* ``wrapped`` — a wrapper's attribute as prefix: ``model.`` / ``net.`` / ``backbone.`` (PyTorch
  Lightning modules), ``densenet121.`` (CheXNet's ``DenseNet121`` class: arnoweng/CheXNet,
  jrzech/reproduce-chexnet); prefixes nest (``module.densenet121.``);
* ``old-densenet`` — DenseNet layer names from before torchvision 0.3 (``norm.1``, ``conv.2``…),
  renamed with the very pattern torchvision applies to its own old weights;
* ``sequential-head`` — a head saved as ``nn.Sequential(nn.Linear, nn.Sigmoid())``
  (``classifier.0.weight``): the Linear is loaded into torchvision's ``classifier`` / ``fc``, so
  the model outputs the logit before the source's sigmoid, which is what explainers explain;
* ``one-channel`` — a first convolution over one input channel (grey films not replicated to RGB).

Pure functions over dicts of tensors; :mod:`cxrxai.models.external` builds the module.
"""

from __future__ import annotations

import re

import torch
from torch import nn

from ..errors import ModelError

__all__ = ["FIRST_CONV", "LAYOUTS", "first_conv_channels", "misfit_message", "normalise_state_dict", "one_channel",
           "unwrap"]

LAYOUTS = {
    "torchvision": "plain torchvision state_dict",
    "dataparallel": "'module.' prefix (DataParallel / DDP)",
    "wrapped": "'model.' / 'net.' / 'backbone.' (Lightning) or 'densenet121.' (CheXNet) prefix",
    "old-densenet": "old DenseNet names 'norm.1', 'conv.2' (torchvision < 0.3, CheXNet)",
    "sequential-head": "'classifier.0' / 'fc.0' Linear of a Linear + Sigmoid head (CheXNet)",
    "one-channel": "a first convolution over one input channel",
}
#: The first convolution of each architecture (its input channels decide grey vs RGB inputs).
FIRST_CONV = {"densenet121": "features.conv0", "resnet18": "conv1", "resnet50": "conv1", "resnet152": "conv1",
              "inception_v3": "Conv2d_1a_3x3.conv"}
_PREFIXES = ("module.", "model.", "net.", "backbone.", "densenet121.", "encoder.")
_OLD_DENSENET = re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var|num_batches_tracked))$")


def unwrap(obj) -> dict[str, torch.Tensor]:
    """The ``state_dict`` inside a checkpoint object (see the module docstring)."""
    if isinstance(obj, dict):
        for key in ("state_dict", "model_state_dict", "model", "net"):
            inner = obj.get(key)
            if isinstance(inner, dict) and inner and all(torch.is_tensor(v) for v in inner.values()):
                return dict(inner)
        tensors = {k: v for k, v in obj.items() if torch.is_tensor(v)}
        if tensors:
            return tensors
    raise ModelError(f"a checkpoint should hold a state_dict (a dict of tensors); got {type(obj).__name__}")


def _best_chain(state: dict, expected: set[str], depth: int = 3) -> tuple[int, list[str]]:
    """The chain of wrapper prefixes whose stripping makes the most keys match ``expected``
    (prefixes nest: ``module.densenet121.``), with that number of matching keys."""
    best = (len(set(state) & expected), [])
    if depth == 0:
        return best
    for p in _PREFIXES:
        inner = {k[len(p):]: v for k, v in state.items() if k.startswith(p)}
        if len(inner) >= 0.5 * len(state):
            overlap, chain = _best_chain(inner, expected, depth - 1)
            if overlap > best[0]:
                best = (overlap, [p, *chain])
    return best


def _strip_prefixes(state: dict, expected: set[str], notes: list[str]) -> dict:
    """Drop the wrapper prefixes of :func:`_best_chain`, noting each and any keys left behind."""
    for p in _best_chain(state, expected)[1]:
        dropped = [k for k in state if not k.startswith(p)]
        notes.append(("dataparallel" if p == "module." else "wrapped") + f": stripped '{p}'"
                     + (f", ignored {len(dropped)} other keys (e.g. {dropped[0]!r})" if dropped else ""))
        state = {k[len(p):]: v for k, v in state.items() if k.startswith(p)}
    return state


def normalise_state_dict(state: dict, expected: set[str]) -> tuple[dict, list[str]]:
    """Rename ``state``'s keys onto ``expected`` (a fresh module's keys); returns the renamed
    dict and one note per layout recognised (empty for a plain torchvision checkpoint)."""
    notes: list[str] = []
    state = _strip_prefixes(dict(state), expected, notes)
    renamed = {}
    for k, v in state.items():
        m = _OLD_DENSENET.match(k)
        renamed[m.group(1) + m.group(2) if m else k] = v
    if renamed.keys() != state.keys():
        notes.append("old-densenet: renamed 'norm.1'-style layer names")
    state = renamed
    for head in ("classifier", "fc"):
        if f"{head}.0.weight" in state and f"{head}.weight" in expected and f"{head}.weight" not in state:
            state[f"{head}.weight"] = state.pop(f"{head}.0.weight")
            if f"{head}.0.bias" in state:
                state[f"{head}.bias"] = state.pop(f"{head}.0.bias")
            notes.append(f"sequential-head: '{head}.0' Linear loaded as '{head}'; the source's sigmoid is left out, "
                         "so the logit before it is explained")
    return state, notes


def first_conv_channels(state: dict, arch: str) -> int:
    """Input channels of the checkpoint's first convolution (3 when it cannot be told)."""
    w = state.get(f"{FIRST_CONV.get(arch, '')}.weight")
    return int(w.shape[1]) if torch.is_tensor(w) and w.ndim == 4 else 3


def one_channel(module: nn.Module, arch: str) -> nn.Module:
    """Replace ``module``'s first convolution by the same convolution over one input channel."""
    path = FIRST_CONV[arch]
    parent_path, _, name = path.rpartition(".")
    parent = module.get_submodule(parent_path) if parent_path else module
    old: nn.Conv2d = getattr(parent, name)
    setattr(parent, name, nn.Conv2d(1, old.out_channels, old.kernel_size, old.stride, old.padding,
                                    bias=old.bias is not None))
    return module


def misfit_message(path, arch: str, n_outputs: int, state: dict, expected: dict, notes: list[str]) -> str:
    """What does not fit, and the layouts that would have been recognised."""
    missing = [k for k in expected if k not in state and not k.endswith("num_batches_tracked")]
    unexpected = [k for k in state if k not in expected]
    shapes = [f"{k} {tuple(state[k].shape)} ≠ {tuple(expected[k].shape)}" for k in expected
              if k in state and state[k].shape != expected[k].shape]
    parts = [f"{path}: the weights do not fit {arch} with {n_outputs} outputs"]
    if notes:
        parts.append("after " + "; ".join(notes))
    if missing:
        parts.append(f"{len(missing)} missing keys, first {missing[:5]}")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected keys, first {unexpected[:5]}")
    if shapes:
        parts.append(f"shape mismatches {shapes[:3]}")
    parts.append("layouts recognised: " + "; ".join(LAYOUTS.values()))
    return ". ".join(parts)
