"""Trustworthiness of saliency maps (Arun et al., Radiology: AI 2021).

* :func:`ssim` — structural similarity of two maps, scikit-image with an explicit
  ``data_range``. Arun et al. called ``structural_similarity(m1, m2)`` on float maps in [0, 1]
  with scikit-image 0.16/0.17, whose float default range was 2.0 (−1 … 1); pass
  ``data_range=2.0`` to reproduce their numbers, 1.0 is the correct range for [0, 1] maps.
* :func:`arun_normalize` — their greyscale pipeline before SSIM: Σ|a| over channels (done by the
  explainer's ``reduce="abs_sum"``), clip at the 99th percentile, min–max.
* :func:`randomization_steps` — cascading randomization (Adebayo et al. 2018) from the top
  layer down; for DenseNet-121: classifier, denseblock4, transition3, denseblock3,
  transition2, denseblock2, transition1, denseblock1, stem (conv0/norm0).
* :func:`degradation_threshold` — mean SSIM of random pairs of *different* images' maps from
  the trained model (50 pairs); a method "reaches degradation" when its SSIM to the
  original falls below it.
* :func:`pass_fail` — the summary table (Table 2) from per-image scores.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator

import numpy as np
import pandas as pd
import torch
from scipy import stats as sps
from skimage.metrics import structural_similarity

from ..errors import MetricError
from ..postprocess import minmax, percentile_clip

__all__ = [
    "DENSENET_ORDER",
    "arun_normalize",
    "degradation_threshold",
    "pass_fail",
    "randomization_order",
    "randomization_steps",
    "ssim",
]

#: Cascading-randomization steps for torchvision DenseNets, top down (each step: modules re-drawn).
DENSENET_ORDER: tuple[tuple[str, ...], ...] = (
    ("classifier",), ("features.denseblock4", "features.norm5"), ("features.transition3",), ("features.denseblock3",),
    ("features.transition2",), ("features.denseblock2",), ("features.transition1",), ("features.denseblock1",),
    ("features.conv0", "features.norm0"),
)


def ssim(a, b, *, data_range: float = 1.0) -> float:
    """SSIM of two equally shaped 2-D maps (7×7 uniform window, K1 0.01, K2 0.03)."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    if x.shape != y.shape or x.ndim != 2:
        raise MetricError(f"SSIM needs two equal 2-D maps, got {x.shape} and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise MetricError("SSIM inputs contain NaN or infinite values")
    if min(x.shape) < 7:
        raise MetricError(f"SSIM's 7×7 window needs maps of at least 7×7; upsample {x.shape} first")
    return float(structural_similarity(x, y, data_range=data_range))


def arun_normalize(m) -> np.ndarray:
    """Clip at the 99th percentile and scale to [0, 1], then min–max again (Arun et al.)."""
    return minmax(percentile_clip(m, 99.0))


def randomization_order(module: torch.nn.Module) -> list[tuple[str, ...]]:
    """Top-down groups of modules to re-draw: DenseNet's named steps, else top-level children reversed."""
    names = {n for n, _ in module.named_modules()}
    if all(n in names for step in DENSENET_ORDER for n in step):
        return list(DENSENET_ORDER)
    return [(n,) for n, _ in reversed(list(module.named_children()))]


def _reinit(module: torch.nn.Module, gen: torch.Generator) -> None:
    """Truncated-normal re-draw (±2σ, He scale) of weights; biases and BN shifts 0, BN scales 1."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
                fan_in = m.weight[0].numel()
                std = math.sqrt(2.0 / fan_in)
                w = torch.empty_like(m.weight).normal_(0, std, generator=gen).clamp_(-2 * std, 2 * std)
                m.weight.copy_(w)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                if m.affine:
                    m.weight.fill_(1.0)
                    m.bias.zero_()


def randomization_steps(module: torch.nn.Module, *, order: list[tuple[str, ...]] | None = None, seed: int = 0
                        ) -> Iterator[tuple[str, torch.nn.Module]]:
    """Yield ``(step, model)``: "original", then the model with each step's modules re-drawn,
    cumulatively (step name = its first module). The caller's model is never modified."""
    order = order or randomization_order(module)
    work = copy.deepcopy(module).eval()
    gen = torch.Generator().manual_seed(seed)
    yield "original", copy.deepcopy(work)
    for step in order:
        for name in step:
            _reinit(work.get_submodule(name), gen)
        # A fresh copy per step: helpers that cache per module (guided backprop's ReLU copy) must
        # never see a model whose weights changed under them.
        yield step[0], copy.deepcopy(work)


def degradation_threshold(maps: list[np.ndarray], *, n_pairs: int = 50, data_range: float = 1.0, seed: int = 0
                          ) -> float:
    """Mean SSIM of ``n_pairs`` random pairs of different images' maps (the randomization baseline)."""
    if len(maps) < 2:
        raise MetricError("the degradation threshold needs maps of at least two images")
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n_pairs):
        i, j = rng.choice(len(maps), 2, replace=False)
        vals.append(ssim(maps[i], maps[j], data_range=data_range))
    return float(np.mean(vals))


def _one_sided_p(x: np.ndarray, alternative: str) -> float:
    """One-sample t-test of mean(x) against 0. Constant samples (SSIM 1.0 of a model with
    itself) have no variance: the verdict is then certain, p = 0 on the tested side and 1 on
    the other, instead of SciPy's precision-loss warning and NaN.

    >>> _one_sided_p(np.array([0.2, 0.2, 0.2]), "greater"), _one_sided_p(np.array([0.2, 0.2]), "less")
    (0.0, 1.0)
    """
    if len(x) < 2:
        return float("nan")
    if np.ptp(x) <= 1e-12 * max(1.0, float(np.abs(x).max())):
        m = float(x.mean())
        return 0.0 if (m > 0 if alternative == "greater" else m < 0) else 1.0
    return float(sps.ttest_1samp(x, 0, alternative=alternative).pvalue)


def pass_fail(scores: pd.DataFrame, *, alpha: float = 0.005, low: float = 0.5) -> pd.DataFrame:
    """Arun et al.'s PASS/FAIL table from per-image scores.

    ``scores`` columns: ``method``, ``criterion`` (utility | randomization | repeatability |
    reproducibility), ``value`` (per image: AUPRC, final-step SSIM, SSIM), ``baseline`` (per
    image for utility: the average-mask AUPRC; for randomization: the degradation threshold).
    Utility passes when the method beats the average mask (paired t-test, one-sided p < alpha);
    randomization when the fully randomized SSIM is below the degradation threshold (one-sided);
    repeatability / reproducibility when SSIM exceeds ``low`` = 0.5 (one-sample, one-sided).
    Returns one row per method with each criterion's verdict, mean and p-value.
    """
    rows = []
    for method, g in scores.groupby("method", sort=True):
        row = {"method": method}
        for crit, c in g.groupby("criterion"):
            v = c["value"].to_numpy(float)
            if crit == "utility":
                p = _one_sided_p(v - c["baseline"].to_numpy(float), "greater")
            elif crit == "randomization":
                p = _one_sided_p(v - c["baseline"].to_numpy(float), "less")
            else:
                p = _one_sided_p(v - low, "greater")
            row[crit] = "PASS" if np.isfinite(p) and p < alpha else "FAIL"
            row[f"{crit}_mean"] = float(np.mean(v))
            row[f"{crit}_p"] = float(p)
        rows.append(row)
    return pd.DataFrame(rows)
