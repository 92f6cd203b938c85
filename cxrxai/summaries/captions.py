"""The sentences a page and the dossier print beside a table, from the store's own facts (what the
reference reader drew, what was planned and computed), never the demo's: one function per caption,
so every place says the same."""

from __future__ import annotations

import pandas as pd

from ..store import SWEEP_PLAN_META, Store
from .hints import comparison_hint, fill_command, is_demo

__all__ = ["box_geometry_caveat", "findings_without_rows", "ranking_caption", "reference_regions",
           "sweep_ran", "sweep_stored", "trust_gaps"]

_CRITERIA = ("utility", "randomization", "repeatability", "reproducibility")
_SLICE_WORDS = {"true_positive": "true-positive", "positive": "positive", "all": "scored"}


def _kinds(store: Store) -> pd.Series:
    """The reference reader's (gt) annotations per kind (box, mask, …)."""
    ann = store.annotations(reader="gt")
    return ann["kind"].value_counts() if len(ann) else pd.Series(dtype=int)


def reference_regions(store: Store) -> str:
    """What the scores are measured against: the reference reader (gt) and what it drew — the demo's
    exact phantom masks, or this store's boxes and masks with their counts."""
    if is_demo(store):
        return "the reference reader (gt): exact phantom masks"
    kinds = _kinds(store)
    if kinds.empty:
        return "the reference reader (gt): no box or mask"
    drawn = " and ".join(f"{n} {kind}{'es' if kind == 'box' and n != 1 else 's' if n != 1 else ''}"
                         for kind, n in kinds.items())
    return f"the reference reader (gt): {drawn}"


def ranking_caption(store: Store, *, n_boot: int = 1000) -> str:
    """The caption of the explainer ranking (the Benchmark page's, the dossier's) run with
    ``n_boot`` resamples (the report's option)."""
    return ("Per finding, explainers by mean score; each is compared with the best on the cases both "
            f"scored (paired bootstrap over cases, {n_boot:,} resamples, 95 % percentile interval). "
            f"\"behind\": the interval excludes 0. Against {reference_regions(store)}.")


def findings_without_rows(store: Store, model_id: str, table: pd.DataFrame, slice_: str) -> str | None:
    """Which findings with reference regions that ``model_id`` predicts the explainer table
    (``explainers`` report over ``slice_``) has no row for, and why — the table and its heat map
    drop them; None when every one has a row."""
    regions = set(store.annotations(reader="gt")["label"])
    shown = set(table["label"]) if "label" in table else set()
    missing = sorted(str(lab) for lab in store.predicted_labels(model_id) & regions if lab not in shown)
    if not missing:
        return None
    why = (" (the model predicted none of their scored positives, or none is scored)"
           if slice_ == "true_positive" else "")
    return (f"No row for {', '.join(missing)}: no {_SLICE_WORDS.get(slice_, slice_)} case with a scored "
            f"map{why}.")


def box_geometry_caveat(store: Store) -> str | None:
    """The caveat of the geometry regressions when reference lesions are drawn as boxes only (no
    mask of the same lesion): a box's irrectangularity is 0 and its elongation its sides' ratio, so
    those features describe the boxes drawn, not the lesions; None when every lesion has a mask."""
    ann = store.annotations(reader="gt")
    if ann.empty:
        return None
    masked = ann.groupby(["image_id", "label", "instance"])["kind"].agg(lambda k: "mask" in set(k))
    boxes, total = int((~masked).sum()), len(masked)
    if not boxes:
        return None
    return (f"{boxes} of {total} reference lesions are boxes only: a box's irrectangularity is 0 (it fills "
            "its own bounding box) and its elongation is the ratio of its sides, so on boxes these "
            "features describe the boxes drawn, not the lesions' shapes; read their regressions with that "
            "in mind.")


def trust_gaps(store: Store, model_id: str, table: pd.DataFrame) -> str:
    """Why a criterion of the trust table (``trust`` report) has no value ("—"): from what the store
    holds — utility's average-mask baseline, the second models repeatability and reproducibility
    compare with."""
    empty = [c for c in _CRITERIA if c not in table or table[c].isna().all()]
    parts = []
    if "utility" in empty:
        parts.append(f"utility: {_utility_gap(store, model_id)}")
    if "randomization" in empty:
        parts.append("randomization: no cascading-randomization scores")
    both = [c for c in ("repeatability", "reproducibility") if c in empty]
    if both:
        parts.append(f"{' and '.join(both)}: {comparison_hint(store, model_id)}")
    why = f" — : no scores for that criterion ({'; '.join(parts)})." if parts else ""
    return "n: the images each test rests on." + why


def _utility_gap(store: Store, model_id: str) -> str:
    loc = store.table("localization", model_id=model_id, reader="gt")
    if loc.empty or not (loc.source == "explainer").any():
        return "it needs the method's localization scores"
    if not ((loc.source == "baseline") & (loc.method == "average_mask")).any():
        head = ("the method's localization scores are there, but not the average-mask baseline it is "
                "compared with")
        train = store.images(split="train", columns=["image_id"]).image_id
        if not store.annotations(reader="gt").image_id.isin(set(train)).any():
            return (f"{head}: that needs reference boxes or masks on the training split, and this store's "
                    "training split has none")
        return f"{head}: the build's baselines step computes it from the training split's boxes and masks"
    return "the method's scores and the average mask's share no case"


def sweep_ran(store: Store, model_id: str) -> bool:
    """Whether an occlusion sweep ran for ``model_id`` (the sweep stage records its plan before its
    first map; the demo's older stores ran it without recording one)."""
    return is_demo(store) or bool(store.meta(SWEEP_PLAN_META.format(model_id=model_id)))


def sweep_stored(store: Store, model_id: str, counts: str) -> str:
    """The maps the occlusion sweep section rests on (``counts``: :func:`~cxrxai.present.sweep_counts`,
    without its plan note where no sweep ran): as counted where a sweep ran (:func:`sweep_ran`); else
    the settings are the occlusion explainer's, and the command that adds the sweep's."""
    if sweep_ran(store, model_id):
        return counts
    return (f"{counts}; no sweep was planned in this store: "
            "these are the occlusion explainer's maps (`--explainers occlusion`), and "
            f"`{fill_command(store, 'sweep', explainers=None)}` adds the sweep's other patch / stride "
            "settings")
