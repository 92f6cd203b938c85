"""The demo build: phantom cases with exact masks, the shipped model, then every stage of the papers."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.decode import RowLoader
from ..data.demo import DemoData, given_or_loaded, label_matrix
from ..data.phantom import PhantomConfig
from ..data.second_reader import synthetic_reader
from ..errors import UnknownNameError
from ..labels import DEMO_LABELS, match_labels
from ..models.registry import load
from ..models.shortcut_model import SHORTCUT_MODEL, shortcut_config
from ..paths import absolute
from ..store import CAM_ONLY_META, write_store
from .maps import MapConfig, MapPlan
from .phases import PHASES
from .plan import BuildPlan
from .runner import BuildContext, ProgressFn, Stage, _quiet, run_stages
from .stages import resolve
from .trust import TRUST_IG, FidelityPlan, TrustPlan

__all__ = ["AFTER_FIRST_LOOK", "DEMO_DATASET", "EVIDENCE", "EVIDENCE_STAGES", "FIRST_LOOK",
           "MODEL_EVIDENCE_STAGES", "OTHER_MODEL_STAGES", "PHASES", "PHASE_STAGES", "QUICK_STAGES",
           "SAME_ARCH_STAGES", "Evidence", "Round", "build_demo", "demo_dataset_store", "demo_plan",
           "demo_stages", "evidence_rounds", "model_evidence_stages"]

DEMO_DATASET = "demo"


def _demo_tables(data: DemoData) -> tuple[pd.DataFrame, pd.DataFrame]:
    specs = data.specs
    size = data.config.size
    images = pd.DataFrame({
        "image_id": [s.image_id for s in specs], "dataset": DEMO_DATASET, "path": None,
        "generator_key": [s.to_json() for s in specs], "patient_id": [s.patient_id for s in specs],
        "sex": [s.sex for s in specs], "age": [float(s.age) for s in specs],
        "age_bin": [s.age_bin for s in specs], "view": [s.view for s in specs],
        "split": [s.split for s in specs], "width": size, "height": size,
        # the phantom generator draws each case's sex, age and view (its spec), so none is read from a file
        "sex_source": "derived:phantom", "age_source": "derived:phantom", "view_source": "derived:phantom",
    })
    y = label_matrix(specs)
    labels = pd.DataFrame({
        "image_id": np.repeat(images["image_id"].to_numpy(), len(DEMO_LABELS)),
        "label": np.tile(np.array(DEMO_LABELS, dtype=object), len(specs)),
        "value": y.ravel().astype(int),
    })
    return images, labels


@dataclass(frozen=True)
class Evidence:
    """How many cases the evidence phase gives each analysis (issue: ≥ 30 positives per finding
    for every costly explainer, one fixed set of ≥ 20 cases shared by every occlusion patch/stride
    setting, fidelity on ≥ 50 cases, trust analyses on ≥ 30)."""

    per_finding: int = 30
    sweep_cases: int = 20
    fidelity_cases: int = 50
    trust_images: int = 30


EVIDENCE = Evidence()

#: A first look at every analysis: 10 positives per finding for each costly explainer (fewer true
#: positives where the model misses some), 8 sweep cases, fidelity on 15 cases and trust on 10 images,
#: so every page of both models shows numbers, with their n, long before the full evidence is done.
FIRST_LOOK = Evidence(per_finding=10, sweep_cases=8, fidelity_cases=15, trust_images=10)


#: The demo's builds, ordered lists of registered stage names (:mod:`cxrxai.pipeline.stages`).
#: ``quick``: what the app needs to open; ``evidence``: the CAMs' scores first (a minute), then the
#: costly maps and what needs them; ``all``: both, in that order.
QUICK_STAGES = ("predictions", "thresholds", "cams")
EVIDENCE_STAGES = ("predictions", "thresholds", "localization (CAMs)", "maps", "occlusion sweep",
                   "localization", "second reader", "baselines", "geometry", "trust", "fidelity", "shortcut")
PHASE_STAGES = {"quick": QUICK_STAGES, "evidence": EVIDENCE_STAGES,
                "all": (*QUICK_STAGES, *EVIDENCE_STAGES[3:])}
#: The explanation evidence a second model gets after its predictions and thresholds (the demo's
#: ResNet-18), so every Explanations page works for it too; the masks' geometry and the shortcut
#: are the main model's (geometry does not depend on a model).
MODEL_EVIDENCE_STAGES = ("cams", "localization (CAMs)", "maps", "occlusion sweep", "localization",
                         "second reader", "baselines", "trust", "fidelity")
#: What another training of the demo model's architecture gets (once): its CAMs of every test case,
#: their scores and the second reader's (the human benchmark), seconds to a minute on a CPU.
SAME_ARCH_STAGES = ("cams", "localization (CAMs)", "second reader")
#: On the demo model once every model has had its first look (fine-tuning takes minutes).
AFTER_FIRST_LOOK = ("shortcut",)
#: Each other model's own stages before its evidence.
OTHER_MODEL_STAGES = ("predictions", "thresholds")


@dataclass(frozen=True)
class Round:
    """One pass of the evidence over every model: ``main`` runs on the demo model, then each other
    model runs its predictions, thresholds and ``extra`` stages (a second architecture) at the same
    sizes (``same_arch`` instead for another training of the demo model's architecture: the second
    seed, there for repeatability, gets its CAMs), then ``after`` runs on the demo model. Samples
    are nested (:func:`~cxrxai.pipeline.maps.sample_pairs`), so a later round only adds cases."""

    name: str
    main: tuple[Stage, ...]
    extra: tuple[Stage, ...] = ()
    after: tuple[Stage, ...] = ()  # on the demo model, once every model has had its stages of the round
    # instead of ``extra`` for another training of the demo model's architecture
    same_arch: tuple[Stage, ...] = ()


def evidence_rounds(*, full: bool = False, phase: str = "evidence",
                    rounds: tuple[tuple[str, Evidence], ...] | None = None) -> list[Round]:
    """The evidence phase (``phase="all"``: the quick one's CAMs first) as rounds (default: the
    :data:`FIRST_LOOK` of every analysis on both models, then the full :data:`EVIDENCE`), so that every
    page of every model shows numbers, with their n, long before the whole evidence is done. The
    planted shortcut closes the first round. ``full``: one round without sampling."""
    if phase not in ("evidence", "all"):
        raise UnknownNameError("evidence phase", phase, ("evidence", "all"))
    if full:
        return [
            Round("full", tuple(demo_stages(full=True, phase=phase)), tuple(model_evidence_stages(full=True)))
        ]
    rounds = rounds or (("first look", FIRST_LOOK), ("full evidence", EVIDENCE))
    last = rounds[-1][1]
    out = []
    for k, (name, evidence) in enumerate(rounds):
        ahead = last if k < len(rounds) - 1 else None
        plan = demo_plan(evidence=evidence, ahead=ahead)
        names = PHASE_STAGES[phase if k == 0 else "evidence"]
        main = resolve([n for n in names if n not in AFTER_FIRST_LOOK], plan)
        after = resolve(AFTER_FIRST_LOOK, plan) if k == 0 else ()
        cams = resolve(SAME_ARCH_STAGES, plan) if k == 0 else ()
        extra = resolve(MODEL_EVIDENCE_STAGES, plan)
        out.append(Round(name, tuple(main), tuple(extra), tuple(after), tuple(cams)))
    return out


def demo_plan(*, full: bool = False, evidence: Evidence = EVIDENCE, ahead: Evidence | None = None,
              stages: tuple[str, ...] = ()) -> BuildPlan:
    """The demo's plan of ``stages`` on the test split: ``evidence``'s sample sizes (``full``: every
    positive for the costly explainers, the sweep on every case), grown to ``ahead``'s where a
    method explains all of an image's findings at once (:attr:`~cxrxai.pipeline.maps.MapConfig.ahead`)."""
    base = MapPlan()
    fidelity = FidelityPlan(cases=evidence.fidelity_cases, methods=("gradcam", "occlusion"))
    if full:
        trust = TrustPlan(images=evidence.trust_images, methods=(*TrustPlan().methods, TRUST_IG))
        return BuildPlan(stages, maps=base.full(), trust=trust, fidelity=fidelity)
    maps = tuple(
        MapConfig(
            m.method,
            m.params,
            max(m.per_label or 0, evidence.per_finding),
            None if ahead is None else max(m.per_label or 0, ahead.per_finding),
        )
        for m in base.maps
    )
    return BuildPlan(stages, maps=replace(base, maps=maps, sweep_cases=evidence.sweep_cases),
                     trust=TrustPlan(images=evidence.trust_images), fidelity=fidelity)


