"""Models a research group already has: torchvision checkpoints, torchxrayvision weights,
ensembles — each loaded offline into a :class:`LoadedModel` with a complete spec.

* :func:`load_checkpoint` — DenseNet-121, ResNet-18/50/152, Inception-v3 (… any key of
  :data:`~cxrxai.models.registry.ARCHITECTURES`) from a ``state_dict`` file in torchvision's or
  another group's layout (:mod:`cxrxai.models.checkpoints`: DataParallel, Lightning, CheXNet,
  old DenseNet names, a Linear + Sigmoid head, one input channel), or a whole pickled model when
  ``trust_pickle=True`` (unpickling runs code from the file: only for files you trust). Label
  order comes from ``labels=`` or a sidecar ``<file>.labels.json`` / ``.json`` spec. ImageNet
  normalisation unless told otherwise (its grey mean for one-channel models).
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
from .checkpoints import first_conv_channels, misfit_message, normalise_state_dict, one_channel, unwrap
from .registry import ARCHITECTURES, LoadedModel, best_device, build
from .spec import IMAGENET_MEAN, IMAGENET_STD, ModelSpec

__all__ = ["GREY_MEAN", "GREY_STD", "XRV_NORMALIZATION", "Ensemble", "load_checkpoint", "load_ensemble", "load_xrv"]

#: torchxrayvision scales grey [0, 1] to [−1024, 1024]: (x − 0.5) / (1 / 2048).
XRV_NORMALIZATION = ((0.5,), (1 / 2048,))


def _labels_for(path: Path, labels) -> tuple[str, ...]:
    if labels:
        return tuple(labels)
    for sidecar in (path.with_suffix(".labels.json"), path.with_suffix(".json")):
        if sidecar.is_file():
            data = json.loads(sidecar.read_text())
            return tuple(data["labels"] if isinstance(data, dict) else data)
    raise ModelError(f"no label order for {path}: pass labels=[...] or write {path.with_suffix('.labels.json')}")


#: Normalisation of one-channel models when none is given: ImageNet's statistics averaged over
#: the three channels (grey = mean of R, G, B).
GREY_MEAN, GREY_STD = (0.449,), (0.226,)


def load_checkpoint(path: str | Path, *, arch: str, labels=None, input_size: int | None = None,
                    mean=None, std=None, trust_pickle: bool = False, name: str | None = None,
                    device=None) -> LoadedModel:
    """A torchvision-architecture classifier from a checkpoint file (see the module docstring).

    Other groups' layouts (DataParallel, Lightning, CheXNet, old DenseNet names, a Linear +
    Sigmoid head, one input channel) are recognised from the keys and recorded in the card's
    ``checkpoint_layout``; a whole pickled model that ends in a sigmoid has it removed, so the
    logit before it is explained. What still does not fit is a :class:`ModelError` listing the
    first missing and unexpected keys and the layouts recognised.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"no checkpoint at {path}")
    if arch not in ARCHITECTURES:
        raise UnknownNameError("architecture", arch, ARCHITECTURES)
    labels = _labels_for(path, labels)
    try:
        obj = torch.load(path, map_location="cpu", weights_only=not trust_pickle)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, AttributeError, ModuleNotFoundError) as err:
        hint = " (a whole pickled model needs trust_pickle=True)" if not trust_pickle else ""
        raise ModelError(f"cannot read {path}{hint}: {err}") from None
    if isinstance(obj, torch.nn.Module):
        module, notes, channels = _whole_module(obj, arch)
    else:
        module, notes, channels = _from_state_dict(path, unwrap(obj), arch, len(labels))
    if channels == 1:
        mean, std = mean or GREY_MEAN, std or GREY_STD
    mean, std = tuple(mean or IMAGENET_MEAN), tuple(std or IMAGENET_STD)
    if len(mean) != channels:
        raise ModelError(f"{path}: the model takes {channels} input channel(s) but mean/std have {len(mean)}")
    size = input_size or (299 if arch == "inception_v3" else 224)
    cam_layer = _cam_layer(module, ARCHITECTURES[arch][1])
    spec = ModelSpec(name=name or path.stem, arch=arch, labels=labels, input_size=size, mean=mean, std=std,
                     cam_layer=cam_layer, card={"weights_path": str(path), "source": "user checkpoint",
                                                "checkpoint_layout": notes or ["torchvision"],
                                                "trust_pickle": trust_pickle})
    dev = torch.device(device) if device else best_device()
    return LoadedModel(module.float().eval().to(dev, memory_format=torch.channels_last), spec, dev)


