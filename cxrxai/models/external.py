"""Models a research group already has: torchvision checkpoints, torchxrayvision weights,
ensembles — each loaded offline into a :class:`LoadedModel` with a complete spec.

* :func:`load_checkpoint` — DenseNet-121, ResNet-18/50/152, Inception-v3 (… any key of
  :data:`~cxrxai.models.registry.ARCHITECTURES`) from a ``state_dict`` file in torchvision's or
  another group's layout (:mod:`cxrxai.models.checkpoints`: DataParallel, Lightning, CheXNet,
  old DenseNet names, a Linear + Sigmoid head, one input channel), or a whole pickled model when
  ``trust_pickle=True`` (unpickling runs code from the file: only for files you trust). Label
  order comes from ``labels=``, a sidecar ``<file>.labels.json`` / ``.json`` spec, or the
  checkpoint's own list (Lightning's ``hyper_parameters``), recorded as ``card["labels_source"]``. ImageNet
  normalisation unless told otherwise (0.5 / 0.5 for one-channel models). A model that ends in
  a sigmoid outputs the logit before it: the sigmoid is removed, or, where it cannot be (applied
  in ``forward``), the model is wrapped to return logit(p).
* :func:`load_xrv` — a torchxrayvision model by weight name (``densenet121-res224-all``…),
  read from a local file; if the file is missing the error says exactly where to put it.
  Inputs are scaled to [−1024, 1024] (torchxrayvision's convention) on one channel; outputs are
  logits (the operating-point calibration is switched off so explainers see the raw score);
  untrained outputs are named ``"(unused k)"``.
* :class:`Ensemble` — the mean of member logits (Saporta et al. average predictions and maps;
  :func:`cxrxai.explain.explain_ensemble` averages maps).
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import torch

from ..errors import ModelError, UnknownNameError
from .checkpoint_advice import LABEL_KEYS, hyper_parameter_keys, labels_in_checkpoint, unreadable_message
from .checkpoints import (
    CHEXNET_HEAD,
    HEAD,
    first_conv_channels,
    misfit_message,
    model_id_from_file,
    normalise_state_dict,
    one_channel,
    strip_final_sigmoid,
    unwrap,
)
from .registry import ARCHITECTURES, LoadedModel, best_device, build, sha256
from .spec import IMAGENET_MEAN, IMAGENET_STD, ModelSpec

__all__ = [
    "GREY_MEAN",
    "GREY_STD",
    "XRV_NORMALIZATION",
    "Ensemble",
    "load_checkpoint",
    "load_ensemble",
    "load_xrv",
    "read_label_list",
]

#: torchxrayvision scales grey [0, 1] to [−1024, 1024]: (x − 0.5) / (1 / 2048).
XRV_NORMALIZATION = ((0.5,), (1 / 2048,))


def read_label_list(path: str | Path) -> tuple[str, ...]:
    """Label order from a JSON file: a list of names, or a dict with a ``labels`` list (a spec)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ModelError(f"cannot read the label list {path}: {err}") from None
    names = data.get("labels") if isinstance(data, dict) else data
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ModelError(f"{path} must hold a JSON list of label names or {{\"labels\": [...]}}")
    return tuple(names)


def _labels_for(path: Path, labels, obj) -> tuple[tuple[str, ...], str]:
    """The label order and where it came from: ``labels=``, a sidecar file, or the checkpoint itself
    (:func:`~cxrxai.models.checkpoint_advice.labels_in_checkpoint`)."""
    if labels:
        return tuple(labels), "labels= (given)"
    for sidecar in (path.with_suffix(".labels.json"), path.with_suffix(".json")):
        if sidecar.is_file():
            return read_label_list(sidecar), str(sidecar)
    found = labels_in_checkpoint(obj, path)
    if found:
        return found
    keys = hyper_parameter_keys(obj)
    held = (f"; its hyper_parameters hold {keys[:12]}, no list of label names under any of {list(LABEL_KEYS)}"
            if keys else "")
    raise ModelError(
        f"no label order for {path}{held}: pass labels=[...] (on the command line "
        f"ARCH:CHECKPOINT:LABELS.json) or write {path.with_suffix('.labels.json')}"
    )


#: Normalisation of one-channel models when none is given: grey levels in [0, 1] to [−1, 1].
#: A guess — the source's own statistics are better; pass ``mean=`` / ``std=`` when known.
GREY_MEAN, GREY_STD = (0.5,), (0.5,)
_READ_ERRORS = (
    pickle.UnpicklingError,
    RuntimeError,
    EOFError,
    ValueError,
    AttributeError,
    ModuleNotFoundError,
    TypeError,
)


