"""Precompute stages that store saliency maps (run by the demo build and ``precompute``).

What is stored is each method's raw native map: the 7×7 CAM grid, the input-resolution
gradient map, or the occlusion window-score grid with its geometry (``kind="occlusion_grid"``,
rebuilt per pixel by :func:`native_map`). Parameters are stored as JSON and keyed canonically,
so the same method with other parameters (an occlusion sweep) sits beside it.

Which cases: every (image, finding) pair of the split whose ground truth is positive. CAMs are
cheap and computed for every image × finding (negatives too, for the full-dataset conventions);
the costly methods take a deterministic sample of positive pairs per label
(``MapPlan``), because a 2-core CPU cannot do IG and occlusion for hundreds of cases in the
demo's ten-minute budget — ``python -m cxrxai demo --full`` lifts the sampling.

The plan comes from the explainer registry (:mod:`cxrxai.explain.registry`): ``cost="cheap"``
methods are stored for every image × finding (through their ``all_labels`` closed form when the
model allows it), ``costly`` ones for ``plan_per_label`` positives per finding, each with its
stored parameters (every non-runtime parameter at its default unless the plan says otherwise).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from ..errors import UnknownNameError
from ..explain import explain_batch, get, method_names, native_map
from ..labels import NO_FINDING
from ..models.inference import predict_logits
from ..models.spec import preprocess
from ..store import params_key
from .stages import stage

__all__ = [
    "DEMO_PLAN",
    "SWEEP",
    "MapConfig",
    "MapPlan",
    "available",
    "cam_stage",
    "compute_unit",
    "default_config",
    "image_rank",
    "maps_stage",
    "native_map",
    "planned",
    "resolved_params",
    "run_units",
    "sample_pairs",
    "store_values",
    "positive_pairs",
    "sweep_stage",
]


@dataclass(frozen=True)
class MapConfig:
    method: str
    params: dict
    per_label: int | None = None  # None: every positive pair; n: a deterministic sample of n per label
    #: The sample this one grows to in a later round: a method that explains every finding of an image
    #: in one computation (occlusion) computes the image's findings of that sample now, not the image
    #: again later.
    ahead: int | None = None


#: The occlusion patch/stride grid of the thesis (Table S4, Fig. 3).
SWEEP = ((32, 32), (32, 16), (16, 16), (16, 8), (8, 8))


def planned(method: str, per_label: int | None = None) -> MapConfig:
    """A method's stored-map configuration: its stored parameters at their defaults (occlusion: the
    thesis's 32/16 with a black baseline), on ``per_label`` positives per finding (``None``: all)."""
    return MapConfig(method, get(method).stored_defaults, per_label)


def _costly_defaults() -> tuple[MapConfig, ...]:
    return tuple(planned(m, get(m).plan_per_label) for m in method_names(cost="costly")
                 if get(m).plan_per_label is not None)


@dataclass(frozen=True)
class MapPlan:
    """Which maps a build stores: ``cams`` (cheap methods) for every image × finding of ``split``,
    ``maps`` for samples of positives, the occlusion ``sweep`` on one set of ``sweep_cases`` positives."""

    split: str | None = "test"  # None: every image of the dataset
    cams: tuple[str, ...] = field(default_factory=lambda: tuple(method_names(cost="cheap")))
    maps: tuple[MapConfig, ...] = field(default_factory=_costly_defaults)
    sweep: tuple[tuple[int, int], ...] = SWEEP
    sweep_cases: int = 1
    seed: int = 0

    def full(self) -> MapPlan:
        """The same plan without sampling (hours on a CPU, minutes on a GPU)."""
        return MapPlan(self.split, self.cams, tuple(MapConfig(m.method, m.params, None) for m in self.maps),
                       self.sweep, 10**9, self.seed)


#: The plan of the explainers registered when this module was imported (:class:`MapPlan` () asks
#: the registry again: a build uses that, so a method registered later is planned too).
DEMO_PLAN = MapPlan()
default_config = planned


