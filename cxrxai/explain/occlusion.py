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
grid (stride = patch) before the requested one and partial maps while each pass computes, and a
CUDA out-of-memory error halves the batch and retries instead of failing. A window's score does
not depend on the stride, so :func:`occlusion_progressive` takes the scores already known
(window corner → score) and computes only the windows missing from them
(:func:`window_batches` scores any list of windows).

One module though past 300 lines: one explainer and its exact fast paths (batched, progressive,
partial), all over the one window grid; the incremental DenseNet engine is :mod:`._incremental`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import Cancelled, ExplainerError, UnknownNameError, shown
from . import _incremental
from ._common import score_fn
from .native import OcclusionGrid
from .params import ENGINES, PARTIAL, PRECISIONS

__all__ = [
    "ENGINES",
    "PARTIAL",
    "PRECISIONS",
    "Cancelled",
    "OcclusionGrid",
    "default_batch_size",
    "grid_shape",
    "occlusion_grid",
    "occlusion_grids",
    "occlusion_progressive",
    "partial_map",
    "pick_engine",
    "window_batches",
    "window_starts",
]


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
    starts = window_starts(h, w, patch, stride)
    scores = np.empty((len(starts), len(targets)), np.float32)
    for offset, chunk in window_batches(module, image, targets, baseline, starts, patch=patch, output=output,
                                        batch_size=batch_size, precision=precision, engine=engine,
                                        progress=progress, cancel=cancel):
        scores[offset:offset + len(chunk)] = chunk
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


def window_starts(height: int, width: int, patch: int, stride: int) -> list[tuple[int, int]]:
    """The windows' top-left corners, row by row (the grid's order)."""
    rows, cols = grid_shape(height, width, patch, stride)
    return [(r * stride, c * stride) for r in range(rows) for c in range(cols)]


