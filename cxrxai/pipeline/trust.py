"""Precompute stages that need the model again: trust (Arun et al.) and fidelity (the thesis).

Both run on a small deterministic sample of positive test cases (the costs are tens of forward
passes per map); :class:`TrustPlan` and :class:`FidelityPlan` say how many.

Trust maps follow Arun et al.'s greyscale: input-resolution map (CAMs upsampled bilinearly),
Σ|·| over channels, clipped at the 99th percentile, min–max; SSIM is stored at both
``data_range`` 1.0 (correct for [0, 1] maps) and 2.0 (what their scikit-image version used).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..explain import explain, native_map
from ..explain._common import baseline_tensor, hook_ready
from ..metrics import fidelity, trust
from ..models.inference import forward_batch_size
from ..models.randomize import randomization_steps
from ..models.registry import LoadedModel
from ..models.spec import preprocess
from ..postprocess import positive, upsample
from ..store import main_rows
from .maps import available, default_settings, positive_pairs
from .plan import TRUST_IG, FidelityPlan, TrustPlan
from .stages import stage

__all__ = [
    "TRUST_IG",
    "FidelityPlan",
    "TrustPlan",
    "fidelity_cases",
    "fidelity_stage",
    "trust_map",
    "trust_stage",
]

def _split(ctx) -> str | None:
    """The split a build evaluates (``ctx.options["split"]``; the demo's test split by default)."""
    return ctx.options.get("split", "test")


def _sample(ctx, n: int, seed: int) -> pd.DataFrame:
    pairs = available(ctx, positive_pairs(ctx.writer, ctx.dataset, _split(ctx), ctx.model.spec.labels))
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


def _main_setting(index: pd.DataFrame, model) -> pd.DataFrame:
    """Each method's setting of the analyses (:func:`~cxrxai.store.main_settings`): its stored defaults
    (occlusion 32/16) where it has maps of them, else its most stored setting; never the sweep's other
    patch/stride settings, which a full build stores on as many cases as 32/16."""
    return main_rows(index, default_settings(model))


def fidelity_cases(
    ctx, index: pd.DataFrame, plan: FidelityPlan, scored: pd.DataFrame | None = None
) -> pd.DataFrame:
    """``plan.cases`` positive (image, finding) pairs, one per image, drawn with ``plan.seed`` among the
    pairs with a stored map of the most plan methods: where every method has a map of ``plan.cases``
    images, every method is scored on the same cases (a paired comparison). Among pairs with as many
    methods, those already ``scored`` (image_id, label) come first, so a build resumed after more maps
    were stored (a ``--full`` build on a demo store) keeps its cases.
    Columns image_id, label."""
    pairs = available(ctx, positive_pairs(ctx.writer, ctx.dataset, _split(ctx), ctx.model.spec.labels))
    methods = index.groupby(["image_id", "label"]).method.nunique().rename("methods").reset_index()
    pairs = pairs.merge(methods, on=["image_id", "label"]).sample(frac=1.0, random_state=plan.seed)
    done = set() if scored is None else set(zip(scored.image_id, scored.label))
    pairs["scored"] = [(i, lab) in done for i, lab in zip(pairs.image_id, pairs.label)]
    pairs = (
        pairs.sort_values(["methods", "scored"], ascending=False, kind="stable")
        .groupby("image_id", sort=False)
        .head(1)
    )
    return (
        pairs.head(plan.cases)
        .sort_values(["image_id", "label"])[["image_id", "label"]]
        .reset_index(drop=True)
    )


def _mean_image(ctx, spec) -> torch.Tensor:
    test_ids = available(ctx, ctx.writer.images(dataset=ctx.dataset, split=_split(ctx))).image_id.tolist()
    # in chunks: any dataset size
    mean_img = sum(np.asarray(ctx.load_images(test_ids[i:i + 256]), np.float64).sum(0)
                   for i in range(0, len(test_ids), 256)) / len(test_ids)
    return preprocess((mean_img / 255.0).astype(np.float32), spec)


def _fidelity_rows(ctx, plan: FidelityPlan, units: pd.DataFrame, mean_fill: torch.Tensor) -> list[dict]:
    """Every method's fidelity on one case; what does not depend on the map (the faithfulness subsets'
    score drops, the random-order deletion curves) is computed once for all of them."""
    model, mid = ctx.model, ctx.model.spec.name
    image_id, label = units.image_id.iloc[0], units.label.iloc[0]
    x = preprocess(np.asarray(ctx.load_images([image_id])), model.spec).to(model.device)
    fills = {"black": baseline_tensor("black", x, model.spec), "mean": mean_fill}
    t = model.spec.label_index(label)

    def score(batch):
        return torch.sigmoid(model.module(batch.contiguous(memory_format=torch.channels_last)))[:, t]

    attrs = [upsample(positive(native_map(ctx.writer.get_map(mid, image_id, label, r.method, r.params_key))),
                      tuple(x.shape[-2:])) for r in units.itertuples(index=False)]
    batch = forward_batch_size(model.device)  # 8 on a CPU: a case's 701 passes at 32 took 1.5× as long
    faith = fidelity.faithfulness_correlations(score, x, attrs, fills["black"], iterations=plan.iterations,
                                               subset=plan.subset, seed=plan.seed, batch=batch)
    random_del = {
        name: fidelity.perturbation_curve(
            score, x, attrs[0], fill, region=plan.region, order="random", seed=plan.seed, batch=batch
        )
        for name, fill in fills.items()
    }
    rows = []
    for r, attr, faithfulness in zip(units.itertuples(index=False), attrs, faith):
        row = {
            "model_id": mid,
            "image_id": image_id,
            "label": label,
            "method": r.method,
            "params_key": r.params_key,
            "region": plan.region,
            "faithfulness": faithfulness,
        }
        for name, fill in fills.items():
            xs, rand = random_del[name]
            _, deletion = fidelity.perturbation_curve(score, x, attr, fill, region=plan.region, batch=batch)
            _, insertion = fidelity.perturbation_curve(
                score, x, attr, fill, mode="insertion", region=plan.region, batch=batch
            )
            row.update(
                {
                    f"audc_{name}": fidelity.curve_area(xs, deletion),
                    f"auic_{name}": fidelity.curve_area(xs, insertion),
                    f"audc_random_{name}": fidelity.curve_area(xs, rand),
                    f"audc_diff_{name}": fidelity.audc_diff(deletion, rand, xs),
                    f"deletion_{name}": deletion,
                    f"deletion_random_{name}": rand,
                    f"insertion_{name}": insertion,
                }
            )
        row["audc_diff_mean_normalized"] = fidelity.normalized_audc_diff(
            row["audc_diff_mean"], row["deletion_mean"], row["deletion_black"]
        )
        rows.append(row)
    return rows


@stage("fidelity", reads=("maps",), writes=("fidelity",), uses={"plan": "fidelity"},
       analysis="fidelity", help="deletion/insertion fidelity curves (thesis §2.4) on --cases positives")
def fidelity_stage(ctx, plan: FidelityPlan = FidelityPlan()) -> dict:
    """Faithfulness correlation and deletion/insertion curves (black and mean-image fills) of each plan
    method's main setting on :func:`fidelity_cases`; each case is written as soon as it is scored (an
    interrupted build resumes after the last published case)."""
    mid = ctx.model.spec.name
    index = ctx.writer.map_index(model_id=mid)
    index = _main_setting(index[index.method.isin(plan.methods)], ctx.model)
    done = ctx.writer.table("fidelity", model_id=mid)
    done = (
        done.merge(index[["method", "params_key"]].drop_duplicates(), on=["method", "params_key"])
        if len(done)
        else None
    )
    chosen = index.merge(fidelity_cases(ctx, index, plan, done), on=["image_id", "label"])
    have = set() if done is None else set(zip(done.image_id, done.label, done.method))
    chosen = chosen[
        [(i, lab, m) not in have for i, lab, m in zip(chosen.image_id, chosen.label, chosen.method)]
    ]
    if chosen.empty:
        return {"computed": 0}
    mean_fill = _mean_image(ctx, ctx.model.spec).to(ctx.model.device)
    cases = list(chosen.groupby(["image_id", "label"], sort=True))
    for k, (_, units) in enumerate(cases):
        ctx.writer.put_table("fidelity", pd.DataFrame(_fidelity_rows(ctx, plan, units, mean_fill)))
        ctx.maybe_publish()
        ctx.progress("fidelity curves", k + 1, len(cases))
    return {"computed": len(chosen), "cases": len(cases)}