def _plans(full: bool, evidence: Evidence, ahead: Evidence | None = None):
    """The map, trust and fidelity plans of :func:`demo_plan`."""
    plan = demo_plan(full=full, evidence=evidence, ahead=ahead)
    return plan.maps, plan.trust, plan.fidelity


def demo_stages(*, full: bool = False, phase: str = "all", evidence: Evidence = EVIDENCE,
                ahead: Evidence | None = None) -> list[Stage]:
    """The demo build's stages of one phase (see :data:`PHASES`, :data:`PHASE_STAGES`). ``full``
    computes the costly explainers for every positive instead of ``evidence.per_finding`` per
    finding; ``ahead`` is the evidence a later round grows to."""
    if phase not in PHASES:
        raise UnknownNameError("demo phase", phase, PHASES)
    return demo_plan(full=full, evidence=evidence, ahead=ahead, stages=PHASE_STAGES[phase]).runnable()


def model_evidence_stages(*, full: bool = False, evidence: Evidence = EVIDENCE,
                          ahead: Evidence | None = None) -> list[Stage]:
    """A second model's explanation evidence (:data:`MODEL_EVIDENCE_STAGES`) at ``evidence``'s sizes."""
    plan = demo_plan(full=full, evidence=evidence, ahead=ahead, stages=MODEL_EVIDENCE_STAGES)
    return plan.runnable()


