"""The precompute stage of Arun et al.'s trust analyses: cascading randomization, repeatability (another
training of the same architecture) and reproducibility (another architecture), on a small deterministic
sample of positive test images (tens of forward passes per map; :class:`TrustPlan` says how many). The
thesis's fidelity curves, the other stage that needs the model again, are :mod:`.fidelity`'s.

Trust maps follow Arun et al.'s greyscale: input-resolution map (CAMs upsampled bilinearly),
Σ|·| over channels, clipped at the 99th percentile, min–max; SSIM is stored at both
``data_range`` 1.0 (correct for [0, 1] maps) and 2.0 (what their scikit-image version used).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..explain import explain
from ..explain._common import hook_ready
from ..metrics import trust
from ..models.randomize import randomization_steps
from ..models.registry import LoadedModel
from ..models.spec import preprocess
from ..postprocess import positive, upsample
from .plan import TRUST_IG, TrustPlan
from .sampling import evaluated_positives
from .stages import stage

__all__ = ["TRUST_IG", "TrustPlan", "trust_map", "trust_stage"]


def _sample(ctx, n: int, seed: int) -> pd.DataFrame:
    pairs = evaluated_positives(ctx)
    first = pairs.groupby("image_id", sort=True).head(1)
    return first.sample(n=min(n, len(first)), random_state=seed).sort_values("image_id")


def trust_map(model: LoadedModel, x: torch.Tensor, target: int, method: str, params: dict) -> np.ndarray:
    """Arun et al.'s normalised map at input resolution (see the module docstring)."""
    m = explain(model, x, target, method, **params)
    if m.shape != tuple(x.shape[-2:]):
        m = upsample(positive(m), tuple(x.shape[-2:]))
    return trust.arun_normalize(np.abs(m))


def _todo(ctx, methods: dict, ids: list[str]) -> tuple[dict, dict]:
    """What :func:`trust_stage` has left to score: each method's image positions without a cascading
    randomization (``{method: [i]}``, methods with none left dropped), and each (method, other model)
    pair's positions without a comparison (``{(method, name): (model, kind, [i])}``)."""
    have = ctx.writer.table("trust", model_id=ctx.model.spec.name)

    def todo(method: str, kind: str, other: str = "") -> list[int]:
        rows = (
            have[(have.method == method) & (have.kind == kind) & (have.other_model == other)]
            if len(have)
            else have
        )
        done = set(rows.image_id) if len(rows) else set()
        return [i for i, image_id in enumerate(ids) if image_id not in done]

    rand = {m: todo(m, "randomization") for m in methods}
    compare = {}
    for o in ctx.options.get("trust_models", []):
        kind = "repeatability" if o.spec.arch == ctx.model.spec.arch else "reproducibility"
        for m in methods:
            if left := todo(m, kind, o.spec.name):
                compare[m, o.spec.name] = (o, kind, left)
    return {m: v for m, v in rand.items() if v}, compare


@stage("trust", reads=("predictions", "labels"), writes=("trust",), uses={"plan": "trust"},
       analysis="trust", help="cascading randomization and repeatability (Arun et al.) on --cases images")
def trust_stage(ctx, plan: TrustPlan = TrustPlan()) -> dict:
    """Cascading randomization, degradation thresholds, repeatability and reproducibility of each plan
    method on ``plan.images`` test images, each (method, image) scored once: a build that asks for
    more images (the evidence's next round), another method or another model to compare with scores
    only what is new, and redraws a method's degradation threshold over every image's map when it
    has new images."""
    model, mid = ctx.model, ctx.model.spec.name
    cases = _sample(ctx, plan.images, plan.seed)
    ids = cases.image_id.tolist()
    methods = dict(plan.methods)
    rand, compare = _todo(ctx, methods, ids)
    if not rand and not compare:
        return {"skipped": True, "images": len(ids)}
    x = preprocess(np.asarray(ctx.load_images(ids)), model.spec).to(model.device)
    targets = [model.spec.label_index(lab) for lab in cases.label]
    rows = []

    def add(method, kind, i, step, step_index, other, a, b):
        for dr in plan.data_ranges:
            rows.append(
                {
                    "model_id": mid,
                    "method": method,
                    "kind": kind,
                    "image_id": ids[i],
                    "label": cases.label.iloc[i],
                    "step": step,
                    "step_index": step_index,
                    "other_model": other,
                    "data_range": dr,
                    "ssim": trust.ssim(a, b, data_range=dr),
                }
            )

    # The trained model's maps: every image's for a method whose thresholds are redrawn, else those compared.
    need = {
        m: range(len(ids))
        if m in rand
        else sorted({i for (mm, _), (_, _, t) in compare.items() if mm == m for i in t})
        for m in methods
    }
    originals = {
        m: {i: trust_map(model, x[i : i + 1], targets[i], m, dict(methods[m])) for i in need[m]}
        for m in methods
    }
    # each step's model is a copy of the trust stage's own: guided backprop hooks it without copying it again
    steps = [(s, hook_ready(m)) for s, m in randomization_steps(model.module, seed=plan.seed)] if rand else []
    rows += _threshold_rows(mid, {m: [originals[m][i] for i in range(len(ids))] for m in rand}, plan)
    for k, (step, module) in enumerate(steps):
        randomized_model = LoadedModel(module, model.spec, model.device)
        for m, new in rand.items():
            for i in new:
                mp = (
                    originals[m][i]
                    if k == 0
                    else trust_map(randomized_model, x[i : i + 1], targets[i], m, dict(methods[m]))
                )
                add(m, "randomization", i, step, k, "", mp, originals[m][i])
        ctx.progress("cascading randomization", k + 1, len(steps))
    for (m, name), (other, kind, new) in compare.items():
        xo = preprocess(np.asarray(ctx.load_images([ids[i] for i in new])), other.spec).to(other.device)
        p = dict(methods[m])
        if m in ("gradcam", "gradcam++"):
            p["layer"] = other.spec.cam_layer
        for j, i in enumerate(new):
            mp = trust_map(other, xo[j:j + 1], other.spec.label_index(cases.label.iloc[i]), m, p)
            if mp.shape != originals[m][i].shape:
                mp = upsample(mp, originals[m][i].shape)
            add(m, kind, i, "original", 0, name, mp, originals[m][i])
    ctx.writer.put_table("trust", pd.DataFrame(rows))
    return {"images": len(ids), "randomized": {m: len(v) for m, v in rand.items()}, "steps": len(steps),
            "compared": {f"{m} vs {name}": len(t) for (m, name), (_, _, t) in compare.items()}}


def _threshold_rows(model_id: str, maps: dict[str, list[np.ndarray]], plan: TrustPlan) -> list[dict]:
    """Each method's degradation threshold (Arun et al.) over its trained model's ``maps``, per data range."""
    rows = []
    for m, method_maps in maps.items():
        for dr in plan.data_ranges:
            thr = trust.degradation_threshold(method_maps, n_pairs=plan.pairs, data_range=dr, seed=plan.seed)
            rows.append(
                {
                    "model_id": model_id,
                    "method": m,
                    "kind": "threshold",
                    "image_id": "*",
                    "label": "*",
                    "step": "original",
                    "step_index": 0,
                    "other_model": "",
                    "data_range": dr,
                    "ssim": thr,
                }
            )
    return rows
