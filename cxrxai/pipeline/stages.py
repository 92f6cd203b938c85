"""The stage registry: every stage of a build declared once, where its function is defined.

A stage says its name, the store tables it reads and writes, which parts of the
:class:`~cxrxai.pipeline.plan.BuildPlan` it takes, and a line of help; a build (the demo, a user's
dataset) is an ordered list of stage names, resolved here against one plan. ``precompute
--analyses`` offers the stages registered as analyses, with their help.

Adding a stage is two files: a module of this package that defines it (with :func:`stage` on its
function; every module here is imported before a lookup) and the build that names it
(``pipeline/demo_plan.py`` or ``pipeline/dataset.py``; an analysis needs no second file: ``--analyses``
offers it). A stage that keeps its numbers in a table of its own declares it there too
(:class:`~cxrxai.store.StageTable`: columns and key); the store creates it on the first
``put_table``, and no schema version changes::

    @stage("my stage", reads=("maps",), writes=("my_counts",), help="what it computes",
           tables=(StageTable("my_counts", {"model_id": "VARCHAR", "n": "INTEGER"}, key=("model_id",)),))
    def my_stage(ctx) -> dict: ...
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import import_module
from types import MappingProxyType

from ..errors import StageError, UnknownNameError
from ..store import StageTable, declare_table, undeclare_table
from .runner import Stage

__all__ = [
    "STAGES",
    "StageSpec",
    "analysis_help",
    "analysis_names",
    "analysis_stages",
    "get_stage",
    "register_stage",
    "resolve",
    "stage",
    "stage_names",
    "unregister_stage",
    "validate",
]


@dataclass(frozen=True)
class StageSpec:
    """One registered stage. ``run(ctx, **parts)`` gets, for each ``uses`` item (its parameter →
    an attribute of the build plan), that part of the plan. ``analysis``: the name under which a
    user adds it to a dataset build (``--analyses``), followed there by the stages of ``then``.
    ``tables``: the tables it owns (each among ``writes``), created by the store on first write."""

    name: str
    run: Callable[..., dict]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    help: str
    uses: Mapping[str, str] = field(default_factory=dict)
    analysis: str | None = None
    then: tuple[str, ...] = ()
    tables: tuple[StageTable, ...] = ()

    def bind(self, plan) -> Stage:
        """The runnable stage of ``plan`` (reported under the stage's name)."""
        parts = {param: getattr(plan, attr) for param, attr in self.uses.items()}
        return Stage(self.name, lambda ctx: self.run(ctx, **parts))

    def describe(self) -> str:
        """Its help with what it reads and writes (the CLI's help for an analysis)."""
        return f"{self.help} (reads {', '.join(self.reads)}; writes {', '.join(self.writes)})"


_REGISTRY: dict[str, StageSpec] = {}
#: The registry, read-only.
STAGES = MappingProxyType(_REGISTRY)


def register_stage(spec: StageSpec) -> StageSpec:
    """Add ``spec`` to the registry; a name (or analysis name) taken by another stage is an error."""
    taken = _REGISTRY.get(spec.name)
    if taken is not None and taken.run is not spec.run:
        raise StageError(f"a stage named {spec.name!r} is already registered (by {taken.run.__qualname__}); "
                         "choose another name")
    if spec.analysis is not None and spec.analysis in _by_analysis(exclude=spec.name):
        raise StageError(f"an analysis named {spec.analysis!r} is already registered; choose another name")
    unwritten = [t.name for t in spec.tables if t.name not in spec.writes]
    if unwritten:
        raise StageError(f"stage {spec.name!r} declares the tables {unwritten} but does not write them; "
                         f"add them to writes={spec.writes}")
    for table in spec.tables:
        declare_table(table)
    _REGISTRY[spec.name] = spec
    return spec


def unregister_stage(name: str) -> None:
    """Remove a stage (a test's toy) and the declarations of the tables it alone owned; an unknown
    name is an :class:`UnknownNameError`."""
    spec = get_stage(name)
    del _REGISTRY[name]
    owned = {t.name for other in _REGISTRY.values() for t in other.tables}
    for table in spec.tables:
        if table.name not in owned:
            undeclare_table(table.name)


def stage(name: str, *, reads: Iterable[str], writes: Iterable[str], help: str,
          uses: Mapping[str, str] | None = None, analysis: str | None = None,
          then: Iterable[str] = (), aliases: Iterable[str] = (), tables: Iterable[StageTable] = ()):
    """Register the decorated function as stage ``name`` (and as each of ``aliases``: the same
    work run again later in a build under its own report entry); the function is returned as is.
    ``tables``: the :class:`~cxrxai.store.StageTable` s it owns (the store creates each on first write)."""

    def register(run: Callable[..., dict]) -> Callable[..., dict]:
        for each in (name, *aliases):
            register_stage(StageSpec(each, run, tuple(reads), tuple(writes), help, dict(uses or {}),
                                     analysis if each == name else None, tuple(then), tuple(tables)))
        return run

    return register


@cache
def _load() -> None:
    """Import every module of the pipeline package once, so the registrations at their stage
    functions have run (a new module with a :func:`stage` is found without being listed)."""
    package = import_module(__package__)
    for info in pkgutil.iter_modules(package.__path__):
        import_module(f"{__package__}.{info.name}")


def stage_names() -> tuple[str, ...]:
    """Every registered stage's name, in registration order."""
    _load()
    return tuple(_REGISTRY)


def get_stage(name: str) -> StageSpec:
    """The stage registered as ``name``; else an :class:`UnknownNameError` naming the registered ones."""
    _load()
    if name not in _REGISTRY:
        raise UnknownNameError("stage", name, tuple(_REGISTRY))
    return _REGISTRY[name]


def validate(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` (a build's ordered stage list), each checked against the registry."""
    return tuple(get_stage(n).name for n in names)


def resolve(names: Iterable[str], plan) -> list[Stage]:
    """The runnable stages of ``names``, in order, each bound to its parts of ``plan``."""
    return [get_stage(n).bind(plan) for n in validate(names)]


def _by_analysis(exclude: str | None = None) -> dict[str, StageSpec]:
    return {s.analysis: s for s in _REGISTRY.values() if s.analysis is not None and s.name != exclude}


def analysis_names() -> tuple[str, ...]:
    """The names ``precompute --analyses`` accepts: every stage registered as an analysis."""
    _load()
    return tuple(_by_analysis())


def analysis_stages(analyses: Iterable[str]) -> tuple[str, ...]:
    """The stage names ``analyses`` add to a build (each analysis's stage, then its ``then``)."""
    known = analysis_names()
    out: list[str] = []
    for a in analyses:
        if a not in known:
            raise UnknownNameError("analysis", a, known)
        spec = _by_analysis()[a]
        out += [spec.name, *spec.then]
    return validate(out)


def analysis_help() -> str:
    """``--analyses`` help: each analysis with what it does, generated from the registry."""
    _load()
    parts = [f"{a} — {s.describe()}" for a, s in _by_analysis().items()]
    return "also run, comma-separated: " + "; ".join(parts)
