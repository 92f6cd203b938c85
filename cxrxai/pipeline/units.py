"""Units of map work, and the one function that computes a unit whichever engine runs it (here,
one after the other, or on a Ray cluster): ``cams`` (the cheap methods for a batch of images),
``map`` (one image's labels of a costly method) and ``predictions``. A unit carries each setting's
stored parameters (plain JSON, as a remote worker receives them); :class:`Setting` turns them back
into the method's arguments.

A map's ``seconds`` are its computation's own time, and its ``timing`` names the clock
(:func:`pass_clock`): on a CPU the process's CPU time over the pass (every thread's, so about
cores × wall time on an idle machine; time spent waiting on a busy machine is not in it), elsewhere
the wall time of the pass (an accelerator's work is not the host's CPU time)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import UnknownNameError
from ..explain import Setting, explain_batch
from ..models.spec import preprocess

if TYPE_CHECKING:
    import torch

__all__ = ["compute_unit", "map_units", "pass_clock", "store_values", "unit_image_ids", "unit_size"]


def pass_clock(device) -> tuple[str, Callable[[], float]]:
    """The clock a map on ``device`` is timed with, and its name as stored in ``timing``: ``cpu``
    (:func:`time.process_time`, all threads) on a CPU, ``wall`` (:func:`time.perf_counter`) elsewhere."""
    if getattr(device, "type", device) == "cpu":
        return "cpu", time.process_time
    return "wall", time.perf_counter


def unit_size(unit: dict) -> int:
    """Images of a CAM unit, maps of a map unit, else 1: what progress counts."""
    if unit["kind"] == "cams":
        return len(unit["ids"])
    return len(unit["labels"]) if unit["kind"] == "map" else 1


def unit_image_ids(unit: dict) -> list[str]:
    """The images a unit of work reads."""
    return [unit["image_id"]] if unit["kind"] == "map" else list(unit["ids"])


def map_units(todo: pd.DataFrame, setting: Setting) -> list[dict]:
    """Units of work for the (image_id, label) pairs in ``todo``: one per image with all its labels
    where one computation serves them all (the registry's ``per_image``), else one per pair."""
    if setting.method_.per_image:
        groups = todo.groupby("image_id", sort=True)["label"].apply(list).items()
    else:
        groups = ((i, [lab]) for i, lab in todo.itertuples(index=False))
    return [{"kind": "map", "image_id": image_id, "labels": labels, "method": setting.method,
             "params": dict(setting.params)} for image_id, labels in groups]


def compute_unit(model, load_images, unit: dict) -> tuple[list[dict], dict]:
    """The map rows of one unit of work, the same code whichever engine runs it: ``cams`` (the
    cheap methods for ``ids`` × each method's wanted labels, one batch), ``map`` (one image's
    labels of a costly method with its stored ``params``) or ``predictions``."""
    if unit["kind"] == "cams":
        return _cams_unit(model, load_images, unit)
    if unit["kind"] == "map":
        return _map_unit(model, load_images, unit)
    if unit["kind"] == "predictions":
        from ..models.inference import predict_logits  # torch: loaded to compute, not to plan

        logits = predict_logits(model, load_images(list(unit["ids"])))
        return [{"image_id": i, "logits": row} for i, row in zip(unit["ids"], logits)], {}
    raise UnknownNameError("unit kind", unit["kind"], ("cams", "map", "predictions"))


def _cams_unit(model, load_images, unit: dict) -> tuple[list[dict], dict]:
    ids = list(unit["ids"])
    x = preprocess(np.asarray(load_images(ids)), model.spec).to(model.device)
    rows, closed, memo = [], [], {}  # memo: what the methods of this batch share (one closed-form pass)
    for m, spec in unit["methods"].items():
        setting = Setting.stored(m, spec["params"])
        got = _dense_maps(model, x, ids, setting, spec["wanted"], memo)
        closed.append(got.pop("closed_form"))
        rows += [_row(model, image_id, label, setting, setting.method_.kind, values, per)
                 for (image_id, label), (values, per) in got.items()]
    return rows, {"closed_form": closed}


def _map_unit(model, load_images, unit: dict) -> tuple[list[dict], dict]:
    setting = Setting.stored(unit["method"], unit["params"])
    x = preprocess(np.asarray(load_images([unit["image_id"]])), model.spec).to(model.device)
    labels = list(unit["labels"])
    timing, clock = pass_clock(model.device)
    t = clock()
    got = store_values(model, x, [model.spec.label_index(lab) for lab in labels], setting)
    seconds = (clock() - t) / (1 if setting.method_.per_image else len(labels))
    return [_row(model, unit["image_id"], lab, setting, kind, values, (seconds, timing))
            for lab, (values, kind) in zip(labels, got)], {}


def _dense_maps(model, x: torch.Tensor, ids: list[str], setting: Setting, wanted: dict, memo: dict) -> dict:
    """{(image_id, label): (map, (seconds, timing))} of ``setting`` for the wanted labels of each
    image in ``x``."""
    meth, params = setting.method_, setting.kwargs()
    labels = {i: wanted.get(i, []) for i in ids}
    n_maps = max(1, sum(len(v) for v in labels.values()))
    timing, clock = pass_clock(model.device)
    t = clock()
    every = meth.all_labels(model, x, params, memo) if meth.all_labels is not None else None
    out: dict = {"closed_form": every is not None}
    if every is not None:
        per = ((clock() - t) / n_maps, timing)
        for n, image_id in enumerate(ids):
            for label in labels[image_id]:
                out[image_id, label] = (every[n, model.spec.label_index(label)].numpy(), per)
        return out
    for n, image_id in enumerate(ids):
        labs = labels[image_id]
        if not labs:
            continue
        t = clock()
        maps = explain_batch(model, x[n:n + 1].expand(len(labs), -1, -1, -1),
                             [model.spec.label_index(lab) for lab in labs], setting.method, **params)
        per = ((clock() - t) / len(labs), timing)
        out.update({(image_id, lab): (maps[k], per) for k, lab in enumerate(labs)})
    return out


def _row(model, image_id, label, setting: Setting, kind, values, timed: tuple[float, str]):
    seconds, timing = timed
    return {
        "model_id": model.spec.name,
        "image_id": image_id,
        "label": label,
        "method": setting.method,
        "params": dict(setting.params),
        "target": setting.params.get("output", "logit"),
        "kind": kind,
        "values": values,
        "seconds": seconds,
        "timing": timing,
        "device": model.device.type,
    }


def store_values(
    model, x: torch.Tensor, targets: list[int], setting: Setting
) -> list[tuple[np.ndarray, str]]:
    """The native values a build stores for each target of one image and their kind (see the
    registry's ``store``): one computation for all of them where the method has one (occlusion)."""
    meth = setting.method_
    if meth.store is not None:
        return meth.store(model, x, list(targets), setting.kwargs())
    return [(explain_batch(model, x, [t], setting.method, **setting.kwargs())[0], meth.kind) for t in targets]
