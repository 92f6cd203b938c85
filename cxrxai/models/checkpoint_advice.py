"""What a checkpoint says about itself, and the way out when it cannot be read as given.

* :func:`labels_in_checkpoint` — the label order a checkpoint carries: PyTorch Lightning saves a
  module's ``save_hyperparameters()`` under ``hyper_parameters`` (``labels``, ``class_names``,
  ``pathologies``… as its ``__init__`` named them), others save a list beside the ``state_dict``.
* :func:`unreadable_message` — why ``torch.load`` refused a file, in a sentence: a whole pickled
  model refused without ``trust_pickle`` names the ``--trust-pickle`` flag and the keyword; one
  whose class lived in the training script (``__main__``, or a module not importable here) says
  that unpickling needs that class and gives the two lines that export a state dict instead.
  torch's terminal colour codes are removed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import torch

from .checkpoints import model_id_from_file

__all__ = ["LABEL_KEYS", "hyper_parameter_keys", "labels_in_checkpoint", "strip_ansi", "unreadable_message"]

#: Names a training module gives its label list (Lightning's ``hyper_parameters`` keep the
#: ``__init__`` argument names: CheXpert modules' ``tasks``, torchxrayvision's ``pathologies``).
LABEL_KEYS = ("labels", "label_names", "class_names", "classes", "pathologies", "tasks", "target_names",
              "findings")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_MISSING_ATTR = re.compile(r"Can't get attribute '([\w.]+)' on <module '([\w.]+)'")


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (torch's messages embed bold on and off).

    >>> strip_ansi("\\x1b[1mdo this\\x1b[0m only")
    'do this only'
    """
    return _ANSI.sub("", text)


def _names(value) -> tuple[str, ...] | None:
    ok = isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value)
    return tuple(value) if ok else None


def labels_in_checkpoint(obj, path) -> tuple[tuple[str, ...], str] | None:
    """The label names a loaded checkpoint ``obj`` holds and where, e.g.
    ``("…", "CKPT: hyper_parameters['class_names']")``; None when it holds none.

    Looked for under :data:`LABEL_KEYS` in ``hyper_parameters``, in a dict one level inside it
    (a config saved whole), then beside the weights; a key holding anything but a list of strings
    (``classes=14``) is passed over.
    """
    if not isinstance(obj, Mapping):
        return None
    hp = obj.get("hyper_parameters")
    places = []
    if isinstance(hp, Mapping):
        places.append(("hyper_parameters", hp))
        places += [(f"hyper_parameters[{k!r}]", v) for k, v in hp.items() if isinstance(v, Mapping)]
    places.append(("the checkpoint", obj))
    for where, found in places:
        for key in LABEL_KEYS:
            names = _names(found.get(key))
            if names:
                at = f"[{key!r}]" if where == "the checkpoint" else f"{where}[{key!r}]"
                return names, f"{path}: {at}"
    return None


def hyper_parameter_keys(obj) -> list[str]:
    """The keys of a checkpoint's ``hyper_parameters`` (empty when it has none)."""
    hp = obj.get("hyper_parameters") if isinstance(obj, Mapping) else None
    return [str(k) for k in hp] if isinstance(hp, Mapping) else []


def _pickled_classes(path: Path) -> list[str]:
    """The classes a torch zip checkpoint would unpickle beyond tensors (``module.Class``), the
    user's own first; empty for a file torch cannot list."""
    try:
        found = torch.serialization.get_unsafe_globals_in_checkpoint(path)
    except (ValueError, RuntimeError, OSError):
        return []
    return sorted(found, key=lambda g: g.split(".")[0] in ("torch", "torchvision", "collections", "builtins"))


def _export_recipe(path: Path, arch: str, cls: str) -> str:
    out = path.with_name(f"{model_id_from_file(path)}-state_dict.pt")
    return (f"export its weights once where {cls} is importable (in the training script): "
            f"`model = torch.load('{path}', weights_only=False)` then "
            f"`torch.save(model.state_dict(), '{out}')`, and load that file: "
            f"`--model {arch}:{out}:LABELS.json` "
            f"(from Python, load_checkpoint('{out}', arch='{arch}', labels=[...]))")


def _class_not_importable(path: Path, arch: str, err: BaseException) -> str | None:
    """The sentence for a trusted whole model whose class cannot be imported here, else None."""
    m = _MISSING_ATTR.search(str(err))
    if m:
        module, cls = m.group(2), f"{m.group(2)}.{m.group(1)}"
    elif isinstance(err, ModuleNotFoundError) and err.name:
        module = err.name
        cls = next((g for g in _pickled_classes(path) if g.startswith(module + ".")), f"a class of {module}")
    else:
        return None
    where = ("the training script run as a program (__main__), which no other program can import"
             if module.split(".")[-1] == "__main__" else f"module {module!r}, not importable here")
    return (f"{path} holds a whole pickled model of class {cls}: unpickling rebuilds it from that class, "
            f"which lived in {where}. Either make the class importable (run from the training code's "
            f"folder or put it on PYTHONPATH, with the class in a module of its own), or "
            + _export_recipe(path, arch, cls))


def unreadable_message(path: Path, err: BaseException, *, arch: str, trust_pickle: bool) -> str:
    """Why ``torch.load`` refused ``path`` and what to do (see the module docstring)."""
    if trust_pickle:
        text = _class_not_importable(path, arch, err)
        if text:
            return text
    classes = _pickled_classes(path) if not trust_pickle else []
    if classes:
        shown = ", ".join(classes[:3]) + (f" and {len(classes) - 3} more" if len(classes) > 3 else "")
        return (f"cannot read {path} as weights alone: it holds pickled objects ({shown}), a whole model "
                "saved with torch.save(model) or settings saved beside the weights, and loading them runs "
                "code from the file. If you trust the file, pass --trust-pickle on the command line "
                f"(trust_pickle=True from Python); or {_export_recipe(path, arch, classes[0])}")
    return f"cannot read {path}: {strip_ansi(str(err)).strip()}"
