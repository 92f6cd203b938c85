"""One explorer panel: its model's decision on the case, and the segmentation and scores it shows.

Every number in a panel comes from one :class:`PanelState` — the panel's model and that model's
probability, threshold and outcome on the case, read together from that model's case table — and
one :func:`score_panel` call: the contour the film draws and the scores printed beside it are one
:func:`~cxrxai.metrics.registry.segment_and_score` result, the function the localization stage
stores its numbers with. A map that cannot be scored (a partial or cancelled live map, a map whose
Otsu segmentation is empty) draws no contour, and :attr:`PanelScore.reason` says why.

>>> import pandas as pd
>>> cases = pd.DataFrame({"model_id": ["m"], "image_id": ["i"], "label": ["Mass"], "prob": [0.63],
...                       "threshold": [0.3], "outcome": ["TP"]})
>>> panel_state(cases, "m", "i", "Mass").decision
'P 0.630 (threshold 0.300) · TP'
>>> truth = np.zeros((4, 4), bool); truth[:2, :2] = True
>>> s = score_panel(PanelState("m", "i", "Mass"), np.pad(np.ones((2, 2)), ((0, 2), (0, 2))), truth)
>>> s.mask.sum(), s.scores["iou"]
(np.int64(4), 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import DataError, MetricError
from ..metrics.registry import segment_and_score
from .display import decision_text

__all__ = ["REFERENCE_READER", "PanelScore", "PanelState", "panel_state", "reference_truth", "score_panel"]

#: The reader a panel's scores are computed against (the localization stage's reference).
REFERENCE_READER = "gt"


@dataclass(frozen=True)
class PanelState:
    """One panel's model and that model's decision on one case and finding (``prob`` None: the
    model has no prediction there)."""

    model_id: str
    case_id: str
    label: str
    prob: float | None = None
    threshold: float | None = None
    outcome: str | None = None

    @property
    def decision(self) -> str:
        """``P 0.830 (threshold 0.450) · TP``, or why a part is missing."""
        if self.prob is None:
            return f"no {self.label} prediction of {self.model_id} for this image"
        return decision_text(self.prob, self.threshold, self.outcome)


def _known(value):
    return None if value is None or pd.isna(value) or value == "" else value


def panel_state(cases: pd.DataFrame, model_id: str, case_id: str, label: str) -> PanelState:
    """The panel state of ``model_id`` from that model's case table (``summaries.case_table``);
    a table of another model is refused, so a panel can never print one model's numbers under
    another's name."""
    if "model_id" not in cases:
        raise DataError(f"a case table without a model_id column was given for a panel of {model_id!r}")
    others = sorted(set(cases["model_id"].unique()) - {model_id})  # unique(): not a Python loop per row
    if others:
        raise DataError(f"the case table of {others} was given for a panel of model {model_id!r}")
    row = cases[(cases["image_id"] == case_id) & (cases["label"] == label)]
    if row.empty:
        return PanelState(model_id, case_id, label)
    r = row.iloc[0]
    threshold, outcome = _known(r["threshold"]), _known(r["outcome"])
    return PanelState(model_id, case_id, label, float(r["prob"]),
                      None if threshold is None else float(threshold), outcome)


def reference_truth(masks: dict, label: str, shape: tuple[int, int]) -> np.ndarray:
    """The reference reader's mask of ``label`` from ``{(label, reader): mask}``, else an empty
    mask of ``shape`` (no lesion of this finding on the image)."""
    mask = masks.get((label, REFERENCE_READER))
    return np.zeros(shape, bool) if mask is None else np.asarray(mask, bool)


@dataclass(frozen=True)
class PanelScore:
    """What a panel draws and prints: the scored segmentation (None: no contour), the scores
    (empty: not scored) and, when no contour is drawn, why."""

    mask: np.ndarray | None = field(repr=False)
    scores: dict
    reason: str = ""

    @property
    def caption(self) -> str:
        """The line under the film: what the contour is, or why there is none."""
        if self.mask is None:
            return f"No segmentation contour: {self.reason}"
        return (f"Green contour: the Otsu segmentation the IoU below was computed from (positive part, "
                f"min–max; it covers {self.mask.mean():.0%} of the film).")


def score_panel(state: PanelState, saliency: np.ndarray | None, truth: np.ndarray, *,
                partial: str | None = None) -> PanelScore:
    """Segment and score a panel's map with the localization stage's function, at ``truth``'s
    (the image's) size, with the panel model's probability and threshold (the gated IoU).

    ``partial`` — what the map is when it is not final (``"computing"``, ``"cancelled"``): a partial
    map is neither scored nor segmented, and neither is a missing one."""
    if saliency is None:
        return PanelScore(None, {}, "no map to segment yet")
    if partial is not None:
        return PanelScore(None, {}, f"the map is partial ({partial}); only a complete map is segmented and "
                                    "scored, as the store's numbers are")
    try:
        seg = segment_and_score(saliency, truth, prob=state.prob, threshold=state.threshold)
    except MetricError as err:
        return PanelScore(None, {}, f"this map cannot be scored: {err}")
    if not seg.mask.any():
        return PanelScore(None, seg.scores, "Otsu's threshold segments nothing in this map (its positive "
                                            "part is constant: no positive attribution, or nothing stands "
                                            "out), so the IoU is undefined (—)")
    return PanelScore(seg.mask, seg.scores)
