"""Build architectures and load/save weights with their :class:`ModelSpec` (the model card).

A weights file ``NAME.pt`` (a plain ``state_dict``, fp16 allowed, loadable with
``weights_only=True``) always sits beside ``NAME.json`` (the spec). Unknown architectures and
missing files raise :class:`~cxrxai.errors.ModelError` saying what exists.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ModelError, UnknownNameError
from .spec import ModelSpec

if TYPE_CHECKING:
    import torch
# torch and torchvision are imported where a model is built, loaded or saved: what only names the
# architectures (the command line's help, the store, a status read) starts in a fraction of the time

__all__ = ["ARCHITECTURES", "LoadedModel", "build", "load", "save", "sha256"]


def _densenet121(n: int) -> torch.nn.Module:
    import torchvision

    return torchvision.models.densenet121(weights=None, num_classes=n)


def _resnet(depth: int) -> Callable[[int], torch.nn.Module]:
    def make(n: int) -> torch.nn.Module:
        import torchvision

        return getattr(torchvision.models, f"resnet{depth}")(weights=None, num_classes=n)

    return make


def _inception_v3(n: int) -> torch.nn.Module:
    import torchvision

    return torchvision.models.inception_v3(weights=None, num_classes=n, aux_logits=False, init_weights=True)


#: arch key → (constructor taking the number of outputs, default Grad-CAM layer).
ARCHITECTURES: dict[str, tuple[Callable[[int], torch.nn.Module], str]] = {
    "densenet121": (_densenet121, "features.norm5"),
    "resnet18": (_resnet(18), "layer4"),
    "resnet50": (_resnet(50), "layer4"),
    "resnet152": (_resnet(152), "layer4"),
    "inception_v3": (_inception_v3, "Mixed_7c"),
}


@dataclass
class LoadedModel:
    """A model in eval mode, on a device, with its spec."""

    module: torch.nn.Module
    spec: ModelSpec
    device: torch.device

    def layer(self, dotted: str | None = None) -> torch.nn.Module:
        """The sub-module at a dotted path (default: the spec's CAM layer)."""
        path = dotted or self.spec.cam_layer
        try:
            return self.module.get_submodule(path)
        except AttributeError:
            names = [n for n, _ in self.module.named_modules() if n]
            raise UnknownNameError("layer", path, names[:12] + ["..."]) from None


def build(arch: str, n_outputs: int) -> torch.nn.Module:
    """A freshly initialised architecture with ``n_outputs`` logits."""
    if arch not in ARCHITECTURES:
        raise UnknownNameError("architecture", arch, ARCHITECTURES)
    return ARCHITECTURES[arch][0](n_outputs)


def save(module: torch.nn.Module, spec: ModelSpec, path: str | Path, *, half: bool = True) -> Path:
    """Write ``path`` (.pt state dict, fp16 by default) and its ``.json`` spec; returns the .pt."""
    import torch

    path = Path(path).with_suffix(".pt")
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: (v.half() if half and v.is_floating_point() else v) for k, v in module.state_dict().items()}
    torch.save(state, path)
    card = dict(spec.card, weights_sha256=sha256(path), weights_dtype="float16" if half else "float32")
    path.with_suffix(".json").write_text(spec.with_(card=card).to_json() + "\n")
    return path


def load(path: str | Path, *, device: str | torch.device | None = None) -> LoadedModel:
    """Load ``NAME.pt`` + ``NAME.json`` into an eval-mode fp32 model (channels_last)."""
    import torch

    path = Path(path).with_suffix(".pt")
    card = path.with_suffix(".json")
    for needed in (path, card):
        if not needed.is_file():
            raise ModelError(
                f"missing model file {needed}; a model needs both NAME.pt (weights) and NAME.json "
                "(spec) — build the demo model with `python -m cxrxai demo --train`"
            )
    spec = ModelSpec.from_json(card.read_text())
    spec = spec.with_(card={**spec.card, "weights_sha256": sha256(path)})  # the file's own, not the .json's
    module = build(spec.arch, len(spec.labels))
    state = torch.load(path, map_location="cpu", weights_only=True)
    try:
        module.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items()})
    except RuntimeError as err:
        raise ModelError(
            f"{path}: weights do not fit a {spec.arch} with {len(spec.labels)} outputs: {err}"
        ) from None
    dev = torch.device(device) if device is not None else best_device()
    module = module.eval().to(dev, memory_format=torch.channels_last)
    return LoadedModel(module, spec, dev)


def best_device() -> torch.device:
    """CUDA when present, else CPU."""
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def sha256(path: str | Path) -> str:
    """The file's sha256 (hex): a model's weights identity (:class:`~cxrxai.models.stored.ModelIdentity`)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