def load_checkpoint(path: str | Path, *, arch: str, labels=None, input_size: int | None = None,
                    mean=None, std=None, trust_pickle: bool = False, name: str | None = None,
                    device=None) -> LoadedModel:
    """A torchvision-architecture classifier from a checkpoint file (see the module docstring).

    Other groups' layouts (:mod:`cxrxai.models.checkpoints`) are recognised from the keys and
    recorded in the card: ``checkpoint_layout`` (e.g. ``"dataparallel+chexnet+old-densenet+
    sequential-head"``, ``"whole-module"``), ``checkpoint_notes`` (what was renamed) and ``head``
    when the source ended in a sigmoid. ``mean`` / ``std`` default to ImageNet's, or to
    :data:`GREY_MEAN` / :data:`GREY_STD` for a one-channel model; their length must equal the
    model's input channels.

    Raises
    ------
    ModelError
        The file is missing or unreadable; the number of outputs differs from the labels; the
        weights still do not fit (the message names the first missing and unexpected keys, the
        shape mismatches and the layouts recognised).
    """
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"no checkpoint at {path}")
    if arch not in ARCHITECTURES:
        raise UnknownNameError("architecture", arch, ARCHITECTURES)
    size = input_size or (299 if arch == "inception_v3" else 224)
    try:
        obj = torch.load(path, map_location="cpu", weights_only=not trust_pickle)
    except _READ_ERRORS as err:
        raise ModelError(unreadable_message(path, err, arch=arch, trust_pickle=trust_pickle)) from None
    labels, labels_source = _labels_for(path, labels, obj)
    whole = _pickled_module(obj)
    if whole is not None:
        module, explained, card = _from_whole_module(path, whole, len(labels), size)
    else:
        module, explained, card = _from_state_dict(path, unwrap(obj), arch, len(labels))
    mean, std = _normalisation(path, mean, std, _input_channels(module))
    spec = ModelSpec(name=name or model_id_from_file(path), arch=arch, labels=labels, input_size=size,
                     mean=mean, std=std, explained_output=explained,
                     cam_layer=_cam_layer(module, ARCHITECTURES[arch][1]),
                     card={"weights_path": str(path), "weights_sha256": sha256(path),
                           "source": "user checkpoint", "labels_source": labels_source, **card,
                           "trust_pickle": trust_pickle})
    dev = torch.device(device) if device else best_device()
    return LoadedModel(module.to(dev, memory_format=torch.channels_last), spec, dev)


def _pickled_module(obj) -> torch.nn.Module | None:
    """The model inside a whole-model checkpoint (``torch.save(model)``, or jrzech's
    ``{"model": model, "epoch": …}``), less a DataParallel wrapper; None for a state_dict."""
    if isinstance(obj, dict):
        obj = next(
            (obj[k] for k in ("model", "net", "state_dict") if isinstance(obj.get(k), torch.nn.Module)), obj
        )
    while isinstance(obj, (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)):
        obj = obj.module
    return obj if isinstance(obj, torch.nn.Module) else None


def _from_state_dict(path: Path, state: dict, arch: str, n_outputs: int) -> tuple[torch.nn.Module, str, dict]:
    """``arch`` built with ``n_outputs`` logits and loaded from ``state`` in any layout recognised."""
    state, layout, notes = normalise_state_dict(state, arch)
    module = build(arch, n_outputs)
    if first_conv_channels(state, arch) == 1:
        module = one_channel(module, arch)
    expected = module.state_dict()
    head = f"{HEAD[arch]}.weight"
    if head in state and state[head].ndim == 2 and state[head].shape[0] != n_outputs:
        raise ModelError(f"{path}: the checkpoint has {state[head].shape[0]} outputs but {n_outputs} labels "
                         "were given; pass one label per output, in the model's order")
    try:
        module.load_state_dict(state)
    except RuntimeError:
        raise ModelError(misfit_message(path, arch, n_outputs, state, expected, layout, notes)) from None
    card = {"checkpoint_layout": layout, "checkpoint_notes": notes}
    if "sequential-head" in layout.split("+"):
        card["head"] = CHEXNET_HEAD
    return module.float().eval(), "logit", card


def _from_whole_module(path: Path, module: torch.nn.Module, n_outputs: int,
                       size: int) -> tuple[torch.nn.Module, str, dict]:
    """A pickled model as it is, less a final sigmoid where one can be removed."""
    module = module.float().eval()
    probe = torch.randn(1, _input_channels(module), size, size, generator=torch.Generator().manual_seed(0))
    module, explained, head = strip_final_sigmoid(module, probe)
    with torch.no_grad():
        n = module(probe).shape[-1]
    if n != n_outputs:
        raise ModelError(
            f"{path}: the model has {n} outputs but {n_outputs} labels were given; pass one label "
            "per output, in the model's order"
        )
    layout = "whole-module" + ("+one-channel" if _input_channels(module) == 1 else "")
    card = {"checkpoint_layout": layout, "checkpoint_notes": [f"whole pickled {type(module).__name__}"]}
    return module, explained, card | ({"head": head} if head else {})