def positive_pairs(
    writer, dataset: str, split: str | None, labels, *, positive_only: bool = True
) -> pd.DataFrame:
    """(image_id, label) pairs of the split (``None``: every split; findings only), by default those whose ground truth
    is positive; ``positive_only=False`` gives every image × finding (the full-dataset view)."""
    imgs = writer.images(dataset=dataset, split=split)[["image_id"]]
    wide = writer.labels_wide(dataset=dataset)
    long = wide.reset_index().melt(id_vars="image_id", var_name="label", value_name="value")
    keep = long["label"].isin(labels) & (long["label"] != NO_FINDING)
    if positive_only:
        keep &= long["value"] == 1
    return (
        long[keep]
        .merge(imgs, on="image_id")[["image_id", "label"]]
        .sort_values(["label", "image_id"])
        .reset_index(drop=True)
    )


def available(ctx, pairs: pd.DataFrame) -> pd.DataFrame:
    """Pairs whose image could be decoded (all of them for the demo)."""
    ids = ctx.options.get("image_ids")
    return pairs if ids is None else pairs[pairs.image_id.isin(set(ids))]


def image_rank(image_ids, seed: int) -> np.ndarray:
    """Each image's place in one seeded random order of all images: a 64-bit hash of (seed, image id),
    so an image keeps its place when others are added to or dropped from the dataset (a sample drawn
    from the order stays the same where it can)."""
    return np.array([int.from_bytes(hashlib.blake2b(f"{seed}\x00{i}".encode(), digest_size=8).digest(), "big")
                     for i in image_ids], dtype=np.uint64)


def _ordered(pairs: pd.DataFrame, seed: int) -> pd.DataFrame:
    """``pairs`` sorted by label, then by :func:`image_rank` of their image, with ``_rank`` and ``_k``
    (the pair's place among its label's pairs)."""
    out = pairs.assign(_rank=image_rank(pairs.image_id, seed)).sort_values(["label", "_rank", "image_id"])
    return out.assign(_k=out.groupby("label").cumcount())


def sample_pairs(pairs: pd.DataFrame, per_label: int | None, seed: int) -> pd.DataFrame:
    """``per_label`` (image_id, label) pairs of each label: the first of its pairs in one seeded random
    order of the images (:func:`image_rank`), ``None``: every pair.

    For each label this is a uniform random sample of its pairs, as independent draws would be, but
    the labels share one order: an image drawn for one finding is drawn for its other findings too
    whenever they still need cases, so methods that explain every output of an image in one
    computation (occlusion) cost fewer images (the demo's 30 per finding, seed 0: 148 test images
    instead of 196 with a draw per finding; 10 per finding: 52 instead of 71), and a smaller sample
    is contained in a larger one (the build grows its evidence in rounds without discarding a case)."""
    if per_label is None or pairs.empty:
        return pairs
    chosen = _ordered(pairs, seed)
    chosen = chosen[chosen._k < per_label]
    return chosen[["image_id", "label"]].sort_values(["label", "image_id"]).reset_index(drop=True)


def resolved_params(method: str, params: dict, model) -> dict:
    """Stored parameters: the method's stored defaults updated by ``params``, the CAM layer from
    the model spec, and the input geometry for occlusion grids (needed to rebuild them)."""
    meth = get(method)
    out = {**meth.stored_defaults, **meth.check(params)}
    if meth.layer and out.get("layer") is None:
        out["layer"] = model.spec.cam_layer
    if meth.kind == "occlusion_grid":
        out.update(height=model.spec.input_size, width=model.spec.input_size)
    return out


def _compute_params(method: str, stored: dict) -> dict:
    return {k: v for k, v in stored.items() if k in get(method).defaults}