def _shortcut_setup(model_path, config: PhantomConfig, data_dir) -> dict:
    """The planted shortcut beside the demo model (the options of the ``shortcut`` stage,
    :mod:`cxrxai.pipeline.shortcut`): the demo's ResNet-18 as the control, the fine-tuned weights
    next to it, the shortcut cohort drawn like ``config``."""
    control = Path(model_path).with_name("demo-resnet18.pt")
    return {"control": control, "weights": control.with_name(f"{SHORTCUT_MODEL}.pt"),
            "config": shortcut_config(config), "data_dir": data_dir}


def demo_dataset_store(store_path: str | Path, *, data_dir: str | Path, config: PhantomConfig,
                       data: DemoData | None = None) -> Path:
    """A store with the demo's cases alone, as :func:`build_demo` registers them before its model (a
    build given it as its store skips that step): the phantoms rendered where missing, or ``data``."""
    with write_store(store_path) as writer:
        _put_demo_dataset(writer, given_or_loaded(data, config, data_dir), config, data_dir)
    return Path(store_path)


def _put_demo_dataset(writer, data, config: PhantomConfig, data_dir: str | Path) -> None:
    """Register the rendered phantoms: dataset, images, labels, exact masks and, on the test split,
    the synthetic second reader; published at once, so pages have cases while the rest builds."""
    images, labels = _demo_tables(data)
    writer.put_dataset(DEMO_DATASET, source="cxrxai phantom", labels=list(DEMO_LABELS),
                       root=str(absolute(data_dir)), config=json.loads(config.to_json()),
                       description="Deterministic phantom chest radiographs with exact lesion masks")
    writer.put_images(images)
    writer.put_labels(labels)
    writer.put_annotations(data.annotations)
    writer.put_annotations(synthetic_reader(data.annotations[data.annotations.image_id.isin(
        set(images.image_id[images.split == "test"]))]))
    writer.publish()


