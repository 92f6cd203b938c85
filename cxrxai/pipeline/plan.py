"""A build plan: the ordered stage names of a build and every choice its stages read, given once.

The split is the plan's alone: the map plan's is set from it, the trust and fidelity stages and
the baselines read it through the plan (and the build's context), so no caller hands it down.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .maps import MapPlan
from .runner import Stage
from .stages import resolve, validate
from .trust import FidelityPlan, TrustPlan

__all__ = ["BuildPlan"]


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