def store_values(
    model, x: torch.Tensor, targets: list[int], method: str, stored: dict
) -> list[tuple[np.ndarray, str]]:
    """The native values a build stores for each target of one image and their kind (see the
    registry's ``store``): one computation for all of them where the method has one (occlusion)."""
    meth, params = get(method), _compute_params(method, stored)
    if meth.store is not None:
        return meth.store(model, x, list(targets), params)
    return [(explain_batch(model, x, [t], method, **params)[0], meth.kind) for t in targets]


def _missing(writer, model_id: str, method: str, key: str, pairs: pd.DataFrame) -> pd.DataFrame:
    have = writer.map_index(model_id=model_id, method=method)
    if have.empty:
        return pairs
    done = set(zip(have.loc[have.params_key == key, "image_id"], have.loc[have.params_key == key, "label"]))
    return pairs[[(i, lab) not in done for i, lab in zip(pairs.image_id, pairs.label)]]


def _row(model, image_id, label, method, params, kind, values, seconds):
    return {
        "model_id": model.spec.name,
        "image_id": image_id,
        "label": label,
        "method": method,
        "params": params,
        "target": params.get("output", "logit"),
        "kind": kind,
        "values": values,
        "seconds": seconds,
        "device": model.device.type,
    }


@stage("cams", reads=("predictions",), writes=("maps",), uses={"plan": "maps"},
       help="the cheap explainers (CAMs) for every image × finding of the split")
def cam_stage(ctx, plan: MapPlan | None = None) -> dict:
    """The cheap methods (Grad-CAM, Grad-CAM++) for every image × finding of the split (positives and
    negatives, so the full-dataset conventions can be scored); one pass per image for all labels
    where the method has a closed form for the model (DenseNet)."""
    plan = plan or MapPlan()
    model = ctx.model
    pairs = available(
        ctx, positive_pairs(ctx.writer, ctx.dataset, plan.split, model.spec.labels, positive_only=False)
    )
    params = {m: resolved_params(m, {}, model) for m in plan.cams}
    todo = {m: _missing(ctx.writer, model.spec.name, m, params_key(params[m]), pairs) for m in plan.cams}
    images = sorted(set().union(*[set(t.image_id) for t in todo.values()]))
    wanted = {m: t.groupby("image_id")["label"].apply(list).to_dict() for m, t in todo.items()}
    t0 = time.monotonic()
    units = [
        {
            "kind": "cams",
            "ids": images[start : start + 16],
            "methods": {
                m: {
                    "params": params[m],
                    "wanted": {i: wanted[m].get(i, []) for i in images[start : start + 16]},
                }
                for m in plan.cams
            },
        }
        for start in range(0, len(images), 16)
    ]
    title = " / ".join(get(m).title for m in plan.cams)
    closed = run_units(ctx, units, title)
    return {"images": len(images), "pairs": len(pairs), "closed_form": closed,
            "seconds_per_image": round((time.monotonic() - t0) / max(1, len(images)), 3)}


def run_units(ctx, units: list[dict], title: str) -> bool | None:
    """Compute ``units`` (see :func:`compute_unit`) and store their rows: on the build's engine
    (``ctx.options["engine"]``, e.g. Ray) or here, one unit after the other. Returns whether every
    CAM unit used its closed form (False when there were none; None when the engine computed them)."""
    record_defaults(ctx.writer, ctx.model)
    engine = ctx.options.get("engine")
    if engine is not None:
        engine.run(ctx, units, title)
        return None
    closed, done, total = [], 0, sum(unit_size(u) for u in units)
    for unit in units:
        rows, info = compute_unit(ctx.model, ctx.load_images, unit)
        ctx.writer.put_maps(rows)
        closed += info.get("closed_form", [])
        done += unit_size(unit)
        ctx.progress(title, done, total)
        ctx.maybe_publish()
    return all(closed) if closed else False


def default_settings(model) -> dict[str, str]:
    """Each explainer's stored parameters at its defaults for ``model`` (a params_key per method)."""
    return {m: params_key(resolved_params(m, {}, model)) for m in method_names()}


