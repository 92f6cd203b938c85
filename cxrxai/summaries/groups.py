"""Which groupings a model's images have, and the cases a subgroup's bar stands for.

A subgroup page offers a grouping only where some image has its value (race and insurance exist
only for MIMIC-CXR read with MIMIC-IV's admissions) and says why the others are not offered; a bar
of a grouping the explorer has no filter for opens exactly its (image, finding) pairs, the rows
:func:`cxrxai.metrics.fairness.subgroup_rates` counted for it.
"""

from __future__ import annotations

from ..demographic_groups import regroup
from ..labels import ADMISSION_FIELDS, GROUPINGS
from ..store import Store
from .hints import RACE_INSURANCE_SOURCE
from .predictions import prediction_table

__all__ = ["group_pairs", "grouping_counts", "missing_groupings_note"]


def grouping_counts(store: Store, model_id: str, *, split: str | None = None) -> dict[str, int]:
    """For each of :data:`~cxrxai.labels.GROUPINGS`, how many of the images ``model_id`` predicted
    in ``split`` (as :func:`prediction_table` resolves it) have a value (0: none, or a store from
    before that grouping was recorded)."""
    images = prediction_table(store, model_id, split=split).drop_duplicates("image_id")
    return {g: int(images[g].notna().sum()) if g in images else 0 for g in GROUPINGS}


def missing_groupings_note(counts: dict[str, int]) -> str | None:
    """The sentence a page shows under its grouping picker for the groupings of ``counts``
    (:func:`grouping_counts`) that no image has, with where their values come from; None when every
    grouping has values."""
    missing = [g for g, n in counts.items() if not n]
    if not missing:
        return None
    note = f"Not offered: {', '.join(missing)}, which none of these images records."
    if set(ADMISSION_FIELDS) & set(missing):
        note += f" Where they come from: {RACE_INSURANCE_SOURCE}."
    return note


def group_pairs(store: Store, model_id: str, label: str, group: dict[str, str], *, positives: bool,
                split: str | None = None, race: str = "as_recorded", insurance: str = "as_recorded"
                ) -> list[tuple[str, str]]:
    """The (image, finding) pairs of ``label`` in ``group`` (grouping column → value, race and
    insurance grouped as the report was: ``race`` / ``insurance``) that a TPR or FNR bar counts
    (``positives``: its ``n_pos``) or an FPR bar (its ``n_neg``): the rows with a decision and a
    ground truth, as :func:`~cxrxai.metrics.fairness.subgroup_rates` keeps them."""
    table = regroup(prediction_table(store, model_id, split=split), race=race, insurance=insurance)
    rows = table[(table.label == label)].dropna(subset=["predicted", "ground_truth"])
    for column, value in group.items():
        rows = rows[rows[column].astype("string") == str(value)]
    rows = rows[rows.ground_truth.astype(float).eq(1.0) == positives]
    return sorted(zip(rows.image_id.astype(str), rows.label.astype(str)))
