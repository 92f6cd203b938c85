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
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ..labels import NO_FINDING
from ..models.spec import preprocess
from ..store import StoredMap, params_key
from . import explain_batch
from ._common import baseline_tensor
from .cam import densenet_cams, is_densenet_head
from .occlusion import occlusion_grid, rebuild_map

__all__ = [
    "DEMO_PLAN",
    "SWEEP",
    "MapConfig",
    "MapPlan",
    "available",
    "cam_stage",
    "default_config",
    "maps_stage",
    "native_map",
    "positive_pairs",
    "sweep_stage",
]


@dataclass(frozen=True)
class MapConfig:
    method: str
    params: dict
    per_label: int | None = None  # None: every positive pair; n: a deterministic sample of n per label


#: The occlusion patch/stride grid of the thesis (Table S4, Fig. 3).
SWEEP = ((32, 32), (32, 16), (16, 16), (16, 8), (8, 8))


@dataclass(frozen=True)
class MapPlan:
    split: str | None = "test"  # None: every image of the dataset
    cams: tuple[str, ...] = ("gradcam", "gradcam++")
    maps: tuple[MapConfig, ...] = (
        MapConfig("gradientshap", {"baseline": "black", "n_samples": 5, "stdevs": 0.0, "seed": 0, "output": "logit",
                                   "reduce": "sum"}, per_label=4),
        MapConfig("ig", {"baseline": "black", "steps": 50, "integration": "gausslegendre", "output": "logit",
                         "reduce": "sum"}, per_label=1),
        MapConfig("occlusion", {"patch": 32, "stride": 16, "baseline": "black", "output": "logit"}, per_label=1),
    )
    sweep: tuple[tuple[int, int], ...] = SWEEP
    sweep_cases: int = 1
    seed: int = 0

    def full(self) -> MapPlan:
        """The same plan without sampling (hours on a CPU, minutes on a GPU)."""
        return MapPlan(self.split, self.cams, tuple(MapConfig(m.method, m.params, None) for m in self.maps),
                       self.sweep, 10**9, self.seed)


DEMO_PLAN = MapPlan()


def default_config(method: str, per_label: int | None = None) -> MapConfig:
    """A method's stored-map configuration: the demo plan's when it has one, else the method's
    defaults (occlusion: the thesis's 32/16 with a black baseline)."""
    for cfg in DEMO_PLAN.maps:
        if cfg.method == method:
            return MapConfig(method, cfg.params, per_label)
    return MapConfig(method, {}, per_label)


def native_map(stored: StoredMap) -> np.ndarray:
    """A stored map at its native resolution; occlusion grids are rebuilt per pixel exactly."""
    if stored.kind == "occlusion_grid":
        p = stored.params
        return rebuild_map(stored.values, int(p["patch"]), int(p["stride"]), int(p["height"]), int(p["width"]))
    return stored.values


def positive_pairs(writer, dataset: str, split: str | None, labels, *, positive_only: bool = True) -> pd.DataFrame:
    """(image_id, label) pairs of the split (``None``: every split; findings only), by default those whose ground truth
    is positive; ``positive_only=False`` gives every image × finding (the full-dataset view)."""
    imgs = writer.images(dataset=dataset, split=split)[["image_id"]]
    wide = writer.labels_wide(dataset=dataset)
    long = wide.reset_index().melt(id_vars="image_id", var_name="label", value_name="value")
    keep = long["label"].isin(labels) & (long["label"] != NO_FINDING)
    if positive_only:
        keep &= long["value"] == 1
    return long[keep].merge(imgs, on="image_id")[["image_id", "label"]].sort_values(["label", "image_id"]).reset_index(drop=True)


def available(ctx, pairs: pd.DataFrame) -> pd.DataFrame:
    """Pairs whose image could be decoded (all of them for the demo)."""
    ids = ctx.options.get("image_ids")
    return pairs if ids is None else pairs[pairs.image_id.isin(set(ids))]


def _sample(pairs: pd.DataFrame, per_label: int | None, seed: int) -> pd.DataFrame:
    if per_label is None:
        return pairs
    parts = [g.sample(n=min(per_label, len(g)), random_state=seed) for _, g in pairs.groupby("label", sort=True)]
    return pd.concat(parts).sort_values(["label", "image_id"]).reset_index(drop=True) if parts else pairs


def resolved_params(method: str, params: dict, model) -> dict:
    """Stored parameters: CAM layer from the model spec, image geometry for occlusion grids."""
    out = dict(params)
    if method in ("gradcam", "gradcam++"):
        out.setdefault("layer", model.spec.cam_layer)
        out.setdefault("output", "logit")
    if method == "occlusion":
        out.update(height=model.spec.input_size, width=model.spec.input_size)
    return out


def _missing(writer, model_id: str, method: str, key: str, pairs: pd.DataFrame) -> pd.DataFrame:
    have = writer.map_index(model_id=model_id, method=method)
    if have.empty:
        return pairs
    done = set(zip(have.loc[have.params_key == key, "image_id"], have.loc[have.params_key == key, "label"]))
    return pairs[[(i, lab) not in done for i, lab in zip(pairs.image_id, pairs.label)]]


def _row(model, image_id, label, method, params, kind, values, seconds):
    return {"model_id": model.spec.name, "image_id": image_id, "label": label, "method": method, "params": params,
            "target": params.get("output", "logit"), "kind": kind, "values": values, "seconds": seconds,
            "device": model.device.type}


