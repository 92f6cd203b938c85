"""Localization of a saliency map against ground truth (Saporta et al. 2022; Bel Bordes 2023;
Arun et al. 2021), with each paper's convention as an option.

Conventions (``../shared/notes/papers-original-code.md`` records them from the original code):

* CheXlocalize upsamples the map *first* — bilinear, ``align_corners=False`` — to the image's
  original size, then min–max normalises, then thresholds (:func:`otsu_mask`).
* IoU: ``convention="true_positive"`` is NaN unless both masks are non-empty (the paper's
  true-positive slice); ``"full"`` scores false positives and false negatives 0 and is NaN
  only when both masks are empty (the full-dataset evaluation).
* Hit / pointing game: the argmax of the upsampled map, the *first* maximum in row-major
  order (``np.argmax``), inside the mask → 1; an empty mask → NaN (a float, never a bool).
* ROC AUC of map vs mask pixels is the thesis's "explanation AUC"; PR AUC is Arun et al.'s
  ``auc(recall, precision)`` (trapezoidal) or, as an option, average precision.
"""

from __future__ import annotations

import cv2
import numpy as np
from PIL import Image, ImageDraw
from sklearn.metrics import auc as trapezoid_auc
from sklearn.metrics import confusion_matrix_at_thresholds

from ..errors import MetricError, UnknownNameError
from ..postprocess import minmax, upsample
from ..validate import as_map, as_mask, same_shape

__all__ = [
    "IOU_CONVENTIONS",
    "OTSU_VARIANTS",
    "PROBABILITY_CUTOFFS",
    "PR_VARIANTS",
    "SWEEP_THRESHOLDS",
    "coarse_pointing_game",
    "iou",
    "miou",
    "otsu_mask",
    "pointing_game",
    "points_hit",
    "pr_auc",
    "probability_gate",
    "ranking_metrics",
    "roc_auc",
    "threshold_mask",
    "tune_probability_cutoff",
    "tune_threshold",
]

IOU_CONVENTIONS = ("true_positive", "full")
OTSU_VARIANTS = ("chexlocalize", "plain")
PR_VARIANTS = ("trapezoid", "average_precision")
#: CheXlocalize's threshold candidates (``np.arange(0.2, .8, .1)``, rounded): 0.2 … 0.7.
SWEEP_THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
#: CheXlocalize's probability cutoffs for the full-dataset evaluation (``probability_tuning_results.csv``):
#: 0.0 … 0.8.
PROBABILITY_CUTOFFS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


# --------------------------------------------------------------------------- checks

_map, _mask, _same = as_map, as_mask, same_shape


def _prepare(saliency, size: tuple[int, int] | None) -> np.ndarray:
    m = _map(saliency)
    return upsample(m, size).astype(np.float64) if size is not None and m.shape != tuple(size) else m


# --------------------------------------------------------------------------- maps → masks

