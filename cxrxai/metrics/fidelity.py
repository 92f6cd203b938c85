"""Fidelity of a saliency map to the model, without ground truth (thesis §3.5.2).

* :func:`faithfulness_correlation` (Bhatt et al., IJCAI 2020): ``iterations`` times (200),
  replace a random subset of ``subset`` pixels (1,024; every channel) with the baseline
  (black), record the score drop and the attribution summed over the subset; the result is
  their Pearson correlation; :func:`faithfulness_correlations` scores several maps of one image
  on the same subsets, for the forward passes of one.
* :func:`perturbation_curve` (Petsiuk et al., RISE, 2018): split the image into square regions
  (32 × 32 px), order them by summed attribution (descending) or at random, and either delete
  them one by one (fill with black or the mean image) or insert them into a fully filled image;
  the score is the model's probability after each step, the x axis the fraction perturbed.
* :func:`curve_area` — trapezoidal area over x ∈ [0, 1] (AUDC, AUIC). It and the next two live in
  :mod:`.curves` and are re-exported here.
* :func:`audc_diff` — AUDC(random) − AUDC(ordered): positive when deleting the most important
  regions first lowers the score faster than chance.
* :func:`normalized_audc_diff` — the thesis compares fills by rescaling each fill's AUDCdiff to
  the black fill's deletion-curve range (end − start): ``diff · range(black) / range(fill)``.
  (The thesis prints the formula with AUDCdiff(black) on the right-hand side, which would make
  the result independent of the mean-image curve; we read it as this rescaling.)

``score(x) -> (N,)`` is any batched callable returning the explained output for the target
(e.g. ``lambda x: torch.sigmoid(model(x))[:, t]``); curves are computed in batches.

One module though past 300 lines: both measures perturb one image with the same baseline fills
and score the copies through the same batching (``_batched``); the curve areas already live in
:mod:`.curves`, and half the lines are the numpydoc.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ..errors import MetricError, UnknownNameError
from .curves import audc_diff, curve_area, normalized_audc_diff

__all__ = [
    "MODES",
    "ORDERS",
    "audc_diff",
    "curve_area",
    "faithfulness_correlation",
    "faithfulness_correlations",
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
        raise MetricError(
            f"attribution {a.shape} must match the image {tuple(image.shape[-2:])}; upsample it first"
        )
    if not np.isfinite(a).all():
        raise MetricError("attribution contains NaN or infinite values")
    return a


def faithfulness_correlation(
    score: Score,
    image: torch.Tensor,
    attribution,
    baseline: torch.Tensor,
    *,
    iterations: int = 200,
    subset: int = 1024,
    seed: int = 0,
    batch: int = 32,
) -> float:
    """Pearson correlation between attribution mass and score drop over random pixel subsets.

    Parameters
    ----------
    score : callable
        ``score(x) -> (N,)`` tensor: the explained output for a batch ``x`` (e.g. a sigmoid probability).
    image : (1, C, H, W) torch.Tensor
        The explained input.
    attribution : (H, W) array_like
        Finite attribution at image resolution (upsample a coarse map first).
    baseline : torch.Tensor
        Replacement values broadcastable to ``image`` (``torch.zeros(1)`` is black in an unnormalised space).
    iterations, subset, seed, batch : int
        Number of random subsets, pixels per subset (1 … H·W − 1), their seed, scoring batch size.

    Returns
    -------
    r : float
        In [−1, 1]; NaN when either side is constant.

    Notes
    -----
    For random pixel subsets S_k (every channel set to the baseline), r = corr_k(Σ_{i ∈ S_k} a_i,
    f(x) − f(x with S_k ← baseline)), Pearson's r: Bhatt et al.'s faithfulness correlation. The defaults
    are the thesis's setting (§3.5.2, 200 iterations of 1,024 pixels; its baseline is black). Constant drops
    or constant attribution sums (e.g. a constant map) give NaN, not a warning. Wrong shapes, a non-finite
    attribution or ``subset`` out of range raise :class:`~cxrxai.errors.MetricError`.

    References
    ----------
    .. [1] Bhatt U., Weller A., Moura J.M.F. (2020) Evaluating and aggregating feature-based model
           explanations. IJCAI. doi:10.24963/ijcai.2020/417
    .. [2] Bel Bordes G. (2023) Fairness and Explainability in Chest X-ray Image Classifiers. MSc thesis,
           Utrecht University.

    Examples
    --------
    >>> img = torch.arange(16.0).reshape(1, 1, 4, 4)
    >>> score = lambda x: x.sum(dim=(1, 2, 3))  # linear: the drop is the pixels' sum
    >>> a = img[0, 0].numpy()
    >>> round(faithfulness_correlation(score, img, a, torch.zeros(1), iterations=20, subset=4), 6)
    1.0
    >>> faithfulness_correlation(score, img, np.ones((4, 4)), torch.zeros(1), iterations=20, subset=4)
    nan
    """
    return float(faithfulness_correlations(score, image, [attribution], baseline, iterations=iterations,
                                           subset=subset, seed=seed, batch=batch)[0])


def faithfulness_correlations(
    score: Score,
    image: torch.Tensor,
    attributions,
    baseline: torch.Tensor,
    *,
    iterations: int = 200,
    subset: int = 1024,
    seed: int = 0,
    batch: int = 32,
) -> np.ndarray:
    """:func:`faithfulness_correlation` of several maps of the same image and output at once.

    The random subsets and the model's score drops do not depend on the map, so they are computed
    once (``iterations`` + 1 forward passes in all, not per map); each map then only sums its
    attribution over the same subsets. The result equals one :func:`faithfulness_correlation` call
    per map with the same ``seed``.

    Returns
    -------
    r : (len(attributions),) ndarray
        One correlation per map, NaN where either side is constant.

    Examples
    --------
    >>> img = torch.arange(16.0).reshape(1, 1, 4, 4)
    >>> score = lambda x: x.sum(dim=(1, 2, 3))
    >>> maps = [img[0, 0].numpy(), -img[0, 0].numpy(), np.ones((4, 4))]
    >>> faithfulness_correlations(score, img, maps, torch.zeros(1), iterations=20, subset=4).round(6).tolist()
    [1.0, -1.0, nan]
    """
    maps = [_check(image, a) for a in attributions]
    h, w = tuple(image.shape[-2:])
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
    return np.array([_pearson(a.ravel()[idx].astype(np.float64).sum(axis=1), drops) for a in maps])


def _pearson(mass: np.ndarray, drops: np.ndarray) -> float:
    if np.ptp(drops) == 0 or np.ptp(mass) == 0:  # a constant side has no correlation (NaN, not a warning)
        return float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.corrcoef(mass, drops)[0, 1]
    return float(r) if np.isfinite(r) else float("nan")


def region_order(
    attribution, region: int, *, order: str = "attribution", seed: int = 0
) -> list[tuple[int, int]]:
    """Top-left corners of the ``region``-px squares, most attributed first (or shuffled).

    Parameters
    ----------
    attribution : (H, W) array_like
        Attribution at image resolution.
    region : int
        Side of the squares in pixels; the grid starts at (0, 0), so edge squares may be smaller.
    order : {"attribution", "random"}
        By summed attribution, descending, or a random permutation.
    seed : int
        Seed of the random permutation.

    Returns
    -------
    corners : list of (int, int)
        ``(row, col)`` of every square, in perturbation order.

    Notes
    -----
    A square's importance is Σ a over its pixels (signed, unnormalised), the order in which the thesis
    deletes or inserts regions (Petsiuk et al.'s curves). The sort is stable: ties, and so a constant map,
    keep row-major order. Edge squares are ranked by their sums over fewer pixels.

    References
    ----------
    .. [1] Petsiuk V., Das A., Saenko K. (2018) RISE: Randomized input sampling for explanation of
           black-box models. BMVC. arXiv:1806.07421

    Examples
    --------
    >>> a = np.arange(16.0).reshape(4, 4)  # 2 × 2 sums: (0, 0) 10, (0, 2) 18, (2, 0) 42, (2, 2) 50
    >>> region_order(a, 2)
    [(2, 2), (2, 0), (0, 2), (0, 0)]
    >>> region_order(np.zeros((4, 4)), 2)
    [(0, 0), (0, 2), (2, 0), (2, 2)]
    """
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


def perturbation_curve(
    score: Score,
    image: torch.Tensor,
    attribution,
    fill: torch.Tensor,
    *,
    mode: str = "deletion",
    region: int = 32,
    order: str = "attribution",
    seed: int = 0,
    batch: int = 32,
) -> tuple[np.ndarray, np.ndarray]:
    """Deletion or insertion curve: the score as square regions are perturbed one by one.

    Parameters
    ----------
    score : callable
        ``score(x) -> (N,)`` tensor, as in :func:`faithfulness_correlation`.
    image : (1, C, H, W) torch.Tensor
        The explained input.
    attribution : (H, W) array_like
        Finite attribution at image resolution; it orders the regions (:func:`region_order`).
    fill : torch.Tensor
        Broadcastable to ``image``: black (``torch.zeros(1)`` in an unnormalised space) or the mean image.
    mode : {"deletion", "insertion"}
    region : int
        Side of the square regions in pixels (32: 64 steps at 256 px, the thesis's setting).
    order : {"attribution", "random"}
    seed, batch : int
        Seed of the random order; scoring batch size.

    Returns
    -------
    x, y : ndarray
        x = 0 … 1 in n + 1 equal steps (n regions); y the score before any step and after each (float32).

    Notes
    -----
    Deletion starts from the image and replaces regions with ``fill``, most attributed first (or in a
    seeded random order, the reference of :func:`audc_diff`); insertion starts from the filled image and
    pastes the image's regions back. Perturbed regions stay perturbed (Petsiuk et al.; the thesis). x is the
    fraction of *regions* perturbed: the fraction of pixels only when ``region`` divides H and W.
    AUDC / AUIC = :func:`curve_area` of (x, y).

    References
    ----------
    .. [1] Petsiuk V., Das A., Saenko K. (2018) RISE: Randomized input sampling for explanation of
           black-box models. BMVC. arXiv:1806.07421
    .. [2] Bel Bordes G. (2023) Fairness and Explainability in Chest X-ray Image Classifiers. MSc thesis,
           Utrecht University.

    Examples
    --------
    >>> img = torch.arange(16.0).reshape(1, 1, 4, 4)  # 2 × 2 regions of sums 50, 42, 18, 10
    >>> score = lambda x: x.sum(dim=(1, 2, 3))
    >>> x, y = perturbation_curve(score, img, img[0, 0].numpy(), torch.zeros(1), region=2)
    >>> x.tolist(), y.tolist()
    ([0.0, 0.25, 0.5, 0.75, 1.0], [120.0, 70.0, 28.0, 10.0, 0.0])
    >>> ins = perturbation_curve(score, img, img[0, 0].numpy(), torch.zeros(1), mode="insertion", region=2)
    >>> ins[1].tolist()
    [0.0, 50.0, 92.0, 110.0, 120.0]
    """
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
