"""The report registry: each report is ``fn(store, model_id, **options) -> DataFrame``, registered
where it is defined (:func:`report`) with what it reproduces; its options are its keyword arguments
(the papers' conventions as defaults), and a report whose ``metric`` option picks a localization
metric names the metric view (:data:`cxrxai.metrics.registry.VIEWS`) its choices come from."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from ..errors import StoreError, UnknownNameError
from ..metrics import registry as metric_registry
from ..store import Store
from ..summaries import ALL, resolve_split

__all__ = ["REPORTS", "Report", "metric_choices", "report", "report_options", "run_report", "split_used"]


@dataclass(frozen=True)
class Report:
    name: str
    reproduces: str
    fn: Callable[..., pd.DataFrame]
    needs_model: bool = True  # False: the report reads its own models' rows (the planted shortcut)
    #: The metric view its ``metric`` option chooses from (None: the report has no such option).
    view: str | None = None
    #: True: the report compares the model with another, named by its ``vs`` option.
    pairs: bool = False

    def __post_init__(self):
        if self.view is not None and self.view not in metric_registry.VIEWS:
            raise UnknownNameError("metric view", self.view, metric_registry.VIEWS)


REPORTS: dict[str, Report] = {}


def report(name: str, reproduces: str, *, needs_model: bool = True, view: str | None = None,
           pairs: bool = False):
    """Register the decorated function as report ``name`` (the function itself is returned);
    ``pairs``: it compares two models (its ``vs`` option names the second)."""

    def register(fn: Callable[..., pd.DataFrame]) -> Callable[..., pd.DataFrame]:
        if name in REPORTS:
            raise StoreError(f"a report named {name!r} is already registered")
        if pairs and "vs" not in inspect.signature(fn).parameters:
            raise StoreError(f"report {name!r} compares two models but has no vs option")
        REPORTS[name] = Report(name, reproduces, fn, needs_model, view, pairs)
        return fn

    return register


def _get(name: str) -> Report:
    if name not in REPORTS:
        raise UnknownNameError("report", name, REPORTS)
    return REPORTS[name]


def report_options(name: str) -> dict[str, object]:
    """The options of report ``name`` with their defaults (``slice_`` is spelled ``slice``)."""
    params = list(inspect.signature(_get(name).fn).parameters.values())[2:]
    return {p.name.rstrip("_"): p.default for p in params}


def split_used(store: Store, model_id: str, split: str | None) -> str:
    """The split a report's ``split`` option evaluates, by name: ``None`` is the test split where the
    model has predictions there, else ``all`` (every image it has a prediction for)."""
    return resolve_split(store, model_id, split) or ALL


def metric_choices(name: str) -> list[str]:
    """The metrics report ``name``'s ``metric`` option takes: every registered metric of its view,
    the report's default first (what a picker opens on); empty for a report without that option.

    >>> metric_choices("explainer-ranking")[:3]
    ['iou', 'hit', 'roc_auc']
    """
    view = _get(name).view
    if view is None:
        return []
    names = metric_registry.metric_names(view=view)
    default = report_options(name).get("metric")
    return ([default] if default in names else []) + [n for n in names if n != default]


def run_report(store: Store, name: str, model_id: str, **options) -> pd.DataFrame:
    """Run report ``name``; options as typed on a command line too (``slice``, ``by="sex,age_bin"``);
    a ``metric`` must be one of :func:`metric_choices`.

    >>> run_report(None, "subgroup-tpr", "m", colour="red")
    Traceback (most recent call last):
    ...
    cxrxai.errors.UnknownNameError: unknown option of report 'subgroup-tpr' 'colour';
    allowed: 'by', 'ci', 'split', 'race', 'insurance'
    """
    allowed = report_options(name)
    kwargs = {}
    for key, value in options.items():
        key = key.rstrip("_")
        if key not in allowed:
            raise UnknownNameError(f"option of report {name!r}", key, allowed)
        if key == "by" and isinstance(value, str) and "," in value:
            value = [v.strip() for v in value.split(",") if v.strip()]
        if key == "metric" and REPORTS[name].view is not None and value not in metric_choices(name):
            raise UnknownNameError(f"metric of report {name!r}", value, metric_choices(name))
        kwargs[key + "_" if key == "slice" else key] = value
    return REPORTS[name].fn(store, model_id, **kwargs)