def record_defaults(writer, model) -> None:
    """Note each explainer's default setting for ``model`` in the store, so reports score it (and
    not, say, a sweep setting with as many maps) without loading the model."""
    writer.set_meta(
        f"default_settings:{model.spec.name}", json.dumps(default_settings(model), sort_keys=True)
    )


def unit_size(unit: dict) -> int:
    """Images of a CAM unit, maps of a map unit, else 1: what progress counts."""
    if unit["kind"] == "cams":
        return len(unit["ids"])
    return len(unit["labels"]) if unit["kind"] == "map" else 1


def unit_image_ids(unit: dict) -> list[str]:
    """The images a unit of work reads."""
    return [unit["image_id"]] if unit["kind"] == "map" else list(unit["ids"])


def map_units(todo: pd.DataFrame, method: str, params: dict) -> list[dict]:
    """Units of work for the (image_id, label) pairs in ``todo``: one per image with all its labels
    where one computation serves them all (the registry's ``per_image``), else one per pair."""
    if get(method).per_image:
        groups = todo.groupby("image_id", sort=True)["label"].apply(list).items()
    else:
        groups = ((i, [lab]) for i, lab in todo.itertuples(index=False))
    return [{"kind": "map", "image_id": image_id, "labels": labels, "method": method, "params": params}
            for image_id, labels in groups]


def compute_unit(model, load_images, unit: dict) -> tuple[list[dict], dict]:
    """The map rows of one unit of work, the same code whichever engine runs it: ``cams`` (the
    cheap methods for ``ids`` × each method's wanted labels, one batch) or ``map`` (one (image,
    label) pair of a costly method with its stored ``params``)."""
    if unit["kind"] == "cams":
        ids = list(unit["ids"])
        x = preprocess(np.asarray(load_images(ids)), model.spec).to(model.device)
        rows, closed = [], []
        for m, spec in unit["methods"].items():
            got = _dense_maps(model, x, ids, m, spec["params"], spec["wanted"])
            closed.append(got.pop("closed_form"))
            rows += [_row(model, image_id, label, m, spec["params"], get(m).kind, values, per)
                     for (image_id, label), (values, per) in got.items()]
        return rows, {"closed_form": closed}
    if unit["kind"] == "map":
        x = preprocess(np.asarray(load_images([unit["image_id"]])), model.spec).to(model.device)
        labels = list(unit["labels"])
        t = time.perf_counter()
        got = store_values(
            model, x, [model.spec.label_index(lab) for lab in labels], unit["method"], unit["params"]
        )
        seconds = (time.perf_counter() - t) / (1 if get(unit["method"]).per_image else len(labels))
        return [_row(model, unit["image_id"], lab, unit["method"], unit["params"], kind, values, seconds)
                for lab, (values, kind) in zip(labels, got)], {}
    if unit["kind"] == "predictions":
        logits = predict_logits(model, load_images(list(unit["ids"])))
        return [{"image_id": i, "logits": row} for i, row in zip(unit["ids"], logits)], {}
    raise UnknownNameError("unit kind", unit["kind"], ("cams", "map", "predictions"))


def _dense_maps(model, x: torch.Tensor, ids: list[str], method: str, stored: dict, wanted: dict) -> dict:
    """{(image_id, label): (map, seconds)} of ``method`` for the wanted labels of each image in ``x``."""
    meth, params = get(method), _compute_params(method, stored)
    labels = {i: wanted.get(i, []) for i in ids}
    n_maps = max(1, sum(len(v) for v in labels.values()))
    t = time.perf_counter()
    every = meth.all_labels(model, x, params) if meth.all_labels is not None else None
    out: dict = {"closed_form": every is not None}
    if every is not None:
        per = (time.perf_counter() - t) / n_maps
        for n, image_id in enumerate(ids):
            for label in labels[image_id]:
                out[image_id, label] = (every[n, model.spec.label_index(label)].numpy(), per)
        return out
    for n, image_id in enumerate(ids):
        labs = labels[image_id]
        if not labs:
            continue
        t = time.perf_counter()
        maps = explain_batch(model, x[n:n + 1].expand(len(labs), -1, -1, -1),
                             [model.spec.label_index(lab) for lab in labs], method, **params)
        per = (time.perf_counter() - t) / len(labs)
        out.update({(image_id, lab): (maps[k], per) for k, lab in enumerate(labs)})
    return out


