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

Thresholds and the probability gate are here; overlap (:mod:`.overlap`), Otsu segmentation
(:mod:`.otsu`), pointing (:mod:`.pointing`) and ranking (:mod:`.ranking`) metrics have their own
modules and are re-exported here.
"""

from __future__ import annotations

import numpy as np

from ..errors import MetricError
from ..postprocess import minmax
from ._maps import _mask, _prepare
from .otsu import OTSU_VARIANTS, otsu_mask
from .overlap import IOU_CONVENTIONS, iou, iou_from_counts, miou, overlap_counts
from .pointing import coarse_pointing_game, peak_hit, pointing_game, points_hit
from .ranking import PR_VARIANTS, pr_auc, ranking_metrics, roc_auc

__all__ = [
    "IOU_CONVENTIONS",
    "OTSU_VARIANTS",
    "PROBABILITY_CUTOFFS",
    "PR_VARIANTS",
    "SWEEP_THRESHOLDS",
    "coarse_pointing_game",
    "iou",
    "iou_from_counts",
    "miou",
    "otsu_mask",
    "overlap_counts",
    "peak_hit",
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

#: CheXlocalize's threshold candidates (``np.arange(0.2, .8, .1)``, rounded): 0.2 … 0.7.
SWEEP_THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
#: CheXlocalize's probability cutoffs for the full-dataset evaluation (``probability_tuning_results.csv``):
#: 0.0 … 0.8.
PROBABILITY_CUTOFFS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


# --------------------------------------------------------------------------- maps → masks

def threshold_mask(saliency, threshold: float, size: tuple[int, int] | None = None) -> np.ndarray:
    """Binary segmentation ``minmax(map) > threshold`` (CheXlocalize's fixed-threshold path).

    Parameters
    ----------
    saliency : (h, w) array_like
        Finite saliency map.
    threshold : float
        In [0, 1]; it applies to the min–max-normalised map.
    size : (int, int), optional
        ``(height, width)`` to upsample to first (bilinear, ``align_corners=False``).

    Returns
    -------
    mask : ndarray of bool, the map's (upsampled) shape

    Notes
    -----
    mask = (m − min m) / (max m − min m) > t, strictly, on the float map: no uint8 step and no contour
    filling, unlike :func:`otsu_mask`. Saporta et al. sweep t from 0.2 to 0.8 on validation data (the code's
    candidates, :data:`SWEEP_THRESHOLDS`, are 0.2 … 0.7; see :func:`tune_threshold`). A constant map
    normalises to zeros (CheXlocalize: NaN), so its mask is empty. A threshold outside [0, 1] raises
    :class:`~cxrxai.errors.MetricError`.

    References
    ----------
    .. [1] Saporta A. et al. (2022) Benchmarking saliency methods for chest X-ray interpretation. Nat. Mach.
           Intell. doi:10.1038/s42256-022-00536-x

    Examples
    --------
    >>> threshold_mask(np.array([[0.0, 1.0, 2.0, 3.0]]), 0.5).tolist()
    [[False, False, True, True]]
    >>> threshold_mask(np.array([[0.0, 1.0]]), 0.5, size=(1, 4)).tolist()  # [0, .25, .75, 1]
    [[False, False, True, True]]
    """
    if not 0 <= threshold <= 1:
        raise MetricError(f"threshold {threshold} must lie in [0, 1] (it applies to the min–max map)")
    return minmax(_prepare(saliency, size)) > threshold


def probability_gate(mask: np.ndarray, probability: float, cutoff: float) -> np.ndarray:
    """Empty a segmentation when the model's probability is below the label's cutoff.

    Parameters
    ----------
    mask : (H, W) array_like of bool or 0/1
        The segmentation.
    probability, cutoff : float
        The model's probability for the label and the label's cutoff (:func:`tune_probability_cutoff`).

    Returns
    -------
    mask : (H, W) ndarray of bool
        All False when ``probability < cutoff``, else a copy of ``mask``.

    Notes
    -----
    Saporta et al.'s full-dataset evaluation (``heatmap_to_segmentation.py``: ``if prob < cutoff:
    segmentation = 0``): a probability equal to the cutoff keeps its mask. CheXlocalize's tuning script has
    the opposite strictness (it segments only when ``prob > cutoff``); :func:`tune_probability_cutoff` uses
    this gate, so the two differ only at exact ties.

    References
    ----------
    .. [1] Saporta A. et al. (2022) Benchmarking saliency methods for chest X-ray interpretation. Nat. Mach.
           Intell. doi:10.1038/s42256-022-00536-x

    Examples
    --------
    >>> seg = np.array([[1, 1]])
    >>> probability_gate(seg, 0.3, 0.5).tolist(), probability_gate(seg, 0.5, 0.5).tolist()
    ([[False, False]], [[True, True]])
    """
    m = _mask(mask)
    return np.zeros_like(m) if probability < cutoff else m


def tune_threshold(
    maps, masks, *, thresholds=SWEEP_THRESHOLDS, size=None
) -> tuple[float, dict[float, float]]:
    """Per-label threshold that maximises mIoU (true-positive slice) over validation cases.

    Parameters
    ----------
    maps, masks : iterables of (H, W) array_like
        Saliency maps of the validation cases and their ground-truth masks, paired in order.
    thresholds : sequence of float
        Candidates in [0, 1]; CheXlocalize's 0.2 … 0.7 by default.
    size : (int, int), optional
        Upsample every map to this size first (see :func:`threshold_mask`).

    Returns
    -------
    best : float
        The candidate with the highest mIoU; the lowest on ties (the first, for ascending candidates).
    scores : dict
        mIoU per candidate; NaN where no case has both masks non-empty.

    Notes
    -----
    mIoU(t) = nanmean_i IoU(threshold_mask(map_i, t), mask_i), IoU with the ``"true_positive"`` convention
    (:func:`iou`), as Saporta et al.'s ``tune_heatmap_threshold.py``. Raises
    :class:`~cxrxai.errors.MetricError` when every candidate's mIoU is NaN.

    References
    ----------
    .. [1] Saporta A. et al. (2022) Benchmarking saliency methods for chest X-ray interpretation. Nat. Mach.
           Intell. doi:10.1038/s42256-022-00536-x

    Examples
    --------
    >>> maps = [np.array([[0.0, 0.5, 1.0]]), np.array([[1.0, 0.9, 0.0]])]
    >>> masks = [np.array([[0, 1, 1]]), np.array([[1, 0, 0]])]
    >>> tune_threshold(maps, masks, thresholds=(0.2, 0.6))  # t = 0.2: IoUs 1 and 1/2
    (0.2, {0.2: 0.75, 0.6: 0.5})
    """
    maps, masks = list(maps), list(masks)
    if len(maps) != len(masks):
        raise MetricError(
            f"tune_threshold needs one mask per map, got {len(maps)} maps and {len(masks)} masks"
        )
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
    """Per-label probability cutoff of the full-dataset evaluation (Saporta et al.).

    Parameters
    ----------
    segmentations, masks : iterables of (H, W) array_like
        Segmentations of the validation cases (e.g. :func:`otsu_mask`) and their ground truths (all-zero
        for a case without the finding).
    probabilities : iterable of float
        The model's probability for the label, one per case.
    cutoffs : sequence of float
        Candidates; CheXlocalize's 0.0 … 0.8 by default.

    Returns
    -------
    best : float
        The cutoff with the highest mIoU (the lowest on ties).
    scores : dict
        mIoU per cutoff, the rows of CheXlocalize's ``probability_tuning_results.csv``.

    Notes
    -----
    A case whose probability is below the cutoff gets an empty segmentation (:func:`probability_gate`), IoU
    follows the ``full`` convention (a false positive or negative scores 0, two empty masks are skipped),
    and mIoU(c) = nanmean over cases. CheXlocalize rounds mIoU to 3 dp before its argmax; this function
    does not. Unequal input lengths, or no finite mIoU, raise :class:`~cxrxai.errors.MetricError`.

    References
    ----------
    .. [1] Saporta A. et al. (2022) Benchmarking saliency methods for chest X-ray interpretation. Nat. Mach.
           Intell. doi:10.1038/s42256-022-00536-x

    Examples
    --------
    >>> seg, gt = np.array([[1, 1]]), np.array([[1, 0]])
    >>> tune_probability_cutoff([seg, seg], [gt, np.zeros_like(gt)], [0.9, 0.3], cutoffs=(0.0, 0.5))
    (0.5, {0.0: 0.25, 0.5: 0.5})
    """
    segs, truths, probs = list(segmentations), list(masks), [float(p) for p in probabilities]
    if not (len(segs) == len(truths) == len(probs)):
        raise MetricError(
            f"got {len(segs)} segmentations, {len(truths)} masks and {len(probs)} probabilities"
        )
    scores = {
        float(c): miou(
            iou(probability_gate(s, p, c), g, convention="full") for s, g, p in zip(segs, truths, probs)
        )
        for c in cutoffs
    }
    finite = {c: v for c, v in scores.items() if np.isfinite(v)}
    if not finite:
        raise MetricError("no case has a segmentation or a ground truth to tune the probability cutoff on")
    return max(finite, key=lambda c: (finite[c], -c)), scores
