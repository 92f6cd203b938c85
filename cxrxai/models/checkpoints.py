"""Other groups' checkpoint layouts, mapped onto torchvision's module names.

A checkpoint is a ``state_dict``, or a dict holding one under ``state_dict``,
``model_state_dict``, ``model`` or ``net``. :func:`detect_layout` names its layout from the keys
alone, as ``+``-joined tags of :data:`LAYOUTS` (``"torchvision"`` when none applies), and
:func:`normalise_state_dict` renames the keys onto torchvision's:

* ``dataparallel`` — a ``module.`` prefix (``nn.DataParallel``, DDP);
* ``lightning`` — a ``model.`` / ``net.`` / ``backbone.`` prefix (a PyTorch Lightning module's
  attribute). Keys outside it (a loss's ``pos_weight``…) are dropped, and said so;
* ``chexnet`` — a ``densenet121.`` prefix (the ``DenseNet121`` wrapper class of arnoweng/CheXNet
  and jrzech/reproduce-chexnet). Prefixes nest: CheXNet saved ``module.densenet121.…``;
* ``old-densenet`` — DenseNet layer names from before torchvision 0.3 (``norm.1``, ``conv.2``…),
  renamed with the pattern of ``torchvision.models.densenet._load_state_dict``;
* ``sequential-head`` — a head saved as ``nn.Sequential(nn.Linear, nn.Sigmoid())``
  (``classifier.0.weight``): the Linear is loaded as torchvision's ``classifier`` / ``fc``, so the
  model outputs the logit before the source's sigmoid, and that logit is what is explained;
* ``one-channel`` — a first convolution over one input channel (grey films not copied to RGB).

A prefix is stripped when at least half of the keys carry it. Whole pickled models are handled
by :func:`strip_final_sigmoid`; :mod:`cxrxai.models.external` builds and loads the module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch
from torch import nn

from ..errors import ModelError, UnknownNameError

__all__ = ["CHECKPOINT_SUFFIXES", "CHEXNET_HEAD", "FIRST_CONV", "HEAD", "LAYOUTS", "detect_layout",
           "first_conv_channels", "misfit_message", "model_id_from_file", "normalise_state_dict",
           "one_channel", "strip_final_sigmoid", "unwrap"]

#: Suffixes a checkpoint's file name carries, alone or chained (``chexnet.pth.tar``); none is part
#: of the model's name.
CHECKPOINT_SUFFIXES = (".pth", ".pt", ".tar", ".ckpt", ".bin", ".safetensors")

#: Layout tag → what it recognises (the misfit message lists these).
LAYOUTS = {
    "torchvision": "plain torchvision state_dict, alone or under 'state_dict' / 'model' / 'model_state_dict'",
    "dataparallel": "DataParallel / DDP 'module.' prefix",
    "lightning": "PyTorch Lightning 'model.' (or 'net.', 'backbone.') prefix",
    "chexnet": "CheXNet 'densenet121.' prefix",
    "old-densenet": "old DenseNet names 'norm.1', 'relu.1', 'conv.1', 'norm.2', 'conv.2' "
    "(torchvision < 0.3, CheXNet)",
    "sequential-head": "Linear + Sigmoid head saved as 'classifier.0' / 'fc.0' (CheXNet)",
    "one-channel": "one-channel first convolution (features.conv0 / conv1 / Conv2d_1a_3x3.conv)",
}
#: ``card["head"]`` of a model whose source ended in a Linear + Sigmoid now left out.
CHEXNET_HEAD = "linear+sigmoid in the source model; cxrxai explains the logit before the sigmoid"
#: The first convolution of each architecture (its input channels decide grey vs RGB inputs).
FIRST_CONV = {"densenet121": "features.conv0", "resnet18": "conv1", "resnet50": "conv1", "resnet152": "conv1",
              "inception_v3": "Conv2d_1a_3x3.conv"}
#: The Linear head of each architecture.
HEAD = {
    "densenet121": "classifier",
    "resnet18": "fc",
    "resnet50": "fc",
    "resnet152": "fc",
    "inception_v3": "fc",
}
_PREFIX_TAGS = {
    "module.": "dataparallel",
    "densenet121.": "chexnet",
    "model.": "lightning",
    "net.": "lightning",
    "backbone.": "lightning",
}
_OLD_DENSENET = re.compile(
    r"^(.*denselayer\d+\.(?:norm|relu|conv))\."
    r"((?:[12])\.(?:weight|bias|running_mean|running_var|num_batches_tracked))$"
)


def model_id_from_file(path) -> str:
    """The default model id of a checkpoint file: its name less every checkpoint suffix at its end.

    >>> [model_id_from_file(n) for n in ("models/chexnet.pth.tar", "m.ckpt", "v1.2.pt")]
    ['chexnet', 'm', 'v1.2']
    """
    name = str(path).replace("\\", "/").rsplit("/", 1)[-1]
    while any(name.lower().endswith(s) and len(name) > len(s) for s in CHECKPOINT_SUFFIXES):
        name = name[: name.rfind(".")]
    return name


def unwrap(obj) -> dict[str, torch.Tensor]:
    """The ``state_dict`` inside a checkpoint object (see the module docstring).

    Raises
    ------
    ModelError
        When ``obj`` holds no dict of tensors.
    """
    if isinstance(obj, Mapping):
        for key in ("state_dict", "model_state_dict", "model", "net"):
            inner = obj.get(key)
            if isinstance(inner, Mapping) and inner and all(torch.is_tensor(v) for v in inner.values()):
                return dict(inner)
        tensors = {k: v for k, v in obj.items() if isinstance(k, str) and torch.is_tensor(v)}
        if tensors:
            return tensors
        raise ModelError(f"the checkpoint holds no state_dict: a dict with keys {sorted(map(str, obj))[:8]}")
    raise ModelError(f"a checkpoint should hold a state_dict (a dict of tensors); got {type(obj).__name__}")


def _strip_prefixes(state: Mapping) -> tuple[dict, list[str], list[str]]:
    """``state`` less its wrapper prefixes (each kept while ≥ half the keys carry it), the tags
    and one note per prefix stripped."""
    state, tags, notes = dict(state), [], []
    for _ in range(3):
        p = next((p for p in _PREFIX_TAGS if 2 * sum(k.startswith(p) for k in state) >= len(state) > 0), None)
        if p is None:
            break
        dropped = [k for k in state if not k.startswith(p)]
        tags.append(_PREFIX_TAGS[p])
        notes.append(
            f"{_PREFIX_TAGS[p]}: stripped '{p}'"
            + (f"; ignored {len(dropped)} key(s) outside it, e.g. {dropped[0]!r}" if dropped else "")
        )
        state = {k[len(p):]: v for k, v in state.items() if k.startswith(p)}
    return state, tags, notes


def first_conv_channels(state: Mapping, arch: str | None = None) -> int:
    """Input channels of the checkpoint's first convolution (3 when it cannot be told).

    ``arch`` names the convolution (:data:`FIRST_CONV`); without it any architecture's is tried.
    """
    names = [FIRST_CONV[arch]] if arch in FIRST_CONV else list(dict.fromkeys(FIRST_CONV.values()))
    w = next((state[f"{n}.weight"] for n in names if f"{n}.weight" in state), None)
    return int(w.shape[1]) if torch.is_tensor(w) and w.ndim == 4 else 3


def detect_layout(state: Mapping[str, torch.Tensor]) -> str:
    """The layout of a ``state_dict`` from its keys: ``+``-joined tags of :data:`LAYOUTS` in the
    order they were met, e.g. ``"dataparallel+chexnet+old-densenet+sequential-head"``.

    Examples
    --------
    >>> import torch
    >>> detect_layout({"module.features.conv0.weight": torch.zeros(64, 1, 7, 7)})
    'dataparallel+one-channel'
    >>> detect_layout({"fc.weight": torch.zeros(3, 8)})
    'torchvision'
    """
    inner, tags, _ = _strip_prefixes(state)
    if any(_OLD_DENSENET.match(k) for k in inner):
        tags.append("old-densenet")
    if any(f"{h}.0.weight" in inner and f"{h}.weight" not in inner for h in ("classifier", "fc")):
        tags.append("sequential-head")
    if first_conv_channels(inner) == 1:
        tags.append("one-channel")
    return "+".join(dict.fromkeys(tags)) or "torchvision"


def normalise_state_dict(state: Mapping[str, torch.Tensor], arch: str) -> tuple[dict, str, list[str]]:
    """Rename ``state``'s keys onto torchvision's ``arch``.

    Returns
    -------
    state : dict
        The renamed ``state_dict`` (tensors untouched; ``state`` itself is not modified).
    layout : str
        :func:`detect_layout` of ``state``.
    notes : list of str
        One line per change made (empty for a plain torchvision checkpoint).
    """
    if arch not in HEAD:
        raise UnknownNameError("architecture", arch, HEAD)
    layout = detect_layout(state)
    state, _, notes = _strip_prefixes(state)
    renamed = {(m.group(1) + m.group(2) if (m := _OLD_DENSENET.match(k)) else k): v for k, v in state.items()}
    if renamed.keys() != state.keys():
        notes.append("old-densenet: renamed 'norm.1'-style layer names to 'norm1'")
    head = HEAD[arch]
    if f"{head}.0.weight" in renamed and f"{head}.weight" not in renamed:
        for part in ("weight", "bias"):
            if f"{head}.0.{part}" in renamed:
                renamed[f"{head}.{part}"] = renamed.pop(f"{head}.0.{part}")
        notes.append(
            f"sequential-head: '{head}.0' Linear loaded as '{head}'; the parameter-free layer after it "
            "(CheXNet's Sigmoid) is left out, so the model outputs the logit before it"
        )
    if first_conv_channels(renamed, arch) == 1:
        notes.append(f"one-channel: '{FIRST_CONV[arch]}' takes one grey input channel")
    return renamed, layout, notes


def one_channel(module: nn.Module, arch: str) -> nn.Module:
    """``module`` with its first convolution replaced by the same convolution over one channel."""
    parent_path, _, name = FIRST_CONV[arch].rpartition(".")
    parent = module.get_submodule(parent_path) if parent_path else module
    old: nn.Conv2d = getattr(parent, name)
    setattr(parent, name, nn.Conv2d(1, old.out_channels, old.kernel_size, old.stride, old.padding,
                                    bias=old.bias is not None))
    return module


def _calls(module: nn.Module, probe: torch.Tensor) -> tuple[torch.Tensor, list[tuple[str, object]]]:
    """``module(probe)`` and every sub-module call as (name, output), in call order."""
    calls: list[tuple[str, object]] = []
    hooks = [m.register_forward_hook(lambda _m, _i, out, n=n: calls.append((n, out)))
             for n, m in module.named_modules() if n]
    try:
        with torch.no_grad():
            out = module(probe)
    finally:
        for h in hooks:
            h.remove()
    if not torch.is_tensor(out):
        raise ModelError(f"the pickled model returns {type(out).__name__}, not a tensor of logits")
    return out, calls


def strip_final_sigmoid(module: nn.Module, probe: torch.Tensor) -> tuple[nn.Module, str, str | None]:
    """Remove a sigmoid that ends ``module`` (an eval-mode model) so that it outputs logits.

    ``module(probe)`` is run once with hooks. When its output is that of an ``nn.Sigmoid`` called
    once, that Sigmoid becomes ``nn.Identity``. When it is the sigmoid of a sub-module's output
    applied in ``forward`` (``torch.sigmoid``), it cannot be removed: the model is wrapped in
    :class:`LogitOf`, which turns its probability back into the logit.

    Returns
    -------
    module : nn.Module
        The same module changed in place, or wrapped in :class:`LogitOf`.
    explained_output : "logit"
    head : str or None
        What was found, for ``card["head"]`` (None: no final sigmoid).
    """
    out, calls = _calls(module, probe)
    names = [n for n, o in calls if o is out and isinstance(module.get_submodule(n), nn.Sigmoid)]
    if names and [n for n, _ in calls].count(names[0]) == 1:
        parent_path, _, attr = names[0].rpartition(".")
        setattr(module.get_submodule(parent_path) if parent_path else module, attr, nn.Identity())
        return module, "logit", f"{CHEXNET_HEAD} (the Sigmoid '{names[0]}' was removed)"
    if names or any(torch.is_tensor(o) and o.shape == out.shape and o is not out
                    and torch.allclose(torch.sigmoid(o), out, atol=1e-6) for _, o in calls):
        return (
            LogitOf(module),
            "logit",
            (
                "the model ends in a sigmoid that cannot be removed (applied in forward "
                f"or shared): its probability p is turned back into the logit log(p / (1 − p)) "
                f"(p clamped to [{LogitOf.EPS}, 1 − {LogitOf.EPS}]), which is explained"
            ),
        )
    return module, "logit", None


class LogitOf(nn.Module):
    """``logit(model(x))`` for a model that outputs probabilities: predictions (the sigmoid of
    this) are the model's own, and explainers differentiate the logit before its sigmoid (exact
    away from the clamp). The wrapped model stays reachable as ``.model`` (its layers keep their
    names under ``model.``)."""

    EPS = 1e-6

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logit(self.model(x), eps=self.EPS)


def misfit_message(path, arch: str, n_outputs: int, state: Mapping, expected: Mapping, layout: str,
                   notes: list[str]) -> str:
    """What does not fit (first 5 missing and unexpected keys, shape mismatches) and the layouts
    that are recognised."""
    missing = [k for k in expected if k not in state and not k.endswith("num_batches_tracked")]
    unexpected = [k for k in state if k not in expected]
    shapes = [f"{k} {tuple(state[k].shape)} vs {tuple(expected[k].shape)} expected" for k in expected
              if k in state and state[k].shape != expected[k].shape]
    parts = [f"{path}: the weights do not fit {arch} with {n_outputs} outputs (layout read: {layout})"]
    if notes:
        parts.append("after " + "; ".join(notes))
    if missing:
        parts.append(f"{len(missing)} missing keys, first {missing[:5]}")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected keys, first {unexpected[:5]}")
    if shapes:
        parts.append(f"{len(shapes)} shape mismatches, first {shapes[:5]}")
    parts.append("layouts recognised: " + "; ".join(LAYOUTS.values()))
    return ". ".join(parts)
