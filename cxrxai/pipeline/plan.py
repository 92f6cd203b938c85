"""A build plan: the ordered stage names of a build and every choice its stages read, given once.

The split is the plan's alone: the map plan's is set from it, the trust and fidelity stages and
the baselines read it through the plan (and the build's context), so no caller hands it down.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .maps import MapPlan
from .runner import Stage
from .stages import resolve, validate

__all__ = ["TRUST_IG", "BuildPlan", "FidelityPlan", "TrustPlan"]

#: Integrated Gradients as Arun et al. test it; it triples the demo's trust stage on a CPU, so only
#: the full build (``cxrxai demo --full``) adds it to the default methods.
TRUST_IG = ("ig", (("steps", 16), ("reduce", "abs_sum")))


@dataclass(frozen=True)
class TrustPlan:
    images: int = 6
    methods: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = (
        ("gradcam", ()),
        ("saliency", (("reduce", "abs_sum"),)),
        ("guided_backprop", (("reduce", "abs_sum"),)),
    )
    data_ranges: tuple[float, ...] = (1.0, 2.0)
    pairs: int = 50
    seed: int = 0


@dataclass(frozen=True)
class FidelityPlan:
    cases: int = 2
    methods: tuple[str, ...] = ("gradcam",)
    region: int = 32
    iterations: int = 200
    subset: int = 1024
    seed: int = 0


@dataclass(frozen=True)
class BuildPlan:
    """``stages``: registered stage names, in order (:mod:`cxrxai.pipeline.stages`); ``split``: the
    split the build evaluates (``None``: every image); ``maps``, ``trust``, ``fidelity``: what the
    map, trust and fidelity stages compute (the map plan's split is this plan's)."""

    stages: tuple[str, ...] = ()
    split: str | None = "test"
    maps: MapPlan = field(default_factory=MapPlan)
    trust: TrustPlan = field(default_factory=TrustPlan)
    fidelity: FidelityPlan = field(default_factory=FidelityPlan)

    def __post_init__(self):
        object.__setattr__(self, "stages", validate(self.stages))
        object.__setattr__(self, "maps", replace(self.maps, split=self.split))

    def runnable(self) -> list[Stage]:
        """The plan's stages, in order, each bound to its parts of the plan."""
        return resolve(self.stages, self)
