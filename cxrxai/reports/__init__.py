"""The papers' tables from a store (``python -m cxrxai report NAME``; the app's pages): the report
registry (:mod:`._registry`: each report is ``fn(store, model_id, **options) -> DataFrame`` with what it
reproduces; conventions are options, the papers' defaults) and one module per paper, each registering
its reports where it defines them (every module here that uses ``@report(`` is imported with the package):

* :mod:`.performance` — the model card (AUROC per label);
* :mod:`.thesis` — Bel Bordes's thesis: Table 1, the explainer ranking, the occlusion sweep, fidelity;
* :mod:`.saporta` — Saporta et al. (CheXlocalize): localization, human benchmark, geometry, confidence;
* :mod:`.subgroups` — subgroups: TPR (thesis Fig. 2), underdiagnosis (Seyyed-Kalantari et al.),
  explanation metrics by subgroup (thesis Fig. 5);
* :mod:`.arun` — Arun et al.: trust PASS/FAIL, randomization, similarity;
* :mod:`.shortcut` — the planted shortcut: model or method;
* :mod:`.compare` — claims that groups or two models differ: subgroup gaps and a model against the one
  it replaces, each with its test, n and family correction.
"""

from __future__ import annotations

import sys

from ..discovery import discover
from ._cases import localization_cases
from ._registry import REPORTS, Report, metric_choices, report, report_options, run_report, split_used
from .arun import degradation_thresholds, randomization_curves, similarity_scores, trust_table
from .compare import model_comparison, model_disagreements, subgroup_gaps
from .performance import performance
from .saporta import (
    confidence_regressions,
    geometry_cases,
    geometry_regressions,
    human_benchmark,
    localization_summary,
)
from .shortcut import shortcut_explainers, shortcut_reliance
from .subgroups import explanation_auc_by_subgroup, metric_by_subgroup, subgroup_tpr, underdiagnosis
from .thesis import explainer_ranking, explainer_table, fidelity_summary, occlusion_sweep

#: Every module of this package that registers a report (``@report(``), in name order: a new paper's
#: module is found without an import line here (the lines above are this package's names).
discover(sys.modules[__name__], "@report(")

__all__ = [
    "REPORTS",
    "Report",
    "confidence_regressions",
    "degradation_thresholds",
    "explainer_ranking",
    "explainer_table",
    "explanation_auc_by_subgroup",
    "fidelity_summary",
    "geometry_cases",
    "geometry_regressions",
    "human_benchmark",
    "localization_cases",
    "localization_summary",
    "metric_by_subgroup",
    "metric_choices",
    "model_comparison",
    "model_disagreements",
    "occlusion_sweep",
    "performance",
    "randomization_curves",
    "report",
    "report_options",
    "run_report",
    "shortcut_explainers",
    "shortcut_reliance",
    "similarity_scores",
    "split_used",
    "subgroup_gaps",
    "subgroup_tpr",
    "trust_table",
    "underdiagnosis",
]
