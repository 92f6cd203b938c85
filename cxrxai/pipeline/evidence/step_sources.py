"""The sources that compute one build step's numbers, and their hash: what a snapshot's step is
refused by (:func:`stale_steps`), so that a change to one stage's code recomputes that step only.

A step's sources are the module that defines its stage, the pipeline modules that module imports
(followed through their own imports), and each compute package those reach — ``data``,
``explain``, ``metrics``, ``models``, ``store`` and the numeric base modules
(:data:`~.provenance.NUMERIC_SOURCES`) — taken whole: inside a package, modules reach each other
through registries and deferred names that imports do not show. A new stage's module, imported
by nobody, is in no other step's sources.
"""

from __future__ import annotations

import ast
import hashlib
from functools import cache
from pathlib import Path

from ...errors import UnknownNameError
from ..stages import get_stage
from .provenance import _PACKAGE, NUMERIC_SOURCES

__all__ = ["stale_steps", "step_sources", "step_sources_sha256"]

_PIPELINE = "pipeline"


def _module_file(dotted: str) -> Path | None:
    """The file of module ``cxrxai.<…>`` (a package's ``__init__.py``); None outside the package."""
    parts = dotted.split(".")
    if parts[0] != "cxrxai":
        return None
    base = _PACKAGE.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imported(path: Path) -> set[str]:
    """Every ``cxrxai`` module ``path`` imports anywhere in it (deferred imports included)."""
    package = list(path.relative_to(_PACKAGE.parent).parts[:-1])  # of a module or a package's __init__
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            out.add(module)
            out |= {f"{module}.{a.name}" for a in node.names}
    return {m for m in out if m.startswith("cxrxai") and _module_file(m) is not None}


def _unit(path: Path) -> Path | None:
    """The source unit ``path`` belongs to: itself in the pipeline, else its numeric package or
    base module (None: code that decides no stored number)."""
    top = path.relative_to(_PACKAGE).parts[0]
    if top == _PIPELINE:
        return path
    return _PACKAGE / top if top in NUMERIC_SOURCES else None


@cache
def _sources(module: str) -> tuple[Path, ...]:
    seen: set[Path] = set()
    todo = [_module_file(module)]
    while todo:
        path = todo.pop()
        unit = _unit(path) if path is not None else None
        if unit is None or unit in seen:
            continue
        seen.add(unit)
        if unit == path:  # a pipeline module: follow its imports
            todo += [_module_file(m) for m in _imported(path)]
    return tuple(sorted(seen))


def step_sources(stage_name: str) -> tuple[Path, ...]:
    """The files and packages whose code decides the numbers of stage ``stage_name``."""
    return _sources(get_stage(stage_name).run.__module__)


def step_sources_sha256(stage_name: str) -> str:
    """One sha256 over the path and bytes of every ``.py`` file of :func:`step_sources`."""
    h = hashlib.sha256()
    for unit in step_sources(stage_name):
        for path in sorted(unit.rglob("*.py")) if unit.is_dir() else [unit]:
            h.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def stage_hashes(steps: list[list]) -> dict[str, str]:
    """``{stage: step_sources_sha256}`` for each registered stage of ``steps`` (a provenance's)."""
    out = {}
    for _round, _name, stage, _model in steps:
        try:
            out.setdefault(stage, step_sources_sha256(stage))
        except UnknownNameError:  # a step of no registered stage (the snapshot's own import)
            continue
    return out


def stale_steps(prov: dict) -> list[list]:
    """The steps of the snapshot ``prov`` whose numbers this checkout may compute otherwise: the
    sources of their stage hash differently now (or the snapshot records no hash for it). A step
    of no registered stage is not among them: no build would run it. None are when the snapshot
    records no per-step hashes at all (built before they were recorded: its steps stand as built)."""
    recorded = prov.get("step_sources")
    if recorded is None:
        return []
    steps = prov.get("steps", [])
    now = stage_hashes(steps)
    return [list(s) for s in steps if s[2] in now and now[s[2]] != recorded.get(s[2])]