def otsu_mask(saliency, size: tuple[int, int] | None = None, *, variant: str = "chexlocalize") -> np.ndarray:
    """Binary segmentation of a saliency map by Otsu's threshold.

    ``variant="chexlocalize"`` reproduces ``heatmap_to_segmentation.py``: upsample to ``size``
    (bilinear, align_corners=False) → min–max → ``uint8(255 · m)`` (truncation) → OpenCV Otsu
    → fill every contour polygon (RETR_TREE, CHAIN_APPROX_SIMPLE; contours of ≤ 1 point
    dropped; holes filled, single pixels vanish), drawn with PIL as the original does.
    ``variant="plain"`` stops after Otsu (``m > t``). A constant map gives an empty mask.
    """
    if variant not in OTSU_VARIANTS:
        raise UnknownNameError("Otsu variant", variant, OTSU_VARIANTS)
    # float32 throughout, as CheXlocalize's torch code: (cam − min) / max, then uint8(255 · m)
    m = _map(saliency).astype(np.float32)
    if size is not None and m.shape != tuple(size):
        m = upsample(m, size)
    m = m - m.min()
    top = m.max()
    if top <= 0:
        return np.zeros(m.shape, bool)
    u8 = np.uint8(255 * (m / top))  # truncation
    if u8.max() == 0:
        return np.zeros(u8.shape, bool)
    _, thresh = cv2.threshold(u8, 0, int(u8.max()), cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    if variant == "plain":
        return thresh > 0
    contours, _ = cv2.findContours(thresh, cv2.RETR_TREE, cv2.CHAIN_APPROX_SIMPLE)
    canvas = Image.new("L", (u8.shape[1], u8.shape[0]), 0)
    draw = ImageDraw.Draw(canvas)
    for c in contours:
        if len(c) <= 1:
            continue
        draw.polygon([tuple(p) for p in c[:, 0, :].tolist()], outline=1, fill=1)
    return np.asarray(canvas, dtype=bool)


def threshold_mask(saliency, threshold: float, size: tuple[int, int] | None = None) -> np.ndarray:
    """``minmax(map) > threshold`` on the float map (CheXlocalize's fixed-threshold path)."""
    if not 0 <= threshold <= 1:
        raise MetricError(f"threshold {threshold} must lie in [0, 1] (it applies to the min–max map)")
    return minmax(_prepare(saliency, size)) > threshold


def probability_gate(mask: np.ndarray, probability: float, cutoff: float) -> np.ndarray:
    """All-zero mask when the model's probability is below the label's cutoff (CheXlocalize
    full-dataset evaluation: ``if prob < cutoff: segmentation = 0``)."""
    m = _mask(mask)
    return np.zeros_like(m) if probability < cutoff else m


def tune_threshold(maps, masks, *, thresholds=SWEEP_THRESHOLDS, size=None) -> tuple[float, dict[float, float]]:
    """Per-label threshold that maximises mIoU (true-positive slice) over validation cases.

    Returns the best threshold (the first on ties) and mIoU per candidate, as
    ``tune_heatmap_threshold.py`` does.
    """
    scores = {}
    for t in thresholds:
        vals = [iou(threshold_mask(m, t, size), g) for m, g in zip(maps, masks)]
        scores[float(t)] = miou(vals)
    finite = {t: s for t, s in scores.items() if np.isfinite(s)}
    if not finite:
        raise MetricError("no case has both a predicted and a ground-truth segmentation to tune on")
    return max(finite, key=lambda t: (finite[t], -t)), scores


def tune_probability_cutoff(segmentations, masks, probabilities, *, cutoffs=PROBABILITY_CUTOFFS
                            ) -> tuple[float, dict[float, float]]:
    """Per-label probability cutoff of the full-dataset evaluation (Saporta et al.): a case whose
    probability is below the cutoff gets an empty segmentation (:func:`probability_gate`), IoU
    follows the ``full`` convention (a false positive or negative scores 0, two empty masks are
    skipped), and the cutoff with the highest mIoU wins (the lowest on ties). Returns it and the
    mIoU per cutoff, the rows of CheXlocalize's ``probability_tuning_results.csv``.

    >>> seg, gt = np.array([[1, 1]]), np.array([[1, 0]])
    >>> tune_probability_cutoff([seg, seg], [gt, np.zeros_like(gt)], [0.9, 0.3], cutoffs=(0.0, 0.5))
    (0.5, {0.0: 0.25, 0.5: 0.5})
    """
    segs, truths, probs = list(segmentations), list(masks), [float(p) for p in probabilities]
    if not (len(segs) == len(truths) == len(probs)):
        raise MetricError(f"got {len(segs)} segmentations, {len(truths)} masks and {len(probs)} probabilities")
    scores = {float(c): miou(iou(probability_gate(s, p, c), g, convention="full") for s, g, p in zip(segs, truths, probs))
              for c in cutoffs}
    finite = {c: v for c, v in scores.items() if np.isfinite(v)}
    if not finite:
        raise MetricError("no case has a segmentation or a ground truth to tune the probability cutoff on")
    return max(finite, key=lambda c: (finite[c], -c)), scores


# --------------------------------------------------------------------------- overlap

def iou(pred, truth, *, convention: str = "true_positive") -> float:
    """Intersection over union of two binary masks of equal shape.

    ``true_positive``: NaN unless both are non-empty. ``full``: NaN only if both are empty,
    0 for a false positive or a false negative.

    >>> a = np.array([[1, 1, 0, 0]]); b = np.array([[0, 1, 1, 0]])
    >>> iou(a, b)
    0.3333333333333333
    >>> iou(a, np.zeros((1, 4))), iou(a, np.zeros((1, 4)), convention="full")
    (nan, 0.0)
    """
    if convention not in IOU_CONVENTIONS:
        raise UnknownNameError("IoU convention", convention, IOU_CONVENTIONS)
    p, t = _mask(pred, "predicted mask"), _mask(truth, "ground-truth mask")
    _same(p, t)
    union = np.logical_or(p, t).sum()
    if convention == "true_positive" and (not p.any() or not t.any()):
        return float("nan")
    if union == 0:
        return float("nan")
    return float(np.logical_and(p, t).sum() / union)


def miou(values) -> float:
    """Mean of per-case IoUs, NaNs skipped (CheXlocalize's mIoU; NaN when all are NaN)."""
    v = np.asarray(list(values), dtype=float)
    return float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")


# --------------------------------------------------------------------------- points

def pointing_game(saliency, truth, *, size: tuple[int, int] | None = None) -> float:
    """1.0 if the map's maximum (first in row-major order) lies in the mask, 0.0 if not, NaN
    for an empty mask. The map is upsampled to ``size`` (or the mask's shape) first."""
    t = _mask(truth, "ground-truth mask")
    m = _prepare(saliency, size or t.shape)
    _same(m, t)
    if not t.any():
        return float("nan")
    r, c = np.unravel_index(int(np.argmax(m)), m.shape)
    return float(t[r, c])


def coarse_pointing_game(saliency, truth) -> float:
    """The thesis's point localization for coarse maps: the centre of the most important
    region of the *native* map (the first maximal cell), scaled to the mask's grid.

    Cell (i, j) of an (h, w) map covers mask rows [i·H/h, (i+1)·H/h); its centre pixel is
    ``floor((i + ½)·H/h)``. NaN for an empty mask.
    """
    m = _map(saliency)
    t = _mask(truth, "ground-truth mask")
    if not t.any():
        return float("nan")
    i, j = np.unravel_index(int(np.argmax(m)), m.shape)
    r = min(int(np.floor((i + 0.5) * t.shape[0] / m.shape[0])), t.shape[0] - 1)
    c = min(int(np.floor((j + 0.5) * t.shape[1] / m.shape[1])), t.shape[1] - 1)
    return float(t[r, c])


def points_hit(points, truth) -> float:
    """Human-benchmark hit: 1 if any reader point ``(x, y)`` falls inside the mask (indexed
    ``mask[int(y), int(x)]`` as CheXlocalize), 0 if none does, NaN for an empty mask."""
    t = _mask(truth, "ground-truth mask")
    if not t.any():
        return float("nan")
    for x, y in points:
        r, c = int(y), int(x)
        if 0 <= r < t.shape[0] and 0 <= c < t.shape[1] and t[r, c]:
            return 1.0
    return 0.0


# --------------------------------------------------------------------------- ranking

def _curve(m: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """False and true positive counts at each distinct score, highest first (one sort)."""
    _, fps, _, tps, _ = confusion_matrix_at_thresholds(t.ravel(), m.ravel())
    return np.asarray(fps, np.float64), np.asarray(tps, np.float64)


def _roc_from(fps: np.ndarray, tps: np.ndarray) -> float:
    return float(trapezoid_auc(np.r_[0.0, fps] / fps[-1], np.r_[0.0, tps] / tps[-1]))


def _pr_from(fps: np.ndarray, tps: np.ndarray, variant: str) -> float:
    # scikit-learn's precision_recall_curve: recall decreasing, ending at (recall 0, precision 1).
    precision = np.r_[(tps / (tps + fps))[::-1], 1.0]
    recall = np.r_[(tps / tps[-1])[::-1], 0.0]
    if variant == "average_precision":
        return float(max(0.0, -np.sum(np.diff(recall) * precision[:-1])))
    return float(trapezoid_auc(recall, precision))


def _ranked(saliency, truth, size) -> tuple[np.ndarray, np.ndarray]:
    t = _mask(truth, "ground-truth mask")
    m = _prepare(saliency, size or t.shape)
    _same(m, t)
    return m, t


def roc_auc(saliency, truth, *, size: tuple[int, int] | None = None) -> float:
    """ROC AUC with pixels as samples, the map as score and the mask as label (the thesis's
    explanation AUC; equals scikit-learn's ``roc_auc_score``). NaN when the mask is empty or full."""
    m, t = _ranked(saliency, truth, size)
    if not t.any() or t.all():
        return float("nan")
    return _roc_from(*_curve(m, t))


def pr_auc(saliency, truth, *, variant: str = "trapezoid", size: tuple[int, int] | None = None) -> float:
    """Area under the precision–recall curve of map vs mask pixels.

    ``trapezoid``: Arun et al.'s ``auc(recall, precision)`` over ``precision_recall_curve``;
    ``average_precision``: scikit-learn's step-wise AP. NaN for an empty mask.
    """
    if variant not in PR_VARIANTS:
        raise UnknownNameError("PR AUC variant", variant, PR_VARIANTS)
    m, t = _ranked(saliency, truth, size)
    if not t.any():
        return float("nan")
    return _pr_from(*_curve(m, t), variant)


def ranking_metrics(saliency, truth, *, size: tuple[int, int] | None = None) -> dict[str, float]:
    """:func:`roc_auc`, both :func:`pr_auc` variants (``pr_auc``, ``ap``) from one sort of the
    pixels — what a precompute scores for every map. All NaN for an empty mask (ROC AUC also
    for a full one)."""
    m, t = _ranked(saliency, truth, size)
    if not t.any():
        return {"roc_auc": float("nan"), "pr_auc": float("nan"), "ap": float("nan")}
    fps, tps = _curve(m, t)
    return {"roc_auc": float("nan") if t.all() else _roc_from(fps, tps), "pr_auc": _pr_from(fps, tps, "trapezoid"),
            "ap": _pr_from(fps, tps, "average_precision")}