@stage("maps", reads=("labels",), writes=("maps",), uses={"plan": "maps"},
       help="the costly explainers on sampled positives per finding")
def maps_stage(ctx, plan: MapPlan | None = None) -> dict:
    """The sampled costly methods (GradientSHAP, IG, occlusion as its window grid, ...)."""
    plan = plan or MapPlan()
    model = ctx.model
    pairs = available(ctx, positive_pairs(ctx.writer, ctx.dataset, plan.split, model.spec.labels))
    report = {}
    for cfg in plan.maps:
        params = resolved_params(cfg.method, cfg.params, model)
        chosen = sample_pairs(pairs, cfg.per_label, plan.seed)
        todo = _missing(ctx.writer, model.spec.name, cfg.method, params_key(params), chosen)
        if get(cfg.method).per_image and cfg.ahead is not None and not todo.empty:
            later = sample_pairs(pairs, cfg.ahead, plan.seed)
            later = later[later.image_id.isin(set(todo.image_id))]
            todo = _missing(ctx.writer, model.spec.name, cfg.method, params_key(params),
                            pd.concat([todo, later]).drop_duplicates().sort_values(["label", "image_id"]))
        t0 = time.monotonic()
        units = map_units(todo, cfg.method, params)
        run_units(ctx, units, f"{get(cfg.method).title} maps")
        report[cfg.method] = {
            "computed": len(todo),
            "sampled": len(chosen),
            "units": len(units),
            "seconds_per_map": round((time.monotonic() - t0) / len(todo), 3) if len(todo) else None,
        }
    return report


@stage("occlusion sweep", reads=("labels",), writes=("maps",), uses={"plan": "maps"}, analysis="sweep",
       then=("sweep scores",), help="occlusion patch/stride sweep on --cases positives (thesis Table S4)")
def sweep_stage(ctx, plan: MapPlan | None = None) -> dict:
    """The thesis's occlusion patch/stride sweep (Table S4) on one set of cases shared by every setting, timed."""
    plan = plan or MapPlan()
    model = ctx.model
    pairs = available(ctx, positive_pairs(ctx.writer, ctx.dataset, plan.split, model.spec.labels))
    cases = sweep_cases(pairs, plan.sweep_cases, plan.seed)
    report = {}
    for patch, stride in plan.sweep:
        params = resolved_params("occlusion", {"patch": patch, "stride": stride}, model)
        todo = _missing(ctx.writer, model.spec.name, "occlusion", params_key(params), cases)
        run_units(ctx, map_units(todo, "occlusion", params), f"occlusion sweep {patch}/{stride}")
        report[f"{patch}/{stride}"] = len(todo)
    return report


def sweep_cases(pairs: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """The sweep's one fixed set of ``n`` positive pairs shared by every patch/stride setting, each on
    its own image (the sweep's intervals resample cases, which must not share a film): findings take
    turns, each its next pair in the image order of :func:`sample_pairs` whose image no other case
    has, so every finding has a case before any has a second, and a smaller set is the start of a
    larger one."""
    order = _ordered(pairs, seed)
    queues = {lab: list(g.image_id) for lab, g in order.groupby("label", sort=True)}
    used, picks = set(), []
    while len(picks) < n and any(queues.values()):
        for lab, queue in queues.items():
            while queue and queue[0] in used:
                queue.pop(0)
            if queue and len(picks) < n:
                used.add(queue[0])
                picks.append((queue.pop(0), lab))
    return (
        pd.DataFrame(picks, columns=["image_id", "label"])
        .sort_values(["label", "image_id"])
        .reset_index(drop=True)
    )
