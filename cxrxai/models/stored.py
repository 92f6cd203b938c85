"""Reloading a model a store was built with, whatever way it came in.

A store records each model's spec (labels, input size, normalisation, explained output, card)
and the weights file it was read from. :func:`load_stored` turns that pair back into a
:class:`~cxrxai.models.registry.LoadedModel`, so the app's live explainer works on a store built
from our weights (``NAME.pt`` + ``NAME.json``), from another group's checkpoint
(``ARCH:CHECKPOINT[:LABELS]``) or from torchxrayvision weights alike.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..errors import ModelError
from .registry import LoadedModel, load
from .spec import ModelSpec

__all__ = ["load_stored", "model_for", "only_model"]


def load_stored(spec: ModelSpec, weights_path: str | Path | None, *, device=None) -> LoadedModel:
    """The model of ``spec`` with the weights at ``weights_path`` (see the module docstring).

    Raises :class:`ModelError` when no weights path is known (imported predictions have no model)
    or the file is gone (the message says how to re-root the store at the file's new place).
    """
    from .external import load_checkpoint, load_xrv

    if spec.arch == "imported":
        raise ModelError(
            f"{spec.name!r} holds predictions imported from elsewhere; there is no model to explain"
        )
    if not weights_path:
        raise ModelError(f"the store does not say where {spec.name!r}'s weights are; rebuild it with --model")
    path = Path(weights_path)
    source = spec.card.get("source")
    expected = path if source == "user checkpoint" else path.with_suffix(".pt")
    if source != "torchxrayvision" and not expected.is_file():
        raise ModelError(f"the weights file of {spec.name!r}, {path}, does not exist (moved or renamed?); "
                         "if it is now NEWFILE, re-root the store: "
                         f"`python -m cxrxai reroot --store STORE --model {spec.name} --weights NEWFILE`")
    if source == "torchxrayvision":
        model = load_xrv(spec.card["weights"], cache_dir=path.parent, device=device)
    elif source == "user checkpoint":
        return load_checkpoint(
            path,
            arch=spec.arch,
            labels=spec.labels,
            input_size=spec.input_size,
            mean=spec.mean,
            std=spec.std,
            name=spec.name,
            device=device,
            trust_pickle=bool(spec.card.get("trust_pickle", False)),
        )
    else:
        model = load(path, device=device)
    return _named_as_stored(model, spec)


def _named_as_stored(model: LoadedModel, spec: ModelSpec) -> LoadedModel:
    """A model whose outputs the precompute renamed to a dataset's labels gets those names back
    (the file knows the model's own names, the store the dataset's)."""
    if model.spec.labels == spec.labels or list(model.spec.labels) != spec.card.get("model_outputs"):
        return model
    return replace(model, spec=model.spec.with_label_names(spec.labels))


def only_model(store) -> str:
    """The id of ``store``'s model with predictions, when there is exactly one (else a
    :class:`ModelError` naming them)."""
    ids = [m for m in store.models().get("model_id", []) if store.predicted_image_ids(m)]
    if len(ids) != 1:
        raise ModelError(f"the store has models with predictions {ids}; choose one with --model")
    return str(ids[0])


def model_for(text: str | None, store=None, *, input_size: int | None = None,
              trust_pickle: bool = False) -> LoadedModel:
    """The model a user names: with a ``store``, its model (``text`` = one of its model ids, or
    ``None`` for its only model with predictions), reloaded the way the store says it was built;
    else the model ``text`` names (:func:`~cxrxai.models.from_text.load_model_text`), or the demo
    model when ``text`` is ``None``."""
    from .. import paths
    from .from_text import load_model_text

    if store is not None and (text is None or text in set(store.models().get("model_id", []))):
        row = store.models().set_index("model_id").loc[text or only_model(store)]
        return load_stored(store.model_spec(row.name), row["weights_path"])
    if text is None:
        return load(paths.demo_model_path())
    return load_model_text(text, input_size=input_size, trust_pickle=trust_pickle)[0]
