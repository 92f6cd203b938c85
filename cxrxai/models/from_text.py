"""A model named the way a user types it after ``--model``: one parser for every command.

``SPEC`` is one of

* ``WEIGHTS.pt`` — our own weights with their ``WEIGHTS.json`` spec beside them, or the bare
  name of one in the home's ``models/`` or of a shipped demo model (``demo-densenet121``, read
  where cxrxai is installed: :func:`~cxrxai.paths.named_model`);
* ``ARCH:CHECKPOINT[:LABELS.json]`` — another group's checkpoint for a torchvision
  architecture (:data:`~cxrxai.models.registry.ARCHITECTURES`), its labels from a JSON list
  (default: ``CHECKPOINT.labels.json`` or ``.json`` beside it);
* ``xrv:WEIGHT_NAME[@CACHE_DIR]`` — torchxrayvision weights read offline from ``CACHE_DIR``
  (default ``data_cache/xrv``).

:func:`load_model_text` returns the model and the weights file a store records, as an absolute
path (a relative one is taken from the current directory), so the app and ``explain`` reload the
same file from any working directory.
"""

from __future__ import annotations

from pathlib import Path

from .. import paths
from ..errors import ModelError
from .registry import ARCHITECTURES, LoadedModel, load

__all__ = ["MODEL_SPEC_HELP", "load_model_text", "model_files"]

MODEL_SPEC_HELP = ("weights.pt (with its .json) or a model's name (a shipped demo model, e.g. "
                   "demo-densenet121, or one trained into the cxrxai home), "
                   f"ARCH:CHECKPOINT[:LABELS.json] ({', '.join(ARCHITECTURES)}), "
                   "or xrv:WEIGHT_NAME[@CACHE_DIR]")


def load_model_text(text: str, *, input_size: int | None = None, name: str | None = None,
                    trust_pickle: bool = False, device=None) -> tuple[LoadedModel, str | None]:
    """The model ``text`` names (see the module docstring) and its absolute weights path.

    ``input_size``, ``name`` and ``trust_pickle`` apply to ``ARCH:CHECKPOINT`` (see
    :func:`~cxrxai.models.external.load_checkpoint`); the default name is the checkpoint's file
    name less its suffixes (``chexnet.pth.tar`` → ``chexnet``).
    """
    from .external import load_checkpoint, load_xrv, read_label_list

    if text.startswith("xrv:"):
        weights, _, cache = text[4:].partition("@")
        model = load_xrv(weights, cache_dir=paths.absolute(cache) if cache else paths.data_cache() / "xrv",
                         device=device)
        return model, model.spec.card.get("weights_path")
    arch, sep, rest = text.partition(":")
    if sep and arch in ARCHITECTURES:
        ckpt, _, labels = rest.partition(":")
        ckpt_path = paths.absolute(ckpt)
        names = read_label_list(labels) if labels else None
        model = load_checkpoint(ckpt_path, arch=arch, labels=names, input_size=input_size, name=name,
                                trust_pickle=trust_pickle, device=device)
        return model, str(ckpt_path)
    path = Path(text)
    named = path.suffix != ".pt" and not path.exists()  # a model's name
    path = paths.named_model(text) if named else paths.absolute(path)
    if named and not path.is_file():
        raise ModelError(f"no model named {text!r}: the names are {_model_names()} (the home's "
                         f"{paths.models_dir()} and the shipped demo models); or give a path to WEIGHTS.pt")
    return load(path, device=device), str(path.with_suffix(".pt"))


def _model_names() -> list[str]:
    """The names ``--model`` resolves: every ``NAME.pt`` with its ``NAME.json``, home or shipped."""
    folders = (paths.models_dir(), paths.shipped_models_dir())
    found = {p for folder in folders if folder.is_dir() for p in folder.glob("*.pt")}
    return sorted(p.stem for p in found if p.with_suffix(".json").is_file())


def model_files(text: str) -> list[Path]:
    """The files a ``--model`` SPEC names by path (checkpoint and labels file, or weights and their
    ``.json``), as typed, for the command line to check before any work
    (:func:`~cxrxai.paths.check_path`); none for a model's name or ``xrv:`` weights, whose own lookups
    say what is missing."""
    if text.startswith("xrv:"):
        return []
    arch, sep, rest = text.partition(":")
    if sep and arch in ARCHITECTURES:
        ckpt, _, labels = rest.partition(":")
        return [Path(ckpt)] + ([Path(labels)] if labels else [])
    path = Path(text)
    if path.suffix != ".pt" and not path.exists():  # a model's name
        return []
    return [path.with_suffix(".pt"), path.with_suffix(".json")] if not path.is_dir() else [path]
