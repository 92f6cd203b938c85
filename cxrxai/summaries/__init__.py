"""Store-level summaries that pages and reports show (data in, DataFrames out; no UI):

* :mod:`.predictions` — the split a view evaluates, predictions, AUROC, cohort and labels;
* :mod:`.groups` — which groupings a model's images have, the cases a subgroup's bar stands for;
* :mod:`.cases` — the explorer's case table (every metric of the ``cases`` view) and its filters;
* :mod:`.hints` — how missing evidence gets filled, from the build's status;
* :mod:`.captions` — the sentences beside a table, from the store's own facts.
"""

from __future__ import annotations

from .captions import (
    box_geometry_caveat,
    findings_without_rows,
    ranking_caption,
    reference_regions,
    sweep_ran,
    sweep_stored,
    trust_gaps,
)
from .cases import case_probabilities, case_table, filter_cases, finding_choices, outcome
from .groups import group_pairs, grouping_counts, missing_groupings_note
from .hints import FILLED_BY, cannot_have, comparison_hint, fill_command, fill_hint, resume_hint, will_come
from .predictions import (
    ALL,
    cohort_table,
    label_table,
    model_performance,
    prediction_table,
    resolve_split,
    roc_table,
    split_choices,
)

__all__ = [
    "ALL",
    "FILLED_BY",
    "box_geometry_caveat",
    "cannot_have",
    "case_probabilities",
    "case_table",
    "cohort_table",
    "comparison_hint",
    "fill_command",
    "fill_hint",
    "filter_cases",
    "finding_choices",
    "findings_without_rows",
    "group_pairs",
    "grouping_counts",
    "label_table",
    "missing_groupings_note",
    "model_performance",
    "outcome",
    "prediction_table",
    "ranking_caption",
    "reference_regions",
    "resolve_split",
    "resume_hint",
    "roc_table",
    "split_choices",
    "sweep_ran",
    "sweep_stored",
    "trust_gaps",
    "will_come",
]
