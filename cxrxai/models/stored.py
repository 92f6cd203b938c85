"""Reloading a model a store was built with, whatever way it came in.

A store records each model's spec (labels, input size, normalisation, explained output, card)
and the weights file it was read from. :func:`load_stored` turns that pair back into a
:class:`~cxrxai.models.registry.LoadedModel`, so the app's live explainer works on a store built
from our weights (``NAME.pt`` + ``NAME.json``), from another group's checkpoint
(``ARCH:CHECKPOINT[:LABELS]``) or from torchxrayvision weights alike.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from ..errors import ModelError, ModelIdentityError
from .registry import LoadedModel, load
from .spec import ModelSpec

__all__ = ["ModelIdentity", "load_stored", "model_for", "only_model", "refuse_other_weights"]


@dataclass(frozen=True)
class ModelIdentity:
    """Who a stored model is: its id and the sha256 of the weights its predictions and maps came from
    (``None``: imported predictions, or a store written before weights were hashed), as the ``models``
    table's ``weights_sha256`` holds it; read by :meth:`cxrxai.store.Store.model_identity`."""

    model_id: str
    weights_sha256: str | None
    weights_path: str | None

    @classmethod
    def of(cls, model_id: str, weights_sha256, weights_path) -> ModelIdentity:
        """From a ``models`` row's values (a missing one, NULL, NaN or empty, is ``None``)."""
        return cls(str(model_id), _known(weights_sha256), _known(weights_path))

    @property
    def short(self) -> str:
        """The hash as printed beside the name (12 hex digits), or why there is none."""
        return self.weights_sha256[:12] if self.weights_sha256 else "not recorded"


def _known(value) -> str | None:
    return None if value is None or pd.isna(value) or value == "" else str(value)


def refuse_other_weights(store, spec: ModelSpec, weights_path: str | None) -> None:
    """A :class:`ModelIdentityError` when ``store`` holds a model named ``spec.name`` read from other
    weights than ``spec.card["weights_sha256"]``: resuming would keep the other weights' predictions
    and maps under this model's name. Nothing to refuse for a new name, the same weights, or a stored
    row without a hash read from this very file (a store written before weights were hashed)."""
    given = spec.card.get("weights_sha256")
    if not given or spec.name not in set(store.models().get("model_id", [])):
        return
    stored = store.model_identity(spec.name)
    if stored.weights_sha256 == given or (stored.weights_sha256 is None and stored.weights_path is not None
                                          and stored.weights_path == weights_path):
        return
    was = (f"weights sha256 {stored.weights_sha256}" if stored.weights_sha256
           else "weights it never hashed (a store written before weights were hashed)")
    raise ModelIdentityError(
        f"{store.path} already holds a model {spec.name!r} with {was}, read from "
        f"{stored.weights_path or 'no weights file (imported predictions)'}; {weights_path or 'this model'} "
        f"has other weights, sha256 {given}. Its stored predictions and maps are the other weights', so "
        f"this run would pass for that model. Nothing was written: give this model a name of its own with "
        f"--model-name {spec.name}-{given[:8]}, or write to another --store (--fresh starts this one over)",
        stored=stored.weights_sha256, given=given)


def load_stored(spec: ModelSpec, weights_path: str | Path | None, *, device=None) -> LoadedModel:
    """The model of ``spec`` with the weights at ``weights_path`` (see the module docstring).

    Raises :class:`ModelError` when no weights path is known (imported predictions have no model)
    or the file is gone (the message says how to re-root the store at the file's new place), and
    :class:`ModelIdentityError` when the file now holds other weights than the stored hash: a live
    map would come from other weights than the stored predictions and maps.
    """
    model = _reload(spec, weights_path, device=device)
    stored, now = spec.card.get("weights_sha256"), model.spec.card.get("weights_sha256")
    if stored and now and stored != now:
        raise ModelIdentityError(
            f"the weights file of {spec.name!r}, {weights_path}, now holds other weights (sha256 {now}) than "
            f"the store's predictions and maps came from (sha256 {stored}); put those weights back, or if "
            f"they are now FILE: `python -m cxrxai reroot --store STORE --model {spec.name} --weights FILE`",
            stored=stored, given=now)
    return model


def _reload(spec: ModelSpec, weights_path: str | Path | None, *, device=None) -> LoadedModel:
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
    :class:`ModelError` listing the models): what a command without ``--model`` reads (``explain``,
    ``report``, ``export``) — never the first of several."""
    every = [str(m) for m in store.models().get("model_id", [])]
    ids = [m for m in every if store.predicted_image_ids(m)]
    if len(ids) == 1:
        return ids[0]
    if ids:
        listed = ", ".join(f"{m} (weights sha256 {store.model_identity(m).short})" for m in ids)
        raise ModelError(f"{store.path} holds {len(ids)} models with predictions: {listed}; choose one with "
                         f"--model (e.g. --model {ids[0]})")
    raise ModelError(f"no model of {store.path} has predictions (models: {', '.join(every) or 'none'}); fill "
                     "it with `python -m cxrxai precompute` or `import-predictions`")


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
