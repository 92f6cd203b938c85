"""The data audit of a store: one :class:`DatasetAudit` per dataset, its sections in reading order."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

import pandas as pd

from ..errors import UnknownNameError
from ..store import Store
from . import _sections as s
from ._sections import Section

__all__ = ["DatasetAudit", "StoreAudit", "audit_store", "list_command"]

_PROBLEM_COLUMNS = ["stage", "reason", "action", "file", "row", "image_id", "problem"]


@dataclass(frozen=True)
class DatasetAudit:
    """What cxrxai did to one dataset's data; ``sections`` in reading order (see :data:`SECTIONS`)."""

    dataset: str
    source: str
    n_images: int
    sections: tuple[Section, ...]

    def section(self, key: str) -> Section:
        for sec in self.sections:
            if sec.key == key:
                return sec
        raise UnknownNameError("audit section", key, [x.key for x in self.sections])


@dataclass(frozen=True)
class StoreAudit:
    """The audit of every (or one) dataset of the store at ``path``; ``empty`` says why there is none."""

    path: str
    schema_version: int
    built_at: str | None
    datasets: tuple[DatasetAudit, ...]
    empty: str | None = None


def list_command(path: str, dataset: str, fmt: str = "csv") -> str:
    """The command that lists every problem row of ``dataset`` (with the rest of its audit)."""
    store, name = shlex.quote(str(path)), shlex.quote(dataset)
    return f"python -m cxrxai audit-data --store {store} --dataset {name} --format {fmt}"


def _problem_sections(store: Store, problems: pd.DataFrame, path: str,
                      dataset: str) -> tuple[Section, Section]:
    titles = ("Problems by kind", "Every problem row")
    if not store.has_table("problems"):
        why = (f"this store (schema v{store.schema_version()}) has no problems table: re-run "
               "`python -m cxrxai precompute` with this cxrxai to record what was left out")
        return Section("problem_kinds", titles[0], empty=why), Section("problems", titles[1], empty=why)
    if problems.empty:
        why = ("no problem rows: no row, film, box, label or prediction of this dataset was left out or "
               "changed")
        return Section("problem_kinds", titles[0], empty=why), Section("problems", titles[1], empty=why)
    rows = problems[_PROBLEM_COLUMNS].reset_index(drop=True)
    kinds = (rows.groupby(["stage", "reason", "action"], sort=False).size().reset_index(name="n")
             .sort_values(["n", "stage", "reason"], ascending=[False, True, True], ignore_index=True))
    lines = (f"{s.count(len(rows))} problem rows in {s.count(len(kinds))} kinds; list them all with "
             f"`{list_command(path, dataset)}`",)
    return Section("problem_kinds", titles[0], lines, kinds), Section("problems", titles[1], (), rows)


def audit_dataset(store: Store, dataset: str, source: str) -> DatasetAudit:
    """Every section of one dataset's audit (see the package docstring)."""
    n_images = store.audit_image_count(dataset)
    problems = s.classify(store.problem_splits(dataset))
    predicted = store.predicted_per_split(dataset)
    notes, orientation = s.film_notes(store, dataset, n_images)
    kinds, rows = _problem_sections(store, problems, str(store.path), dataset)
    sections = (s.films(n_images, problems, recorded=store.has_table("problems")), notes, orientation,
                s.demographics(store, dataset, n_images), s.label_matches(store, dataset, predicted),
                s.splits(store, dataset, problems, predicted), kinds, rows)
    return DatasetAudit(dataset, source, n_images, sections)


def audit_store(store: Store, *, dataset: str | None = None) -> StoreAudit:
    """The audit of each dataset of ``store`` (only ``dataset`` when given; an unknown name raises
    :class:`~cxrxai.errors.UnknownNameError` listing the store's datasets)."""
    found = store.datasets()
    names = found["dataset"].tolist() if len(found) else []
    sources = dict(zip(names, found["source"])) if names else {}
    if dataset is not None and dataset not in names:
        raise UnknownNameError("dataset", dataset, names)
    head = (str(store.path), store.schema_version(), store.meta("built_at"))
    if not names:
        return StoreAudit(*head, (), empty="the store holds no dataset yet: build one with `python -m "
                                           "cxrxai precompute --dataset NAME --root DIR ...` (or `python -m "
                                           "cxrxai demo`)")
    chosen = [dataset] if dataset is not None else names
    return StoreAudit(*head, tuple(audit_dataset(store, d, str(sources[d])) for d in chosen))
