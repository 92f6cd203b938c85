"""REFERENCE ONLY — today's scoring path, frozen as it was before the shared-sort rewrite (issue 28 item 4).

Verbatim copies of ``cxrxai.metrics`` functions as of commit 6088a26: ``otsu_mask`` (uint8 map →
OpenCV Otsu → contours filled with PIL), ``iou``, ``pointing_game`` and the ranking metrics (the two
classes sorted apart, then searched; the ROC and PR areas from their counts as ``ranking.py`` had them
at commit 498df23), and ``Scored``'s preparation (positive part → bilinear upsample).
:func:`reference_scores` is what ``cxrxai.metrics.registry.score_map`` returned for the ten metrics it
had then. ``benchmarks/native_scoring.py`` times it against the current path in one run and
``tests/metrics/test_native_scoring.py`` requires the current path to equal it. Never imported by the
library.
"""

from __future__ import annotations

import cv2
import numpy as np
from PIL import Image, ImageDraw

from cxrxai import postprocess
from cxrxai.metrics._maps import _map, _mask, _prepare, _same
from cxrxai.metrics.labelled_sort import Ranks as _Ranks
from cxrxai.metrics.pointing import coarse_pointing_game

__all__ = ["reference_otsu_mask", "reference_ranking_metrics", "reference_scores"]


def reference_otsu_mask(saliency, size=None, *, variant: str = "chexlocalize") -> np.ndarray:
    """``otsu_mask`` as it was (both variants)."""
    m = _map(saliency).astype(np.float32)
    if size is not None and m.shape != tuple(size):
        m = postprocess.upsample(m, size)
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


def _reference_iou(pred, truth, *, convention: str = "true_positive") -> float:
    p, t = _mask(pred, "predicted mask"), _mask(truth, "ground-truth mask")
    _same(p, t)
    union = np.count_nonzero(p | t)
    if convention == "true_positive" and (not p.any() or not t.any()):
        return float("nan")
    if union == 0:
        return float("nan")
    return float(np.count_nonzero(p & t) / union)


def _reference_pointing_game(saliency, truth) -> float:
    t = _mask(truth, "ground-truth mask")
    m = _prepare(saliency, t.shape)
    _same(m, t)
    if not t.any():
        return float("nan")
    r, c = np.unravel_index(int(np.argmax(m)), m.shape)
    return float(t[r, c])


def _reference_ranks(m: np.ndarray, t: np.ndarray) -> _Ranks:
    scores, truth = m.ravel(), t.ravel().astype(bool)
    narrow = scores.astype(np.float32)
    if np.array_equal(narrow, scores):
        scores = narrow
    lesion, background = np.sort(scores[truth]), np.sort(scores[~truth])
    first = np.flatnonzero(np.r_[True, lesion[1:] != lesion[:-1]])
    values = lesion[first]
    below = np.searchsorted(background, values, side="left")
    tied = np.searchsorted(background, values, side="right") - below
    return _Ranks(np.diff(np.r_[first, lesion.size]), below, tied, int(lesion.size), int(background.size))


def _reference_roc_from(r: _Ranks) -> float:
    pairs = int(np.dot(r.lesion.astype(np.int64), 2 * r.below.astype(np.int64) + r.tied))
    return pairs / (2 * r.n1 * r.n0)


def _reference_pr_from(r: _Ranks, variant: str) -> float:
    tp_at = np.cumsum(r.lesion[::-1])[::-1]  # lesion pixels scoring ≥ each value
    tp_above = tp_at - r.lesion
    fp_at, fp_above = r.n0 - r.below, r.n0 - r.below - r.tied
    precision = tp_at / (tp_at + fp_at)
    step = r.lesion / r.n1
    if variant == "average_precision":
        return float(max(0.0, np.sum(step * precision)))
    above = tp_above + fp_above
    precision_above = np.divide(tp_above, above, out=np.ones(above.shape), where=above > 0)
    return float(np.sum(step * (precision + precision_above) / 2))


def reference_ranking_metrics(saliency, truth) -> dict[str, float]:
    """``ranking_metrics`` as it was."""
    t = _mask(truth, "ground-truth mask")
    m = _prepare(saliency, t.shape)
    _same(m, t)
    if not t.any():
        return {"roc_auc": float("nan"), "pr_auc": float("nan"), "ap": float("nan")}
    r = _reference_ranks(m, t)
    return {"roc_auc": float("nan") if t.all() else _reference_roc_from(r),
            "pr_auc": _reference_pr_from(r, "trapezoid"), "ap": _reference_pr_from(r, "average_precision")}


def reference_scores(native, truth, *, prob=None, threshold=None) -> tuple[np.ndarray, dict]:
    """(segmentation, scores) of the ten metrics ``segment_and_score`` had, computed as it did."""
    truth = np.asarray(truth).astype(bool)
    has_truth = bool(truth.any())
    positive = postprocess.positive(native)
    upsampled = postprocess.upsample(positive, truth.shape)
    seg = reference_otsu_mask(upsampled)
    gated = seg if prob is None or threshold is None or prob >= threshold else np.zeros_like(seg)
    ranking = reference_ranking_metrics(upsampled, truth) if has_truth else {}
    nan = float("nan")
    scores = {"gt_positive": has_truth, "iou": _reference_iou(seg, truth),
              "iou_full": _reference_iou(seg, truth, convention="full"),
              "iou_gated": _reference_iou(gated, truth, convention="full"),
              "pred_area": float(seg.mean()), "gt_area": float(truth.mean()),
              "hit": _reference_pointing_game(upsampled, truth) if has_truth else nan,
              "pla": coarse_pointing_game(positive, truth) if has_truth else nan,
              **{k: ranking.get(k, nan) for k in ("roc_auc", "pr_auc", "ap")}}
    return seg, scores
