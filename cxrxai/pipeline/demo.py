"""The demo build: phantom cases with exact masks, the shipped model, then every stage of the
papers, in the rounds :mod:`.demo_plan` decides (its names are importable from here too)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..data.decode import RowLoader
from ..data.demo import DemoData, given_or_loaded
from ..data.phantom import PhantomConfig
from ..errors import UnknownNameError
from ..labels import DEMO_LABELS, match_labels
from ..models.registry import load
from ..models.shortcut_model import SHORTCUT_MODEL, shortcut_config
from ..paths import absolute
from ..store import CAM_ONLY_META, write_store
from .demo_cases import DEMO_DATASET, demo_dataset_store, put_demo_dataset
from .demo_plan import (
    AFTER_FIRST_LOOK,
    EVIDENCE,
    EVIDENCE_STAGES,
    FIRST_LOOK,
    MODEL_EVIDENCE_STAGES,
    OTHER_MODEL_STAGES,
    PHASE_STAGES,
    QUICK_STAGES,
    SAME_ARCH_STAGES,
    Evidence,
    Round,
    demo_plan,
    demo_stages,
    evidence_rounds,
    model_evidence_stages,
)
from .phases import PHASES
from .plan import BuildPlan
from .runner import BuildContext, ProgressFn, Stage, _quiet, run_stages
from .stages import resolve

__all__ = [
    "AFTER_FIRST_LOOK",
    "DEMO_DATASET",
    "EVIDENCE",
    "EVIDENCE_STAGES",
    "FIRST_LOOK",
    "MODEL_EVIDENCE_STAGES",
    "OTHER_MODEL_STAGES",
    "PHASES",
    "PHASE_STAGES",
    "QUICK_STAGES",
    "SAME_ARCH_STAGES",
    "Evidence",
    "Round",
    "build_demo",
    "demo_dataset_store",
    "demo_plan",
    "demo_stages",
    "evidence_rounds",
    "model_evidence_stages",
]

def _shortcut_setup(model_path, config: PhantomConfig, data_dir) -> dict:
    """The planted shortcut beside the demo model (the options of the ``shortcut`` stage,
    :mod:`cxrxai.pipeline.shortcut`): the demo's ResNet-18 as the control, the fine-tuned weights
    next to it, the shortcut cohort drawn like ``config``."""
    control = Path(model_path).with_name("demo-resnet18.pt")
    return {"control": control, "weights": control.with_name(f"{SHORTCUT_MODEL}.pt"),
            "config": shortcut_config(config), "data_dir": data_dir}


def _round_runs(rnd: Round, model, others: list) -> list[tuple]:
    """One round's runs in order, ``(other model or None for the main one, stages)``: the main
    model's stages, each other model's predictions and thresholds and the round's ``extra`` stages
    (``same_arch`` for another training of the main model's architecture), then the round's
    ``after`` stages."""
    runs = [(None, list(rnd.main))]
    for other in others:
        own = rnd.extra if other.spec.arch != model.spec.arch else rnd.same_arch
        runs.append((other, [*resolve(OTHER_MODEL_STAGES, BuildPlan()), *own]))
    return runs + ([(None, list(rnd.after))] if rnd.after else [])


def _run_context(
    ctx: BuildContext, other, others: list, eval_ids: list[str], progress: ProgressFn
) -> BuildContext:
    """The context one run of a round works in: the main model's own (``other`` None), or another
    model's over ``eval_ids`` (validation + test), compared with the demo model alone for
    reproducibility (not pooled over its seeds) and with other trainings of its own architecture for
    repeatability."""
    if other is None:
        return replace(ctx, progress=progress)
    peers = [ctx.model, *(o for o in others if o is not other and o.spec.arch == other.spec.arch)]
    return BuildContext(ctx.writer, ctx.dataset, other, load_images=ctx.load_images,
                        options={"image_ids": eval_ids, "trust_models": peers}, progress=progress)


def _steps(plans: list[tuple], model) -> list[list]:
    """Every step of the build, ``[round, round name, stage name, model]``, in order."""
    return [
        [r, rnd.name, st.name, model.spec.name if other is None else other.spec.name]
        for r, (rnd, runs) in enumerate(plans, start=1)
        for other, own in runs
        for st in own
    ]


def _run_rounds(ctx: BuildContext, rounds: list[Round], others: list, eval_ids: list[str],
                report: dict, progress: ProgressFn,
                on_stage: Callable[[dict], None] | None) -> None:
    """Run every round's runs (:func:`_round_runs`) in order, telling ``on_stage`` where the build
    is before each stage and filling ``report`` (one entry per round when there are several)."""
    model = ctx.model
    plans = [(rnd, _round_runs(rnd, model, others)) for rnd in rounds]
    total = sum(len(st) for _, runs in plans for _, st in runs)
    # the plan: every step, told once
    where = {"rounds": len(rounds), "stages": total, "stage": 0, "plan": _steps(plans, model)}
    for r, (rnd, runs) in enumerate(plans, start=1):
        rep = report if len(rounds) == 1 else report.setdefault(rnd.name or f"round {r}", {})
        tag = f"{rnd.name} · " if len(rounds) > 1 and rnd.name else ""
        for other, own in runs:
            name = model.spec.name if other is None else other.spec.name
            prefix = tag if other is None else f"{tag}{name}: "
            rctx = _run_context(
                ctx,
                other,
                others,
                eval_ids,
                lambda task, done, total, prefix=prefix: progress(f"{prefix}{task}", done, total),
            )
            s0, out = time.monotonic(), {}
            for st in own:
                where.update(
                    stage=where["stage"] + 1, round=r, round_name=rnd.name, name=st.name, model=name
                )
                if on_stage is not None:
                    on_stage(dict(where))
                where.pop("plan", None)
                run_stages(rctx, [st], out)
            if other is None:
                rep.update(out)
            else:
                rep[f"model {name}"] = {**out, "seconds": round(time.monotonic() - s0, 1)}


def _put_model(writer, spec, path) -> None:
    """Register a demo model with its weights and, as a precompute does, which of its outputs scores
    which phantom label (``label_matches``: the data audit and the dossier read them)."""
    writer.put_model(spec, weights_path=str(absolute(path)))
    writer.put_label_matches(DEMO_DATASET, spec.name, match_labels(spec.labels, DEMO_LABELS).rows())


def build_demo(
    store_path: str | Path,
    *,
    model_path: str | Path,
    data_dir: str | Path,
    config: PhantomConfig | None = None,
    progress: ProgressFn = _quiet,
    stages: list[Stage] | None = None,
    fresh: bool = False,
    extra_models: list[Path] = (),
    prediction_cache: Path | None = None,
    write_prediction_cache: bool = False,
    phase: str = "all",
    extra_stages: list[Stage] = (),
    rounds: list[Round] | None = None,
    on_stage: Callable[[dict], None] | None = None,
    data: DemoData | None = None,
) -> dict:
    """Build (or resume) the demo store: cases, model, then ``stages`` (default: the stages of
    ``phase``, :func:`demo_stages`). Finishing the evidence (``all`` or ``evidence``) records
    ``evidence_built_at`` in the store's meta.

    ``extra_models`` (weights files) are registered, used for repeatability/reproducibility, and
    predicted on validation + test with their own thresholds (not in the quick phase); then each
    runs ``extra_stages`` (:func:`model_evidence_stages`: its explanation evidence) when its
    architecture differs from the main model's (a second seed serves repeatability only), after
    the main model's, with its name before each stage's in the progress.

    ``rounds`` (:func:`evidence_rounds`) replace ``stages`` and ``extra_stages``: each round runs
    the main model's stages, then each other model's, so every model has a first look at
    everything before any gets the full evidence (the report gets one entry per round).
    ``on_stage`` is told where the build is before each stage: ``{"round", "rounds",
    "round_name", "stage", "stages", "name", "model"}`` (1-based counts over the whole build), the
    first time also ``"plan"``: every step as ``[round, round name, stage name, model]``, in
    order. ``data``: the cohort where the caller has it (default:
    :func:`~cxrxai.data.demo.load_demo`'s).
    """
    if phase not in PHASES:
        raise UnknownNameError("demo phase", phase, PHASES)
    config = config or PhantomConfig()
    report: dict = {}
    t0 = time.monotonic()
    data = given_or_loaded(
        data, config, data_dir, progress=lambda d, n: progress("render phantoms", d, n)
    )
    report["render_s"] = round(time.monotonic() - t0, 1)
    model = load(model_path)
    with write_store(store_path, fresh=fresh) as writer:
        if len(writer.images(dataset=DEMO_DATASET)) != len(data.specs):
            put_demo_dataset(writer, data, config, data_dir)
        _put_model(writer, model.spec, model_path)
        # registered with their predictions
        others = [load(p) for p in extra_models] if phase != "quick" else []
        for path, other in zip(extra_models, others):
            _put_model(writer, other.spec, path)
        # the quick phase registers none: it leaves the evidence build's record alone
        if others:
            same_arch = {
                o.spec.name: model.spec.name for o in others if o.spec.arch == model.spec.arch
            }
            writer.set_meta(CAM_ONLY_META, json.dumps(same_arch))
        options = {
            "trust_models": others,
            "prediction_cache": prediction_cache,
            "write_prediction_cache": write_prediction_cache,
            "shortcut": _shortcut_setup(model_path, config, data_dir),
        }
        ctx = BuildContext(
            writer,
            DEMO_DATASET,
            model,
            options=options,
            load_images=RowLoader(data.images, [s.image_id for s in data.specs]),
            progress=progress,
        )
        if rounds is None:
            main = stages if stages is not None else demo_stages(phase=phase)
            rounds = [Round("", tuple(main), tuple(extra_stages) if others else ())]
        # The extra models get predictions and thresholds on validation + test, so they can be
        # compared with the main model on every page; a second architecture also its evidence.
        stored = writer.images(dataset=DEMO_DATASET)
        eval_ids = stored.image_id[stored.split.isin(["val", "test"])].tolist()
        _run_rounds(ctx, rounds, others, eval_ids, report, progress, on_stage)
        if phase != "quick":
            writer.set_meta("evidence_built_at", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
            writer.publish()
    report["total_s"] = round(time.monotonic() - t0, 1)
    return report