def _input_channels(module: torch.nn.Module) -> int:
    """Input channels of the first convolution (3 when there is none)."""
    return next((m.in_channels for m in module.modules() if isinstance(m, torch.nn.Conv2d)), 3)


def _normalisation(path: Path, mean, std, channels: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``mean`` / ``std`` as tuples, defaulted by the number of input channels, and checked."""
    default = (GREY_MEAN, GREY_STD) if channels == 1 else (IMAGENET_MEAN, IMAGENET_STD)
    mean = tuple(float(v) for v in mean) if mean is not None else default[0]
    std = tuple(float(v) for v in std) if std is not None else default[1]
    if len(mean) != channels or len(std) != channels:
        raise ModelError(
            f"{path}: the model takes {channels} input channel(s) but mean has {len(mean)} and std "
            f"{len(std)} values; pass one per channel"
        )
    return mean, std


def _cam_layer(module: torch.nn.Module, default: str) -> str:
    """The architecture's Grad-CAM layer inside ``module`` (a wrapper adds a prefix: CheXNet's
    ``densenet121.features.norm5``)."""
    names = [n for n, _ in module.named_modules()]
    return default if default in names else next((n for n in names if n.endswith("." + default)), default)


def load_xrv(weights: str = "densenet121-res224-all", *, cache_dir: str | Path, device=None) -> LoadedModel:
    """A torchxrayvision model read offline from ``cache_dir`` (see the module docstring)."""
    try:
        import torchxrayvision as xrv
    except ImportError:
        raise ModelError(
            "torchxrayvision is not installed: `pip install torchxrayvision` to use its models"
        ) from None
    urls = xrv.models.model_urls
    if weights not in urls:
        raise UnknownNameError("torchxrayvision weights", weights, sorted(urls))
    expected = Path(cache_dir) / Path(urls[weights]["weights_url"]).name
    if not expected.is_file():
        raise ModelError(
            f"torchxrayvision weights {weights!r} not found: download "
            f"{urls[weights]['weights_url']} once and save it as {expected} (no download happens here)"
        )
    if weights.startswith("resnet"):
        module = xrv.models.ResNet(weights=weights, cache_dir=str(Path(cache_dir)))
    else:
        module = xrv.models.DenseNet(weights=weights, cache_dir=str(Path(cache_dir)))
    module.op_threshs = None  # logits, not the operating-point-normalised probability
    labels = tuple(t if t else f"(unused {k})" for k, t in enumerate(module.targets))
    res = int(urls[weights].get("input_resolution", 224))
    spec = ModelSpec(
        name=f"xrv-{weights}",
        arch=f"xrv-{weights.split('-')[0]}",
        labels=labels,
        input_size=res,
        mean=XRV_NORMALIZATION[0],
        std=XRV_NORMALIZATION[1],
        cam_layer="features.norm5" if weights.startswith("densenet") else "model.layer4",
        card={"source": "torchxrayvision", "weights": weights, "weights_path": str(expected),
              "weights_sha256": sha256(expected)},
    )
    dev = torch.device(device) if device else best_device()
    return LoadedModel(module.eval().to(dev), spec, dev)


class Ensemble(torch.nn.Module):
    """Mean of member logits (members share labels, input size and normalisation)."""

    def __init__(self, members: list[torch.nn.Module]):
        super().__init__()
        self.members = torch.nn.ModuleList(members)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([m(x) for m in self.members]).mean(0)


def load_ensemble(models: list[LoadedModel], *, name: str = "ensemble") -> LoadedModel:
    """An :class:`Ensemble` as a LoadedModel; members must agree on labels and preprocessing."""
    if not models:
        raise ModelError("an ensemble needs at least one member")
    first = models[0].spec
    for m in models[1:]:
        s = m.spec
        if (s.labels, s.input_size, s.mean, s.std) != (first.labels, first.input_size, first.mean, first.std):
            raise ModelError(f"ensemble member {s.name} differs from {first.name} in labels or preprocessing")
    spec = first.with_(
        name=name, arch="ensemble", cam_layer="", card={"members": [m.spec.name for m in models]}
    )
    return LoadedModel(Ensemble([m.module for m in models]).eval(), spec, models[0].device)
