"""Occlusion (Zeiler & Fergus, ECCV 2014), computed fast and equal to Captum's ``Occlusion``.

Definition (Captum's, which the thesis used): a ``patch × patch`` window of every channel
slides with ``stride``; window (r, c) starts at (r·stride, c·stride) and is clipped at the
border; there are ``ceil((H − patch) / stride) + 1`` rows of windows (same for columns). The
window score is ``S(x) − S(x with the window replaced by the baseline)``; each pixel's
attribution is the mean score of the windows that cover it.

How it is made fast, exactly:

* the clean forward runs once; occluded copies run in batches under ``inference_mode`` and
  ``channels_last`` (Captum's default runs one copy per forward);
* only the window-score grid is computed; the per-pixel map is rebuilt from it with one
  transposed convolution (sum of covering windows) divided by another (their count) —
  :class:`OcclusionGrid` stores the grid, so the store keeps 15×15 numbers, not 224×224;
* optional bf16/fp16 autocast (``precision=``), meant for GPUs; it changes values at ~1e-3;
* on CPU, for torchvision DenseNets, exact incremental inference (:mod:`._incremental`):
  only the region a window changes is recomputed in the stem and the first two dense blocks.

For live use: ``progress(done, total)`` is called after each batch, ``cancel()`` is polled
before each batch (raising :class:`Cancelled`), :func:`occlusion_progressive` yields a coarse
grid (stride = patch) before the requested one, and a CUDA out-of-memory error halves the batch
and retries instead of failing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import ExplainerError, UnknownNameError, shown
from . import _incremental
from ._common import score_fn

__all__ = [
    "ENGINES",
    "PRECISIONS",
    "Cancelled",
    "OcclusionGrid",
    "default_batch_size",
    "grid_shape",
    "occlusion_grid",
    "occlusion_grids",
    "occlusion_progressive",
    "pick_engine",
]

PRECISIONS = ("fp32", "bf16", "fp16")
#: "batched" re-runs the whole network per occluded copy; "incremental" recomputes only the
#: changed regions of DenseNet's first blocks (exact; CPU fp32 only); "auto" picks.
ENGINES = ("auto", "batched", "incremental")


class Cancelled(ExplainerError):
    """Raised when a caller's ``cancel()`` returned True mid-computation."""


@dataclass(frozen=True)
class OcclusionGrid:
    """Window scores plus the geometry that rebuilds Captum's per-pixel map exactly."""

    scores: np.ndarray  # (rows, cols) float32: S(x) − S(x occluded at window (r, c))
    patch: int
    stride: int
    height: int
    width: int
    baseline: str = "black"
    output: str = "logit"
    seconds: float = 0.0

    def to_map(self) -> np.ndarray:
        """(height, width) map: per pixel, the mean score of the windows covering it."""
        return rebuild_map(self.scores, self.patch, self.stride, self.height, self.width)

    def params(self) -> dict:
        d = asdict(self)
        for k in ("scores", "seconds"):
            d.pop(k)
        return d


def grid_shape(height: int, width: int, patch: int, stride: int) -> tuple[int, int]:
    """Number of window rows and columns (Captum's shift counts)."""
    return math.ceil((height - patch) / stride) + 1, math.ceil((width - patch) / stride) + 1


def rebuild_map(scores: np.ndarray, patch: int, stride: int, height: int, width: int) -> np.ndarray:
    g = torch.as_tensor(np.asarray(scores, np.float32))[None, None]
    ones = torch.ones(1, 1, patch, patch)
    total = F.conv_transpose2d(g, ones, stride=stride)[0, 0, :height, :width]
    count = F.conv_transpose2d(torch.ones_like(g), ones, stride=stride)[0, 0, :height, :width]
    return (total / count).numpy()