def _round_runs(rnd: Round, model, others: list) -> list[tuple]:
    """One round's runs in order, ``(other model or None for the main one, stages)``: the main model's
    stages, each other model's predictions and thresholds and the round's ``extra`` stages (``same_arch``
    for another training of the main model's architecture), then the round's ``after`` stages."""
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


def _run_rounds(ctx: BuildContext, rounds: list[Round], others: list, eval_ids: list[str], report: dict,
                progress: ProgressFn, on_stage: Callable[[dict], None] | None) -> None:
    """Run every round's runs (:func:`_round_runs`) in order, telling ``on_stage`` where the build is
    before each stage and filling ``report`` (one entry per round when there are several)."""
    model = ctx.model
    plans = [(rnd, _round_runs(rnd, model, others)) for rnd in rounds]
    total = sum(len(st) for _, runs in plans for _, st in runs)
    where = {"rounds": len(rounds), "stages": total, "stage": 0,  # the plan: every step, told once
             "plan": [[r, rnd.name, st.name, model.spec.name if other is None else other.spec.name]
                      for r, (rnd, runs) in enumerate(plans, start=1) for other, own in runs for st in own]}
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
                where.update(stage=where["stage"] + 1, round=r, round_name=rnd.name, name=st.name, model=name)
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


def build_demo(store_path: str | Path, *, model_path: str | Path, data_dir: str | Path,
               config: PhantomConfig | None = None, progress: ProgressFn = _quiet,
               stages: list[Stage] | None = None, fresh: bool = False, extra_models: list[Path] = (),
               prediction_cache: Path | None = None, write_prediction_cache: bool = False,
               phase: str = "all", extra_stages: list[Stage] = (), rounds: list[Round] | None = None,
               on_stage: Callable[[dict], None] | None = None, data: DemoData | None = None) -> dict:
    """Build (or resume) the demo store: cases, model, then ``stages`` (default: the stages of
    ``phase``, :func:`demo_stages`). Finishing the evidence (``all`` or ``evidence``) records
    ``evidence_built_at`` in the store's meta.

    ``extra_models`` (weights files) are registered, used for repeatability/reproducibility, and
    predicted on validation + test with their own thresholds (not in the quick phase); then each
    runs ``extra_stages`` (:func:`model_evidence_stages`: its explanation evidence) when its
    architecture differs from the main model's (a second seed serves repeatability only), after
    the main model's, with its name before each stage's in the progress.

    ``rounds`` (:func:`evidence_rounds`) replace ``stages`` and ``extra_stages``: each round runs the
    main model's stages, then each other model's, so every model has a first look at everything
    before any gets the full evidence (the report gets one entry per round). ``on_stage`` is told
    where the build is before each stage: ``{"round", "rounds", "round_name", "stage", "stages",
    "name", "model"}`` (1-based counts over the whole build), the first time also ``"plan"``: every
    step as ``[round, round name, stage name, model]``, in order.
    ``data``: the cohort where the caller has it (default: :func:`~cxrxai.data.demo.load_demo`'s).
    """
    if phase not in PHASES:
        raise UnknownNameError("demo phase", phase, PHASES)
    config = config or PhantomConfig()
    report: dict = {}
    t0 = time.monotonic()
    data = given_or_loaded(data, config, data_dir, progress=lambda d, n: progress("render phantoms", d, n))
    report["render_s"] = round(time.monotonic() - t0, 1)
    model = load(model_path)
    with write_store(store_path, fresh=fresh) as writer:
        if len(writer.images(dataset=DEMO_DATASET)) != len(data.specs):
            _put_demo_dataset(writer, data, config, data_dir)
        _put_model(writer, model.spec, model_path)
        # registered with their predictions
        others = [load(p) for p in extra_models] if phase != "quick" else []
        for path, other in zip(extra_models, others):
            _put_model(writer, other.spec, path)
        if others:  # the quick phase registers none: it leaves the evidence build's record alone
            writer.set_meta(CAM_ONLY_META, json.dumps({o.spec.name: model.spec.name for o in others
                                                       if o.spec.arch == model.spec.arch}))
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
