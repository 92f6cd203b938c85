"""What the demo build computes, and in which order: the evidence's sample sizes, its rounds and
each phase's ordered stage names, resolved into a :class:`~cxrxai.pipeline.plan.BuildPlan`.

:mod:`.demo` runs these plans against a store; this module only decides them, so a change of how
much evidence the demo ships (or of its order) is made here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import UnknownNameError
from .maps import MapConfig, MapPlan
from .phases import PHASES
from .plan import TRUST_IG, BuildPlan, FidelityPlan, TrustPlan
from .runner import Stage
from .stages import resolve

__all__ = [
    "AFTER_FIRST_LOOK",
    "EVIDENCE",
    "EVIDENCE_STAGES",
    "FIRST_LOOK",
    "MODEL_EVIDENCE_STAGES",
    "OTHER_MODEL_STAGES",
    "PHASE_STAGES",
    "QUICK_STAGES",
    "SAME_ARCH_STAGES",
    "Evidence",
    "Round",
    "demo_plan",
    "demo_stages",
    "evidence_rounds",
    "model_evidence_stages",
]


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

#: A first look at every analysis: 10 positives per finding for each costly explainer (fewer
#: true positives where the model misses some), 8 sweep cases, fidelity on 15 cases and trust on
#: 10 images, so every page of both models shows numbers, with their n, long before the full
#: evidence is done.
FIRST_LOOK = Evidence(per_finding=10, sweep_cases=8, fidelity_cases=15, trust_images=10)


#: The demo's builds, ordered lists of registered stage names (:mod:`cxrxai.pipeline.stages`).
#: ``quick``: what the app needs to open; ``evidence``: the CAMs' scores first (a minute), then
#: the costly maps and what needs them; ``all``: both, in that order.
QUICK_STAGES = ("predictions", "thresholds", "cams")
EVIDENCE_STAGES = (
    "predictions",
    "thresholds",
    "localization (CAMs)",
    "maps",
    "occlusion sweep",
    "localization",
    "second reader",
    "baselines",
    "geometry",
    "trust",
    "fidelity",
    "shortcut",
)
PHASE_STAGES = {
    "quick": QUICK_STAGES,
    "evidence": EVIDENCE_STAGES,
    "all": (*QUICK_STAGES, *EVIDENCE_STAGES[3:]),
}
#: The explanation evidence a second model gets after its predictions and thresholds (the demo's
#: ResNet-18), so every Explanations page works for it too; the masks' geometry and the shortcut
#: are the main model's (geometry does not depend on a model).
MODEL_EVIDENCE_STAGES = (
    "cams",
    "localization (CAMs)",
    "maps",
    "occlusion sweep",
    "localization",
    "second reader",
    "baselines",
    "trust",
    "fidelity",
)
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
    # on the demo model, once every model has had its stages of the round
    after: tuple[Stage, ...] = ()
    # instead of ``extra`` for another training of the demo model's architecture
    same_arch: tuple[Stage, ...] = ()


def evidence_rounds(*, full: bool = False, phase: str = "evidence",
                    rounds: tuple[tuple[str, Evidence], ...] | None = None) -> list[Round]:
    """The evidence phase (``phase="all"``: the quick one's CAMs first) as rounds.

    Default: the :data:`FIRST_LOOK` of every analysis on both models, then the full
    :data:`EVIDENCE`, so that every page of every model shows numbers, with their n, long before
    the whole evidence is done. The planted shortcut closes the first round. ``full``: one round
    without sampling.
    """
    if phase not in ("evidence", "all"):
        raise UnknownNameError("evidence phase", phase, ("evidence", "all"))
    if full:
        main = tuple(demo_stages(full=True, phase=phase))
        return [Round("full", main, tuple(model_evidence_stages(full=True)))]
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
    """The demo's plan of ``stages`` on the test split.

    ``evidence``'s sample sizes (``full``: every positive for the costly explainers, the sweep on
    every case), grown to ``ahead``'s where a method explains all of an image's findings at once
    (:attr:`~cxrxai.pipeline.maps.MapConfig.ahead`).
    """
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
    plan = demo_plan(full=full, evidence=evidence, ahead=ahead, stages=PHASE_STAGES[phase])
    return plan.runnable()


def model_evidence_stages(*, full: bool = False, evidence: Evidence = EVIDENCE,
                          ahead: Evidence | None = None) -> list[Stage]:
    """A second model's explanation evidence (:data:`MODEL_EVIDENCE_STAGES`) at ``evidence``'s
    sizes."""
    plan = demo_plan(full=full, evidence=evidence, ahead=ahead, stages=MODEL_EVIDENCE_STAGES)
    return plan.runnable()