def cam_stage(ctx, plan: MapPlan = DEMO_PLAN) -> dict:
    """Grad-CAM and Grad-CAM++ for every image × finding of the split (positives and negatives, so
    the full-dataset conventions can be scored); closed form for DenseNet: one forward per image."""
    model = ctx.model
    pairs = available(ctx, positive_pairs(ctx.writer, ctx.dataset, plan.split, model.spec.labels, positive_only=False))
    params = {m: resolved_params(m, {}, model) for m in plan.cams}
    todo = {m: _missing(ctx.writer, model.spec.name, m, params_key(params[m]), pairs) for m in plan.cams}
    images = sorted(set().union(*[set(t.image_id) for t in todo.values()]))
    by_image = pairs.groupby("image_id")["label"].apply(list).to_dict()
    closed_form = is_densenet_head(model.module) and all(p["layer"] == "features.norm5" for p in params.values())
    t0 = time.monotonic()
    for start in range(0, len(images), 16):
        ids = images[start:start + 16]
        x = _tensor(ctx, ids)
        rows = []
        if closed_form:
            t = time.perf_counter()
            _, gc, gpp = densenet_cams(model.module, x)
            per = (time.perf_counter() - t) / max(1, sum(len(by_image[i]) for i in ids))
            maps = {"gradcam": gc, "gradcam++": gpp}
            for n, image_id in enumerate(ids):
                for label in by_image[image_id]:
                    j = model.spec.label_index(label)
                    rows += [_row(model, image_id, label, m, params[m], "cam", maps[m][n, j].numpy(), per)
                             for m in plan.cams]
        else:
            for m in plan.cams:
                for n, image_id in enumerate(ids):
                    labs = by_image[image_id]
                    t = time.perf_counter()
                    out = explain_batch(model, x[n:n + 1].expand(len(labs), -1, -1, -1),
                                        [model.spec.label_index(lab) for lab in labs], m, **params[m])
                    per = (time.perf_counter() - t) / len(labs)
                    rows += [_row(model, image_id, lab, m, params[m], "cam", out[k], per) for k, lab in enumerate(labs)]
        ctx.writer.put_maps(rows)
        ctx.progress("Grad-CAM / Grad-CAM++", start + len(ids), len(images))
        ctx.maybe_publish()
    return {"images": len(images), "pairs": len(pairs), "closed_form": closed_form,
            "seconds_per_image": round((time.monotonic() - t0) / max(1, len(images)), 3)}


def maps_stage(ctx, plan: MapPlan = DEMO_PLAN) -> dict:
    """The sampled costly methods: GradientSHAP, IG, occlusion (window grid)."""
    model = ctx.model
    pairs = available(ctx, positive_pairs(ctx.writer, ctx.dataset, plan.split, model.spec.labels))
    report = {}
    for cfg in plan.maps:
        params = resolved_params(cfg.method, cfg.params, model)
        chosen = _sample(pairs, cfg.per_label, plan.seed)
        todo = _missing(ctx.writer, model.spec.name, cfg.method, params_key(params), chosen)
        seconds = []
        for k, (image_id, label) in enumerate(todo.itertuples(index=False)):
            x = _tensor(ctx, [image_id])
            target = model.spec.label_index(label)
            t = time.perf_counter()
            if cfg.method == "occlusion":
                grid = occlusion_grid(model.module, x, target, baseline_tensor(params["baseline"], x, model.spec),
                                      patch=params["patch"], stride=params["stride"], output=params["output"],
                                      baseline_name=params["baseline"])
                values, kind = grid.scores, "occlusion_grid"
            else:
                values, kind = explain_batch(model, x, [target], cfg.method, **cfg.params)[0], "pixel"
            seconds.append(time.perf_counter() - t)
            ctx.writer.put_maps([_row(model, image_id, label, cfg.method, params, kind, values, seconds[-1])])
            ctx.progress(f"{cfg.method} maps", k + 1, len(todo))
            ctx.maybe_publish()
        report[cfg.method] = {"computed": len(todo), "sampled": len(chosen),
                              "seconds_per_map": round(float(np.mean(seconds)), 3) if seconds else None}
    return report


def sweep_stage(ctx, plan: MapPlan = DEMO_PLAN) -> dict:
    """The thesis's occlusion patch/stride sweep (Table S4) on a few cases, with timings."""
    model = ctx.model
    pairs = available(ctx, positive_pairs(ctx.writer, ctx.dataset, plan.split, model.spec.labels))
    per_label = max(1, -(-plan.sweep_cases // max(1, pairs.label.nunique())))  # one fixed set shared by every setting
    cases = _sample(pairs, per_label, plan.seed).head(plan.sweep_cases)
    report = {}
    for patch, stride in plan.sweep:
        params = resolved_params("occlusion", {"patch": patch, "stride": stride, "baseline": "black", "output": "logit"},
                                 model)
        todo = _missing(ctx.writer, model.spec.name, "occlusion", params_key(params), cases)
        for image_id, label in todo.itertuples(index=False):
            x = _tensor(ctx, [image_id])
            grid = occlusion_grid(model.module, x, model.spec.label_index(label),
                                  baseline_tensor("black", x, model.spec), patch=patch, stride=stride)
            ctx.writer.put_maps([_row(model, image_id, label, "occlusion", params, "occlusion_grid", grid.scores,
                                      grid.seconds)])
            ctx.progress(f"occlusion sweep {patch}/{stride}", 1, 1)
            ctx.maybe_publish()
        report[f"{patch}/{stride}"] = len(todo)
    return report


def _tensor(ctx, ids: list[str]) -> torch.Tensor:
    return preprocess(np.asarray(ctx.load_images(ids)), ctx.model.spec).to(ctx.model.device)