def _check(image: torch.Tensor, patch: int, stride: int, precision: str) -> tuple[int, int]:
    h, w = image.shape[-2:]
    for name, v in (("patch", patch), ("stride", stride)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ExplainerError(f"{name} must be a positive integer, got {shown(v)}")
    if patch > min(h, w):
        raise ExplainerError(
            f"a {patch}-px window does not fit the {h}×{w} image; allowed patch 1..{min(h, w)}"
        )
    if stride > patch:
        raise ExplainerError(
            f"stride {stride} > patch {patch} would leave pixels never occluded; allowed 1..{patch}"
        )
    if precision not in PRECISIONS:
        raise UnknownNameError("precision", precision, PRECISIONS)
    if image.shape[0] != 1:
        raise ExplainerError(f"occlusion explains one image at a time, got a batch of {image.shape[0]}")
    return int(h), int(w)


def default_batch_size(device: torch.device, height: int, width: int, engine: str = "batched") -> int:
    """Windows per forward. On CPU small batches stay in cache: DenseNet-121 at 256 px on 2
    cores took 65 ms per image at batch 4–8 and 87–95 ms at 32; the incremental engine, whose
    windows are smaller, is fastest at 16 (measured, ``benchmarks/explainers.py``). On CUDA the
    batch comes from free memory."""
    if device.type != "cuda":
        return 16 if engine == "incremental" else 8
    free, _ = torch.cuda.mem_get_info(device)
    per_sample = 80e6 * height * width / 224**2  # DenseNet-121 inference activations, with margin
    return int(max(1, min(1024, 0.5 * free // per_sample)))


def pick_engine(module: torch.nn.Module, device: torch.device, precision: str, engine: str = "auto") -> str:
    """The engine ``auto`` resolves to: incremental for a DenseNet on CPU in fp32, else batched."""
    if engine not in ENGINES:
        raise UnknownNameError("occlusion engine", engine, ENGINES)
    possible = _incremental.supports(module) and device.type == "cpu" and precision == "fp32"
    if engine == "incremental" and not possible:
        raise ExplainerError(
            "the incremental engine needs a torchvision DenseNet that runs torchvision's own forward "
            "(no subclass head), on CPU in fp32; use engine='batched'"
        )
    if engine == "auto":
        return "incremental" if possible else "batched"
    return engine


def occlusion_grid(module: torch.nn.Module, image: torch.Tensor, target: int, baseline: torch.Tensor, *,
                   patch: int = 32, stride: int = 16, output: str = "logit", batch_size: int | None = None,
                   precision: str = "fp32", progress: Callable[[int, int], None] | None = None,
                   cancel: Callable[[], bool] | None = None, baseline_name: str = "custom",
                   engine: str = "auto") -> OcclusionGrid:
    """Window-score grid of one image (see the module docstring)."""
    return occlusion_grids(module, image, [target], baseline, patch=patch, stride=stride, output=output,
                           batch_size=batch_size, precision=precision, progress=progress, cancel=cancel,
                           baseline_name=baseline_name, engine=engine)[0]


def occlusion_grids(
    module: torch.nn.Module,
    image: torch.Tensor,
    targets: list[int],
    baseline: torch.Tensor,
    *,
    patch: int = 32,
    stride: int = 16,
    output: str = "logit",
    batch_size: int | None = None,
    precision: str = "fp32",
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    baseline_name: str = "custom",
    engine: str = "auto",
) -> list[OcclusionGrid]:
    """One grid per target from the same occluded forward passes (each pass scores every output, so
    an image positive for three findings costs what one does). Each grid's ``seconds`` is the
    whole computation's: what that map took, whether or not other targets came with it."""
    h, w = _check(image, patch, stride, precision)
    targets = [int(t) for t in targets]
    if not targets:
        raise ExplainerError("occlusion_grids needs at least one target")
    t0 = time.perf_counter()
    rows, cols = grid_shape(h, w, patch, stride)
    device = image.device
    if pick_engine(module, device, precision, engine) == "incremental":
        starts = [(r * stride, c * stride) for r in range(rows) for c in range(cols)]
        with torch.inference_mode():
            scores = _incremental.IncrementalDenseNet(module, output).window_scores(
                image.detach().to(memory_format=torch.channels_last),
                baseline.to(device=device, dtype=image.dtype),
                starts,
                patch,
                targets,
                batch_size or default_batch_size(device, h, w, "incremental"),
                progress,
                cancel,
                Cancelled,
            )
    else:
        scores = _batched_scores(module, image, targets, baseline, patch=patch, stride=stride, output=output,
                                 batch_size=batch_size, precision=precision, progress=progress, cancel=cancel)
    seconds = time.perf_counter() - t0
    return [
        OcclusionGrid(
            scores[:, k].reshape(rows, cols).copy(),
            int(patch),
            int(stride),
            h,
            w,
            baseline_name,
            output,
            seconds,
        )
        for k in range(len(targets))
    ]


def _batched_scores(
    module, image, targets, baseline, *, patch, stride, output, batch_size, precision, progress, cancel
) -> np.ndarray:
    """(windows, targets) score drops, whole forward passes over batches of occluded copies."""
    h, w = image.shape[-2:]
    rows, cols = grid_shape(h, w, patch, stride)
    device = image.device
    f = score_fn(module, output)
    x = image.detach().to(memory_format=torch.channels_last)
    base = baseline.to(device=device, dtype=x.dtype).expand_as(x)
    starts = [(r * stride, c * stride) for r in range(rows) for c in range(cols)]
    batch = batch_size or default_batch_size(device, h, w)
    dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    scores = np.empty((len(starts), len(targets)), np.float32)
    with (
        torch.inference_mode(),
        torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None),
    ):
        clean = f(x)[0, targets].float()
        done = 0
        while done < len(starts):
            if cancel is not None and cancel():
                raise Cancelled(f"occlusion cancelled after {done} of {len(starts)} windows")
            chunk = starts[done:done + batch]
            try:
                occluded = x.repeat(len(chunk), 1, 1, 1)
                for i, (r0, c0) in enumerate(chunk):
                    occluded[i, :, r0:r0 + patch, c0:c0 + patch] = base[0, :, r0:r0 + patch, c0:c0 + patch]
                out = f(occluded.contiguous(memory_format=torch.channels_last))[:, targets].float()
            except torch.cuda.OutOfMemoryError:
                if batch == 1:
                    raise
                batch = max(1, batch // 2)
                torch.cuda.empty_cache()
                continue
            scores[done:done + len(chunk)] = (clean - out).cpu().numpy()
            done += len(chunk)
            if progress:
                progress(done, len(starts))
    return scores


def occlusion_progressive(module, image, target, baseline, *, patch: int = 32, stride: int = 16,
                          **kwargs) -> Iterator[tuple[str, OcclusionGrid]]:
    """Yield ``("coarse", grid)`` with stride = patch first (when it differs), then ``("final", grid)``."""
    if stride != patch:
        yield "coarse", occlusion_grid(module, image, target, baseline, patch=patch, stride=patch, **kwargs)
    yield "final", occlusion_grid(module, image, target, baseline, patch=patch, stride=stride, **kwargs)
