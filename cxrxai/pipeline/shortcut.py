"""The planted-shortcut stage (registered as ``shortcut``: the fine-tuning when its weights are
missing, then :func:`shortcut_stage`): where each explainer puts its mass on cases carrying the
marker, under the shortcut model and under its control (:mod:`cxrxai.metrics.shortcut`).

The cohort and the fine-tuned model are :mod:`cxrxai.models.shortcut_model`'s (re-exported here);
the panels the Benchmark page draws from the stored rows are :mod:`cxrxai.present.shortcut_panels`'s.
The stage scores both models on the same marked test cases: each rendered with and without its
marker, nothing else changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from ..data.demo import DemoData, given_or_loaded
from ..data.phantom import PhantomConfig, render
from ..errors import ModelError
from ..explain import Setting, explain
from ..metrics.shortcut import MARKER_ZONE, marker_zone, mass_shares
from ..models.inference import predict_logits, sigmoid
from ..models.registry import LoadedModel, load
from ..models.shortcut_model import (  # re-exported: the demo build and the tests import them from here
    SHORTCUT_LABEL,
    SHORTCUT_MODEL,
    SHORTCUT_TRAIN,
    shortcut_config,
    train_shortcut_model,
)
from ..models.spec import preprocess
from ..postprocess import positive, upsample
from .stages import stage

__all__ = [
    "SHORTCUT_LABEL",
    "SHORTCUT_MODEL",
    "SHORTCUT_TRAIN",
    "ShortcutPlan",
    "shortcut_config",
    "shortcut_stage",
    "train_shortcut_model",
]


@dataclass(frozen=True)
class ShortcutPlan:
    """Which marked test cases and explainers the stage scores."""

    positives: int = 20
    negatives: int = 20
    methods: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = (
        ("gradcam", ()),
        ("gradcam++", ()),
        ("saliency", (("reduce", "abs_sum"),)),
        ("ig", ()),
        ("gradientshap", ()),
        ("occlusion", (("patch", 32), ("stride", 16))),
    )
    zone: float = MARKER_ZONE
    thumb: int = 56
    seed: int = 0


def _cases(data, label: str, plan: ShortcutPlan) -> list[int]:
    test = [i for i, s in enumerate(data.specs) if s.split == "test"]
    rng = np.random.default_rng(plan.seed)
    pos = [i for i in test if label in data.specs[i].findings]
    neg = [i for i in test if label not in data.specs[i].findings]

    def pick(rows, n):
        return sorted(rng.choice(rows, size=min(n, len(rows)), replace=False).tolist())

    return pick(pos, plan.positives) + pick(neg, plan.negatives)


def _thumb(m: np.ndarray, size: int) -> list[float]:
    m = np.clip(m, 0, None)
    top = float(m.max())
    small = cv2.resize(
        (m / top if top > 0 else m).astype(np.float32), (size, size), interpolation=cv2.INTER_AREA
    )
    return small.ravel().tolist()


def shortcut_stage(
    writer,
    models: dict[str, LoadedModel],
    *,
    config: PhantomConfig,
    data_dir: str | Path,
    plan: ShortcutPlan = ShortcutPlan(),
    progress: Callable[[str, int, int], None] | None = None,
    data: DemoData | None = None,
) -> dict:
    """Score every explainer of ``plan`` under each model of ``models`` (role → model: ``shortcut``
    and ``control``) on the marked test cases of the shortcut cohort (``data`` when the caller has it);
    rows already stored are kept."""
    if set(models) != {"shortcut", "control"}:
        raise ModelError(f"the shortcut stage needs a 'shortcut' and a 'control' model, got {sorted(models)}")
    label = config.shortcut.label
    data = given_or_loaded(data, config, data_dir)
    rows_idx = _cases(data, label, plan)
    have = writer.table("shortcut")
    done = set(zip(have.model_id, have.image_id, have.method)) if not have.empty else set()
    wanted = {(m.spec.name, data.specs[i].image_id, method) for m in models.values() for i in rows_idx
              for method, _ in plan.methods}
    if wanted <= done:  # a resumed build: nothing to render or predict again
        return {
            "cases": len(rows_idx),
            **{role: {"model": m.spec.name, "computed": 0} for role, m in models.items()},
        }
    marked = [render(replace(data.specs[i], shortcut=True), config) for i in rows_idx]
    with_marker = np.stack([c.image for c in marked])
    plain = np.asarray(data.images[rows_idx])
    report, total, step = {}, len(wanted), 0
    for role, model in models.items():
        t = model.spec.label_index(label)
        p_with = sigmoid(predict_logits(model, with_marker))[:, t]
        p_without = sigmoid(predict_logits(model, plain))[:, t]
        rows = []
        for k, case in enumerate(marked):
            spec = case.spec
            x = preprocess(with_marker[k:k + 1], model.spec).to(model.device)
            zone = marker_zone(case.shortcut_mask, plan.zone)
            lesion = case.mask(label)
            for method, params in plan.methods:
                step += 1
                setting = Setting.of(method, dict(params), spec=model.spec)
                if (model.spec.name, spec.image_id, method) in done:
                    continue
                m = explain(model, x, t, method, **setting.kwargs())
                m = upsample(positive(m), zone.shape) if m.shape != zone.shape else positive(m)
                rows.append(
                    {
                        "model_id": model.spec.name,
                        "role": role,
                        "image_id": spec.image_id,
                        "label": label,
                        "method": method,
                        "params_key": setting.key,
                        "gt_positive": label in spec.findings,
                        "prob": float(p_with[k]),
                        "prob_without": float(p_without[k]),
                        **mass_shares(m, zone, lesion),
                        "thumb": _thumb(m, plan.thumb),
                        "thumb_size": plan.thumb,
                        "generator_key": spec.to_json(),
                        "phantom_config": config.to_json(),
                    }
                )
                if progress:
                    progress("shortcut maps", step, total)
        if rows:
            writer.put_table("shortcut", pd.DataFrame(rows))
            writer.publish()
        report[role] = {"model": model.spec.name, "computed": len(rows)}
    return {"cases": len(rows_idx), **report}


@stage("shortcut", reads=("models",), writes=("shortcut",),
       help="the planted shortcut: a fine-tuned model against its control (the demo only)")
def _shortcut(ctx) -> dict:
    """The planted shortcut (``ctx.options["shortcut"]``: control weights, shortcut weights, cohort,
    phantom cache): fine-tune the shortcut model when its weights are missing, then score both."""
    setup = ctx.options.get("shortcut")
    if not setup or not Path(setup["control"]).with_suffix(".pt").is_file():
        return {"skipped": "no control model (the demo's ResNet-18) to fine-tune"}
    weights = Path(setup["weights"]).with_suffix(".pt")
    report = {}
    if not weights.is_file():
        s0 = time.monotonic()
        train_shortcut_model(
            setup["control"],
            config=setup["config"],
            models_dir=weights.parent,
            data_dir=setup["data_dir"],
            name=weights.stem,
            progress=lambda p: ctx.progress("fine-tune the shortcut model", p.step, p.total_steps),
        )
        report["trained_s"] = round(time.monotonic() - s0, 1)
    models = {"shortcut": load(weights), "control": load(setup["control"])}
    return {**report, **shortcut_stage(ctx.writer, models, config=setup["config"], data_dir=setup["data_dir"],
                                       progress=ctx.progress)}
