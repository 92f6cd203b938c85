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
stored parameters: the plan's parameters resolved for the model by
:class:`~cxrxai.explain.Setting`, whose key the store holds them under.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import pandas as pd

from ..explain import Setting, get, method_names, native_map
from ..store import SWEEP_PLAN_META
from .sampling import available, image_rank, positive_pairs, sample_pairs, sweep_cases
from .stages import stage
from .units import compute_unit, map_units, store_values, unit_image_ids, unit_size

__all__ = [
    "SWEEP",
    "MapConfig",
    "MapPlan",
    "available",
    "cam_stage",
    "compute_unit",
    "default_settings",
    "image_rank",
    "map_units",
    "maps_stage",
    "native_map",
    "planned",
    "positive_pairs",
    "run_units",
    "sample_pairs",
    "store_values",
    "sweep_cases",
    "sweep_stage",
    "unit_image_ids",
    "unit_size",
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


def _missing(writer, model_id: str, setting: Setting, pairs: pd.DataFrame) -> pd.DataFrame:
    """The pairs of ``pairs`` without a stored map of ``setting``."""
    have, key = writer.map_index(model_id=model_id, method=setting.method), setting.key
    if have.empty:
        return pairs
    done = set(zip(have.loc[have.params_key == key, "image_id"], have.loc[have.params_key == key, "label"]))
    return pairs[[(i, lab) not in done for i, lab in zip(pairs.image_id, pairs.label)]]


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
    settings = {m: Setting.of(m, spec=model.spec) for m in plan.cams}
    todo = {m: _missing(ctx.writer, model.spec.name, settings[m], pairs) for m in plan.cams}
    images = sorted(set().union(*[set(t.image_id) for t in todo.values()]))
    wanted = {m: t.groupby("image_id")["label"].apply(list).to_dict() for m, t in todo.items()}
    t0 = time.monotonic()
    units = [
        {
            "kind": "cams",
            "ids": images[start : start + 16],
            "methods": {
                m: {
                    "params": dict(settings[m].params),
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
    return {m: Setting.of(m, spec=model.spec).key for m in method_names()}


def record_defaults(writer, model) -> None:
    """Note each explainer's default setting for ``model`` in the store, so reports score it (and
    not, say, a sweep setting with as many maps) without loading the model."""
    writer.set_meta(
        f"default_settings:{model.spec.name}", json.dumps(default_settings(model), sort_keys=True)
    )


@stage("maps", reads=("labels",), writes=("maps",), uses={"plan": "maps"},
       help="the costly explainers on sampled positives per finding")
def maps_stage(ctx, plan: MapPlan | None = None) -> dict:
    """The sampled costly methods (GradientSHAP, IG, occlusion as its window grid, ...)."""
    plan = plan or MapPlan()
    model = ctx.model
    pairs = available(ctx, positive_pairs(ctx.writer, ctx.dataset, plan.split, model.spec.labels))
    report = {}
    for cfg in plan.maps:
        setting = Setting.of(cfg.method, cfg.params, spec=model.spec)
        chosen = sample_pairs(pairs, cfg.per_label, plan.seed)
        todo = _missing(ctx.writer, model.spec.name, setting, chosen)
        if get(cfg.method).per_image and cfg.ahead is not None and not todo.empty:
            later = sample_pairs(pairs, cfg.ahead, plan.seed)
            later = later[later.image_id.isin(set(todo.image_id))]
            todo = _missing(ctx.writer, model.spec.name, setting,
                            pd.concat([todo, later]).drop_duplicates().sort_values(["label", "image_id"]))
        t0 = time.monotonic()
        units = map_units(todo, setting)
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
    """The thesis's occlusion patch/stride sweep (Table S4) on one set of cases shared by every
    setting, timed."""
    plan = plan or MapPlan()
    model = ctx.model
    pairs = available(ctx, positive_pairs(ctx.writer, ctx.dataset, plan.split, model.spec.labels))
    cases = sweep_cases(pairs, plan.sweep_cases, plan.seed)
    # the plan first: an interrupted sweep then says which settings lack how many maps
    ctx.writer.set_meta(SWEEP_PLAN_META.format(model_id=model.spec.name),
                        json.dumps({"cases": len(cases), "settings": [list(s) for s in plan.sweep]}))
    report = {}
    for patch, stride in plan.sweep:
        setting = Setting.of("occlusion", {"patch": patch, "stride": stride}, spec=model.spec)
        todo = _missing(ctx.writer, model.spec.name, setting, cases)
        run_units(ctx, map_units(todo, setting), f"occlusion sweep {patch}/{stride}")
        report[f"{patch}/{stride}"] = len(todo)
    return report


