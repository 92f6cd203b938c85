"""Fidelity of a saliency map to the model, without ground truth (thesis §3.5.2).

* :func:`faithfulness_correlation` (Bhatt et al., IJCAI 2020): ``iterations`` times (200),
  replace a random subset of ``subset`` pixels (1,024; every channel) with the baseline
  (black), record the score drop and the attribution summed over the subset; the result is
  their Pearson correlation.
* :func:`perturbation_curve` (Petsiuk et al., RISE, 2018): split the image into square regions
  (32 × 32 px), order them by summed attribution (descending) or at random, and either delete
  them one by one (fill with black or the mean image) or insert them into a fully filled image;
  the score is the model's probability after each step, the x axis the fraction perturbed.
* :func:`curve_area` — trapezoidal area over x ∈ [0, 1] (AUDC, AUIC).
* :func:`audc_diff` — AUDC(random) − AUDC(ordered): positive when deleting the most important
  regions first lowers the score faster than chance.
* :func:`normalized_audc_diff` — the thesis compares fills by rescaling each fill's AUDCdiff to
  the black fill's deletion-curve range (end − start): ``diff · range(black) / range(fill)``.
  (The thesis prints the formula with AUDCdiff(black) on the right-hand side, which would make
  the result independent of the mean-image curve; we read it as this rescaling.)

``score(x) -> (N,)`` is any batched callable returning the explained output for the target
(e.g. ``lambda x: torch.sigmoid(model(x))[:, t]``); curves are computed in batches.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ..errors import MetricError, UnknownNameError

__all__ = [
    "MODES",
    "ORDERS",
    "audc_diff",
    "curve_area",
    "faithfulness_correlation",
    "normalized_audc_diff",
    "perturbation_curve",
    "region_order",
]

MODES = ("deletion", "insertion")
ORDERS = ("attribution", "random")
Score = Callable[[torch.Tensor], torch.Tensor]


def _batched(score: Score, x: torch.Tensor, batch: int) -> np.ndarray:
    out = []
    with torch.inference_mode():
        for s in range(0, len(x), batch):
            out.append(score(x[s:s + batch]).float().cpu().numpy())
    return np.concatenate(out)


def _check(image: torch.Tensor, attribution) -> np.ndarray:
    a = np.asarray(attribution, float)
    if image.ndim != 4 or image.shape[0] != 1:
        raise MetricError(f"image must be (1, C, H, W), got {tuple(image.shape)}")
    if a.shape != tuple(image.shape[-2:]):
        raise MetricError(f"attribution {a.shape} must match the image {tuple(image.shape[-2:])}; upsample it first")
    if not np.isfinite(a).all():
        raise MetricError("attribution contains NaN or infinite values")
    return a


def faithfulness_correlation(score: Score, image: torch.Tensor, attribution, baseline: torch.Tensor, *,
                             iterations: int = 200, subset: int = 1024, seed: int = 0, batch: int = 32) -> float:
    """Pearson correlation between attribution mass and score drop over random pixel subsets."""
    a = _check(image, attribution)
    h, w = a.shape
    if not 0 < subset < h * w:
        raise MetricError(f"subset must be between 1 and {h * w - 1} pixels, got {subset}")
    rng = np.random.default_rng(seed)
    idx = np.stack([rng.choice(h * w, subset, replace=False) for _ in range(iterations)])
    base = baseline.expand_as(image)
    copies = image.repeat(iterations, 1, 1, 1)
    flat_mask = torch.zeros(iterations, h * w, dtype=torch.bool)
    flat_mask[torch.arange(iterations)[:, None], torch.as_tensor(idx)] = True
    mask = flat_mask.view(iterations, 1, h, w).to(image.device)
    copies = torch.where(mask, base, copies)
    drops = (float(_batched(score, image, 1)[0]) - _batched(score, copies, batch)).astype(np.float64)
    mass = a.ravel()[idx].astype(np.float64).sum(axis=1)
    if np.ptp(drops) == 0 or np.ptp(mass) == 0:  # a constant side has no correlation (NaN, not a warning)
        return float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.corrcoef(mass, drops)[0, 1]
    return float(r) if np.isfinite(r) else float("nan")


def region_order(attribution, region: int, *, order: str = "attribution", seed: int = 0) -> list[tuple[int, int]]:
    """Top-left corners of the ``region``-px squares, most attributed first (or shuffled)."""
    if order not in ORDERS:
        raise UnknownNameError("region order", order, ORDERS)
    a = np.asarray(attribution, float)
    h, w = a.shape
    corners = [(r, c) for r in range(0, h, region) for c in range(0, w, region)]
    if order == "random":
        perm = np.random.default_rng(seed).permutation(len(corners))
        return [corners[i] for i in perm]
    mass = [a[r:r + region, c:c + region].sum() for r, c in corners]
    return [corners[i] for i in np.argsort(-np.asarray(mass), kind="stable")]


def perturbation_curve(score: Score, image: torch.Tensor, attribution, fill: torch.Tensor, *, mode: str = "deletion",
                       region: int = 32, order: str = "attribution", seed: int = 0, batch: int = 32
                       ) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)``: fraction of regions perturbed (0 … 1) and the score after each step."""
    if mode not in MODES:
        raise UnknownNameError("curve mode", mode, MODES)
    a = _check(image, attribution)
    corners = region_order(a, region, order=order, seed=seed)
    fill = fill.expand_as(image)
    start, other = (image, fill) if mode == "deletion" else (fill, image)
    steps = [start.clone()]
    current = start.clone()
    for r, c in corners:
        current[..., r:r + region, c:c + region] = other[..., r:r + region, c:c + region]
        steps.append(current.clone())
    y = _batched(score, torch.cat(steps), batch)
    return np.linspace(0.0, 1.0, len(steps)), y


def curve_area(x, y) -> float:
    """Trapezoidal area under a curve on x ∈ [0, 1]."""
    return float(np.trapezoid(np.asarray(y, float), np.asarray(x, float)))


def audc_diff(ordered_y, random_y, x) -> float:
    """AUDC(random) − AUDC(ordered); positive means the ranking beats chance."""
    return curve_area(x, random_y) - curve_area(x, ordered_y)


def normalized_audc_diff(diff: float, curve_y, reference_y) -> float:
    """Rescale a fill's AUDCdiff to the reference (black-fill) deletion curve's range."""
    rng, ref = float(curve_y[-1] - curve_y[0]), float(reference_y[-1] - reference_y[0])
    return float(diff * ref / rng) if rng != 0 else float("nan")