def _from_state_dict(path: Path, state: dict, arch: str, n_outputs: int) -> tuple[torch.nn.Module, list[str], int]:
    module = build(arch, n_outputs)
    expected = module.state_dict()
    state, notes = normalise_state_dict(state, set(expected))
    channels = first_conv_channels(state, arch)
    if channels == 1:
        module = one_channel(module, arch)
        expected = module.state_dict()
        notes.append("one-channel: grey input, first convolution over one channel")
    head = next((k for k in ("classifier.weight", "fc.weight") if k in state and k in expected), None)
    if head and state[head].shape[0] != expected[head].shape[0]:
        raise ModelError(f"{path}: the checkpoint has {state[head].shape[0]} outputs but {n_outputs} labels were given")
    try:
        module.load_state_dict(state)
    except RuntimeError:
        raise ModelError(misfit_message(path, arch, n_outputs, state, expected, notes)) from None
    return module, notes, channels


def _whole_module(module: torch.nn.Module, arch: str) -> tuple[torch.nn.Module, list[str], int]:
    """A pickled model as it is, less a final sigmoid (the logit before it is explained)."""
    notes = ["whole pickled model"]
    for parent in module.modules():
        for name, child in parent.named_children():
            if isinstance(child, torch.nn.Sequential) and len(child) and isinstance(child[-1], torch.nn.Sigmoid) \
                    and any(isinstance(m, torch.nn.Linear) for m in child):
                setattr(parent, name, torch.nn.Sequential(*list(child)[:-1]))
                notes.append(f"sequential-head: removed the Sigmoid ending '{name}', so the logit before it is explained")
    convs = [m for m in module.modules() if isinstance(m, torch.nn.Conv2d)]
    return module, notes, convs[0].in_channels if convs else 3


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
        raise ModelError("torchxrayvision is not installed: `pip install torchxrayvision` to use its models") from None
    urls = xrv.models.model_urls
    if weights not in urls:
        raise UnknownNameError("torchxrayvision weights", weights, sorted(urls))
    expected = Path(cache_dir) / Path(urls[weights]["weights_url"]).name
    if not expected.is_file():
        raise ModelError(f"torchxrayvision weights {weights!r} not found: download "
                         f"{urls[weights]['weights_url']} once and save it as {expected} (no download happens here)")
    if weights.startswith("resnet"):
        module = xrv.models.ResNet(weights=weights, cache_dir=str(Path(cache_dir)))
    else:
        module = xrv.models.DenseNet(weights=weights, cache_dir=str(Path(cache_dir)))
    module.op_threshs = None  # logits, not the operating-point-normalised probability
    labels = tuple(t if t else f"(unused {k})" for k, t in enumerate(module.targets))
    res = int(urls[weights].get("input_resolution", 224))
    spec = ModelSpec(name=f"xrv-{weights}", arch=f"xrv-{weights.split('-')[0]}", labels=labels, input_size=res,
                     mean=XRV_NORMALIZATION[0], std=XRV_NORMALIZATION[1], cam_layer="features.norm5"
                     if weights.startswith("densenet") else "model.layer4",
                     card={"source": "torchxrayvision", "weights": weights, "weights_path": str(expected)})
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
    spec = first.with_(name=name, arch="ensemble", cam_layer="", card={"members": [m.spec.name for m in models]})
    return LoadedModel(Ensemble([m.module for m in models]).eval(), spec, models[0].device)
