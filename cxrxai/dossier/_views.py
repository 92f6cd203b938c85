"""The dossier's parts: a section is registered where it is defined (:func:`section`) and returns
blocks; a table block is a *view* of a registered report (:class:`View`: the report, its options,
the columns shown), run once per dossier through :func:`cxrxai.reports.run_report` — so every number
the document prints is the one ``cxrxai report NAME`` prints — or, when the store cannot give it, a
:class:`Missing` block saying why and which command fills it."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from ..errors import CxrxaiError, StoreError
from ..reports import REPORTS, report_options, run_report
from ..store import Store

__all__ = ["SECTIONS", "Context", "Figure", "Gallery", "Missing", "Section", "Table", "Text", "View",
           "section"]


@dataclass(frozen=True)
class View:
    """Report ``report`` with ``options``, shown as ``title`` with the columns ``columns`` (all when
    empty); ``reference`` names the method's paper."""

    report: str
    title: str
    options: dict = field(default_factory=dict)
    columns: tuple[str, ...] = ()
    reference: str = ""
    rows: Callable[[pd.DataFrame], pd.DataFrame] | None = None  # a row order or filter (flagged first)
    limit: int | None = None  # print the first rows only; the note gives the command for all of them


@dataclass
class Table:
    view: View
    frame: pd.DataFrame  # the report's own rows (numbers untouched), the view's columns
    note: str = ""


@dataclass
class Missing:
    what: str
    why: str  # the library's own sentence: what is missing and the command that fills it


@dataclass
class Text:
    text: str
    kind: str = "p"  # "p", "finding", "h3"


@dataclass
class Figure:
    title: str
    figure: object  # a plotly Figure, drawn by the same cxrxai.present.viz function as the page


@dataclass
class Gallery:
    title: str
    pictures: list  # (caption, data URI) pairs, drawn by cxrxai.present.gallery as the explorer draws them
    note: str = ""


Block = Table | Missing | Text | Figure | Gallery


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    order: int  # reading order
    build: Callable[[Context], list]
    late: bool = False  # built after every other section: it reads what they ran (or could not)


SECTIONS: dict[str, Section] = {}


def section(key: str, title: str, *, order: int, late: bool = False):
    """Register the decorated ``fn(ctx) -> list of blocks`` as section ``key``, read in ``order``;
    a ``late`` section is built after all others (it reads what they ran)."""

    def register(fn):
        if key in SECTIONS:
            raise StoreError(f"a dossier section named {key!r} is already registered")
        SECTIONS[key] = Section(key, title, order, fn, late)
        return fn

    return register


class Context:
    """One dossier's inputs and every report it ran (each view is run once; the summary's findings
    read the same frames the sections print)."""

    def __init__(self, store: Store, model_id: str, vs: str | None = None, *, correction: str = "holm"):
        self.store, self.model_id, self.vs, self.correction = store, model_id, vs, correction
        self._results: dict[tuple, pd.DataFrame | Missing] = {}
        self.ran: list[View] = []  # every view run, in order: the provenance appendix lists them
        self.missing: list[Missing] = []  # every analysis that could not be shown, for Limitations
        self._audit = None

    def options(self, view: View) -> dict:
        """The view's options with the report's defaults filled in (what the provenance prints)."""
        return {**report_options(view.report), **view.options}

    def audit(self):
        """The store's data audit (:func:`cxrxai.audit.audit_store`), read once per document."""
        if self._audit is None:
            from ..audit import audit_store

            self._audit = audit_store(self.store)
        return self._audit

    @staticmethod
    def _key(view: View) -> tuple:
        return view.report, tuple(sorted((k, str(v)) for k, v in view.options.items()))

    def given(self, view: View, frame: pd.DataFrame) -> None:
        """Use ``frame`` as the view's report (one the caller already ran with the same options)."""
        self._results[self._key(view)] = frame

    def run(self, view: View) -> pd.DataFrame | Missing:
        key = self._key(view)
        if key not in self._results:
            self.ran.append(view)
            try:
                self._results[key] = run_report(self.store, view.report, self.model_id, **view.options)
            except CxrxaiError as err:
                missing = Missing(f"{view.title} ({REPORTS[view.report].reproduces})", str(err))
                self._results[key] = missing
                self.missing.append(missing)
        return self._results[key]

    def table(self, view: View, note: str = "") -> Table | Missing:
        """The view's block: its report's rows and columns, or why there are none."""
        result = self.run(view)
        if isinstance(result, Missing):
            return result
        rows = view.rows(result) if view.rows else result
        cols = [c for c in view.columns if c in rows.columns] or list(rows.columns)
        if view.limit is not None and len(rows) > view.limit:
            first = f"The first {view.limit} of {len(rows):,} rows; all of them: `{self.command(view)}`."
            note = f"{note} {first}" if note else first
            rows = rows.head(view.limit)
        return Table(view, rows[cols].reset_index(drop=True), note)

    def command(self, view: View) -> str:
        """The ``report`` command that prints this view's whole table."""
        parts = ["python", "-m", "cxrxai", "report", view.report, "--store", str(self.store.path),
                 "--model", self.model_id]
        for key, value in view.options.items():
            parts += ["--option", f"{key}={value}"]
        return shlex.join(parts)