def window_batches(
    module: torch.nn.Module,
    image: torch.Tensor,
    targets: list[int],
    baseline: torch.Tensor,
    starts: list[tuple[int, int]],
    *,
    patch: int,
    output: str = "logit",
    batch_size: int | None = None,
    precision: str = "fp32",
    engine: str = "auto",
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> Iterator[tuple[int, np.ndarray]]:
    """``(offset, scores)`` per batch: the (n, targets) score drops of the windows at
    ``starts[offset:offset + n]``, in order; ``progress(done, len(starts))`` after each batch."""
    h, w = image.shape[-2:]
    device = image.device
    if pick_engine(module, device, precision, engine) == "incremental":
        batches = _incremental.IncrementalDenseNet(module, output).window_batches(
            image.detach().to(memory_format=torch.channels_last),
            baseline.to(device=device, dtype=image.dtype),
            starts,
            patch,
            targets,
            batch_size or default_batch_size(device, h, w, "incremental"),
            cancel,
            Cancelled,
        )
    else:
        batches = _batched_batches(module, image, targets, baseline, starts, patch=patch, output=output,
                                   batch_size=batch_size, precision=precision, cancel=cancel)
    for offset, chunk in batches:
        yield offset, chunk
        if progress:
            progress(offset + len(chunk), len(starts))


def _batched_batches(
    module, image, targets, baseline, starts, *, patch, output, batch_size, precision, cancel
) -> Iterator[tuple[int, np.ndarray]]:
    """(offset, (n, targets) score drops) per batch of occluded copies, whole forward passes."""
    h, w = image.shape[-2:]
    device = image.device
    f = score_fn(module, output)
    x = image.detach().to(memory_format=torch.channels_last)
    base = baseline.to(device=device, dtype=x.dtype).expand_as(x)
    batch = batch_size or default_batch_size(device, h, w)
    with torch.inference_mode(), _autocast(device, precision):
        clean = f(x)[0, targets].float()
    done = 0
    while done < len(starts):
        if cancel is not None and cancel():
            raise Cancelled(f"occlusion cancelled after {done} of {len(starts)} windows")
        chunk = starts[done:done + batch]
        try:
            with torch.inference_mode(), _autocast(device, precision):
                occluded = x.repeat(len(chunk), 1, 1, 1)
                for i, (r0, c0) in enumerate(chunk):
                    occluded[i, :, r0:r0 + patch, c0:c0 + patch] = base[0, :, r0:r0 + patch, c0:c0 + patch]
                out = f(occluded.contiguous(memory_format=torch.channels_last))[:, targets].float()
                drops = (clean - out).cpu().numpy()
        except torch.cuda.OutOfMemoryError:
            if batch == 1:
                raise
            batch = max(1, batch // 2)
            torch.cuda.empty_cache()
            continue
        yield done, drops
        done += len(chunk)


def _autocast(device: torch.device, precision: str):
    dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    return torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None)


#: Seconds of computing between two partial maps of a pass (a live viewer redraws about this often).
PAINT_EVERY_S = 1.0


def occlusion_progressive(module, image, target, baseline, *, patch: int = 32, stride: int = 16,
                          output: str = "logit", precision: str = "fp32", baseline_name: str = "custom",
                          progress: Callable[[int, int], None] | None = None, known: dict | None = None,
                          paint_every_s: float | None = None, **kwargs) -> Iterator[tuple[str, object]]:
    """Yield ``("coarse", grid)`` with stride = patch first (when it differs), then ``("final", grid)``;
    while a pass computes, ``(PARTIAL, map)`` at most every ``paint_every_s`` s of computing
    (default :data:`PAINT_EVERY_S`): the :func:`partial_map` of the windows known so far (a 2-D
    array, never a result to score).

    ``known`` maps a window's top-left corner to its score (for this model, image, target, patch,
    baseline, output and precision: the caller keys it, see :mod:`cxrxai.live.windows`). Windows in
    it are reused at any stride, the ones computed here are added, so only missing windows are
    computed; ``progress(done, total)`` counts the reused ones as done. ``kwargs``: ``batch_size``,
    ``engine``, ``cancel`` (see :func:`occlusion_grids`)."""
    h, w = _check(image, patch, stride, precision)
    known = {} if known is None else known
    every = PAINT_EVERY_S if paint_every_s is None else paint_every_s
    lattices: list[list[tuple[int, int]]] = []  # the passes' windows: a partial map shows only these
    for step in ([patch, stride] if stride != patch else [stride]):
        t0 = time.perf_counter()
        lattices.append(window_starts(h, w, patch, step))
        yield from _fill(module, image, int(target), baseline, lattices, known, patch, every, progress,
                         dict(kwargs, output=output, precision=precision))
        scores = np.array([known[o] for o in lattices[-1]], np.float32).reshape(grid_shape(h, w, patch, step))
        seconds = time.perf_counter() - t0
        grid = OcclusionGrid(scores, int(patch), int(step), h, w, baseline_name, output, seconds)
        yield ("final" if step == stride else "coarse"), grid


def _fill(module, image, target, baseline, lattices, known, patch, every, progress, kwargs):
    """Compute the windows of ``lattices[-1]`` missing from ``known`` into it, yielding partial maps."""
    starts = lattices[-1]
    missing = [o for o in starts if o not in known]
    reused = len(starts) - len(missing)
    if progress is not None:
        progress(reused, len(starts))
    if not missing:
        return
    report = None if progress is None else lambda done, _: progress(reused + done, len(starts))
    last = time.perf_counter()
    for offset, chunk in window_batches(module, image, [target], baseline, missing, patch=patch,
                                        progress=report, **kwargs):
        known.update(zip(missing[offset:offset + len(chunk)], chunk[:, 0]))
        if time.perf_counter() - last >= every and offset + len(chunk) < len(missing):
            yield PARTIAL, partial_map(known, lattices, patch, *image.shape[-2:])
            last = time.perf_counter()


def partial_map(known: dict, lattices, patch: int, height: int, width: int) -> np.ndarray:
    """(height, width): per pixel, the mean score of the windows in ``known`` among ``lattices``
    (lists of top-left corners) that cover it, 0 where none does yet. With every window of one
    lattice known, this is that grid's :meth:`OcclusionGrid.to_map` (up to rounding)."""
    total = np.zeros((height, width))
    count = np.zeros((height, width))
    for starts in lattices:
        for origin in starts:
            if origin in known:
                total[origin], count[origin] = known[origin], 1.0
    total, count = _window_sums(total, patch), _window_sums(count, patch)
    return np.divide(total, count, out=np.zeros_like(total), where=count > 0).astype(np.float32)


def _window_sums(a: np.ndarray, patch: int) -> np.ndarray:
    """Per pixel, the sum of ``a`` over the ``patch × patch`` corners whose window covers it."""
    c = np.pad(a, ((patch, 0), (patch, 0))).cumsum(0).cumsum(1)
    return c[patch:, patch:] - c[:-patch, patch:] - c[patch:, :-patch] + c[:-patch, :-patch]
