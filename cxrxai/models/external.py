"""Models a research group already has: torchvision checkpoints, torchxrayvision weights,
ensembles — each loaded offline into a :class:`LoadedModel` with a complete spec.

* :func:`load_checkpoint` — DenseNet-121, ResNet-50/152, Inception-v3 (… any key of
  :data:`~cxrxai.models.registry.ARCHITECTURES`) from a ``state_dict`` file, or a whole pickled
  model when ``trust_pickle=True`` (unpickling runs code from the file: only for files you
  trust). Label order comes from ``labels=`` or a sidecar ``<file>.labels.json`` / ``.json``
  spec. ImageNet normalisation unless told otherwise.
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
from .registry import ARCHITECTURES, LoadedModel, best_device, build
from .spec import IMAGENET_MEAN, IMAGENET_STD, ModelSpec

__all__ = ["XRV_NORMALIZATION", "Ensemble", "load_checkpoint", "load_ensemble", "load_xrv"]

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


def load_checkpoint(path: str | Path, *, arch: str, labels=None, input_size: int | None = None,
                    mean=IMAGENET_MEAN, std=IMAGENET_STD, trust_pickle: bool = False, name: str | None = None,
                    device=None) -> LoadedModel:
    """A torchvision-architecture classifier from a checkpoint file (see the module docstring)."""
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
        module = obj
    else:
        state = obj.get("state_dict", obj.get("model", obj)) if isinstance(obj, dict) else obj
        state = {k.removeprefix("module."): v for k, v in state.items()}
        module = build(arch, len(labels))
        try:
            module.load_state_dict(state)
        except RuntimeError as err:
            raise ModelError(f"{path}: weights do not fit {arch} with {len(labels)} outputs: {err}") from None
    size = input_size or (299 if arch == "inception_v3" else 224)
    spec = ModelSpec(name=name or path.stem, arch=arch, labels=labels, input_size=size, mean=tuple(mean),
                     std=tuple(std), cam_layer=ARCHITECTURES[arch][1],
                     card={"weights_path": str(path), "source": "user checkpoint"})
    dev = torch.device(device) if device else best_device()
    return LoadedModel(module.float().eval().to(dev, memory_format=torch.channels_last), spec, dev)


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
