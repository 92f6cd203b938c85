"""The planted shortcut: a model fine-tuned where a marker goes with one finding, and the stage
that asks each explainer where it puts its mass on cases carrying the marker.

The shortcut cohort is its own phantom cohort (:func:`shortcut_config`): in its training and
validation splits, images positive for :data:`SHORTCUT_LABEL` carry the marker 90 % of the time
and negatives 5 %; its test split never does, so every test case can be rendered twice, with and
without the marker, and nothing else changes (the marker draws no random numbers). The shortcut
model starts from the control (the demo's ResNet-18) and is fine-tuned on that cohort; the stage
then scores both on the same marked test cases (:mod:`cxrxai.metrics.shortcut`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from ..data.demo import DemoData, given_or_loaded
from ..data.phantom import CaseSpec, PhantomConfig, Shortcut, render
from ..errors import ModelError
from ..explain import Setting, explain
from ..metrics.shortcut import marker_zone, mass_shares
from ..models.inference import predict_logits, sigmoid
from ..models.registry import LoadedModel, load
from ..models.spec import preprocess
from ..models.train import TrainConfig
from ..postprocess import positive, upsample

__all__ = [
    "SHORTCUT_LABEL",
    "SHORTCUT_MODEL",
    "SHORTCUT_TRAIN",
    "ShortcutPlan",
    "shortcut_config",
    "shortcut_panels",
    "shortcut_stage",
    "train_shortcut_model",
]

SHORTCUT_LABEL = "Nodule"
#: Name (weights file stem) of the demo's shortcut model.
SHORTCUT_MODEL = "demo-resnet18-shortcut"
#: Fine-tuning from the control: two epochs at the input size, a lower learning rate (about 6 min
#: on 2 CPU cores for a ResNet-18 on the 1,500-image cohort).
SHORTCUT_TRAIN = TrainConfig(arch="resnet18", schedule=((224, 2),), lr=3e-4, warmup_steps=10)


def shortcut_config(base: PhantomConfig | None = None, *, n_images: int = 1500, label: str = SHORTCUT_LABEL
                    ) -> PhantomConfig:
    """The shortcut cohort: ``base``'s look with its own seed, the marker planted with ``label``
    in the training and validation splits only."""
    base = base or PhantomConfig()
    return replace(base, n_images=n_images, seed=base.seed + 101,
                   shortcut=Shortcut(label, p_positive=0.9, p_negative=0.05, splits=("train", "val")))


def train_shortcut_model(
    control: str | Path,
    *,
    config: PhantomConfig,
    models_dir: str | Path,
    data_dir: str | Path,
    name: str = SHORTCUT_MODEL,
    train_config: TrainConfig = SHORTCUT_TRAIN,
    input_size: int | None = None,
    progress: Callable | None = None,
) -> Path:
    """Fine-tune the control model's weights on the shortcut cohort; returns the weights path."""
    from ..models.demo_model import train_demo_model

    control_model = load(control, device="cpu")
    tc = replace(train_config, arch=control_model.spec.arch, init_from=str(Path(control).with_suffix(".pt")))
    _, path = train_demo_model(
        name=name,
        config=config,
        train_config=tc,
        models_dir=models_dir,
        data_dir=data_dir,
        input_size=input_size or control_model.spec.input_size,
        progress=progress,
    )
    return path


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
    zone: float = 0.04
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


def shortcut_panels(rows: pd.DataFrame, image_id: str, *, zone: float = ShortcutPlan.zone) -> list[dict]:
    """Film panels (see :func:`cxrxai.present.film.film_grid`) of one marked case: one per stored
    (role, explainer), the case re-rendered with its marker, the lesion as the reference reader
    and the marker zone as reader ``shortcut``; shortcut model first, explainers in stored order."""
    case_rows = rows[rows.image_id == image_id]
    if case_rows.empty:
        raise ModelError(f"no shortcut rows for case {image_id!r}")
    first = case_rows.iloc[0]
    case = render(CaseSpec.from_json(first.generator_key), PhantomConfig.from_json(first.phantom_config))
    masks = {"gt": case.mask(first.label), "shortcut": marker_zone(case.shortcut_mask, zone)}
    panels = []
    for r in case_rows.sort_values(["role", "method"], ascending=[False, True]).itertuples():
        side = int(r.thumb_size)
        panels.append(
            {
                "image": case.image,
                "saliency": np.asarray(r.thumb, np.float32).reshape(side, side),
                "masks": masks,
                "title": f"{r.method} · {r.role} ({r.model_id}) · p={r.prob:.2f}, "
                f"without marker {r.prob_without:.2f} · marker share {r.marker_share:.0%}",
            }
        )
    return panels
