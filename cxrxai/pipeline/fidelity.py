"""The precompute stage of the thesis's fidelity analyses: faithfulness correlation and deletion /
insertion curves (black and mean-image fills) of each method's main setting, on a small deterministic
sample of positive test cases (hundreds of forward passes per case; :class:`FidelityPlan` says how
many). The measures themselves are :mod:`cxrxai.metrics.fidelity`'s.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..explain import native_map
from ..explain._common import baseline_tensor
from ..metrics import fidelity
from ..models.inference import forward_batch_size
from ..models.spec import preprocess
from ..postprocess import positive, upsample
from ..store import main_rows
from .maps import default_settings
from .plan import FidelityPlan
from .sampling import available, evaluated_positives, evaluated_split
from .stages import stage

__all__ = ["FidelityPlan", "fidelity_cases", "fidelity_stage"]


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
    pairs = evaluated_positives(ctx)
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
    evaluated = ctx.writer.images(dataset=ctx.dataset, split=evaluated_split(ctx))
    test_ids = available(ctx, evaluated).image_id.tolist()
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
