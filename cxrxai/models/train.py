"""Train a classifier from scratch on grey images (the demo model's recipe).

Recipe (chosen to fit a 2-core CPU in under an hour; minutes on a GPU):

* multi-label BCE on logits, AdamW (lr 1e-3, weight decay 1e-4), one cosine schedule over all
  steps after a short warm-up;
* progressive resizing (fast.ai): early epochs at 128 px, final epochs at the model's input
  size — DenseNet-121 is fully convolutional up to global pooling, so one network serves both;
* augmentation on the batch: rotation ±6°, scale 0.92–1.08, shift ±4 %, gamma and contrast
  jitter; no horizontal flip (it would move the heart to the right: dextrocardia);
* bf16 autocast on CPU (AVX-512 BF16) or CUDA, fp32 master weights; channels_last;
* the checkpoint with the best mean validation AUROC (evaluated at the input size) is kept.

Everything random is seeded from ``TrainConfig.seed``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import DataError
from .registry import LoadedModel, best_device, build
from .spec import ModelSpec

__all__ = ["TrainConfig", "mean_auroc", "train"]


@dataclass(frozen=True)
class TrainConfig:
    arch: str = "densenet121"
    seed: int = 0
    schedule: tuple[tuple[int, int], ...] = ((128, 5), (224, 3))  # (resolution, epochs)
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 1e-4
    warmup_steps: int = 100
    mixed_precision: bool = True
    max_minutes: float | None = None  # stop early (after evaluating) when exceeded
    # weights file (.pt) to start from instead of a fresh initialisation (fine-tuning)
    init_from: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Progress:
    epoch: int
    step: int
    total_steps: int
    loss: float
    resolution: int
    val_auroc: float | None = None


def mean_auroc(y: np.ndarray, p: np.ndarray) -> tuple[float, list[float]]:
    """Mean and per-column ROC AUC, skipping columns without both classes (NaN)."""
    from sklearn.metrics import roc_auc_score  # here: scikit-learn costs a process 0.9 s to import

    per = []
    for j in range(y.shape[1]):
        col = y[:, j]
        per.append(float(roc_auc_score(col, p[:, j])) if 0 < col.sum() < len(col) else float("nan"))
    return float(np.nanmean(per)), per


@dataclass
class _Run:
    """One training's moving parts: the network, its optimiser and schedule, the seeded random
    streams, the labels as a tensor and the step counts."""

    model: torch.nn.Module
    opt: torch.optim.Optimizer
    sched: torch.optim.lr_scheduler.LRScheduler
    gen: torch.Generator
    rng: np.random.Generator
    y_all: torch.Tensor
    steps_per_epoch: int
    total: int
    started: float
    device: torch.device
    step: int = 0


def train(images: np.ndarray, labels: np.ndarray, train_idx: np.ndarray, val_idx: np.ndarray,
          spec: ModelSpec, config: TrainConfig, *, device: torch.device | None = None,
          progress: Callable[[Progress], None] | None = None) -> tuple[LoadedModel, list[dict]]:
    """Train ``config.arch`` on ``images[train_idx]``; return the best model and the history."""
    if labels.shape != (len(images), len(spec.labels)):
        raise DataError(f"labels must be (N, {len(spec.labels)}), got {labels.shape}")
    device = device or best_device()
    run = _start(config, spec, labels, len(train_idx), device)
    history, best, best_state, epoch = [], -1.0, None, 0
    out_of_time = False
    for resolution, epochs in config.schedule:
        for _ in range(epochs):
            losses, out_of_time = _epoch(run, images, train_idx, resolution, spec, config, epoch, progress)
            last_stage = resolution == config.schedule[-1][0]
            record = {"epoch": epoch, "resolution": resolution, "loss": float(np.mean(losses)),
                      "minutes": round((time.monotonic() - run.started) / 60, 2)}
            if last_stage or out_of_time or epoch == sum(e for _, e in config.schedule[:1]) - 1:
                record["val_auroc"] = val = _evaluate(run.model, images, labels, val_idx, spec, device)
                best, best_state = _keep_best(run.model, val, best, best_state)
                if progress:
                    progress(Progress(epoch, run.step, run.total, record["loss"], resolution, val))
            history.append(record)
            epoch += 1
            if out_of_time:
                break
        if out_of_time:
            break
    if best_state is not None:
        run.model.load_state_dict(best_state)
    run.model.eval()
    return LoadedModel(run.model, spec, device), history


def _start(config: TrainConfig, spec: ModelSpec, labels: np.ndarray, n_train: int, device) -> _Run:
    """Seed everything from ``config.seed`` and set up the network, optimiser and schedule."""
    torch.manual_seed(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    model = _initial(config, len(spec.labels)).to(device, memory_format=torch.channels_last)
    steps_per_epoch = math.ceil(n_train / config.batch_size)
    total = steps_per_epoch * sum(e for _, e in config.schedule)
    opt, sched = _optimizer(model, config, total)
    y_all = torch.from_numpy(labels.astype(np.float32))
    return _Run(model, opt, sched, gen, rng, y_all, steps_per_epoch, total, time.monotonic(), device)


def _epoch(run: _Run, images: np.ndarray, train_idx: np.ndarray, resolution: int, spec: ModelSpec,
           config: TrainConfig, epoch: int, progress) -> tuple[list[float], bool]:
    """One epoch at ``resolution``: its batch losses, and whether ``config.max_minutes`` ran out."""
    run.model.train()
    device = run.device
    order = run.rng.permutation(train_idx)
    losses = []
    for b in range(run.steps_per_epoch):
        idx = np.sort(order[b * config.batch_size:(b + 1) * config.batch_size])
        x = _augment(_to_unit(images, idx), resolution, run.gen).to(device, memory_format=torch.channels_last)
        losses.append(_step(run.model, run.opt, run.sched, _normalize(x, spec), run.y_all[idx].to(device),
                            config))
        run.step += 1
        if progress:
            progress(Progress(epoch, run.step, run.total, float(np.mean(losses[-20:])), resolution))
        if config.max_minutes and (time.monotonic() - run.started) / 60 > config.max_minutes:
            return losses, True
    return losses, False


def _initial(config: TrainConfig, n_outputs: int) -> torch.nn.Module:
    """A fresh ``config.arch``, or the weights of ``config.init_from`` to fine-tune."""
    model = build(config.arch, n_outputs)
    if config.init_from:
        state = torch.load(config.init_from, map_location="cpu", weights_only=True)
        try:
            model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items()})
        except RuntimeError as err:
            raise DataError(
                f"{config.init_from}: weights do not fit a {config.arch} with {n_outputs} outputs, so it "
                f"cannot be fine-tuned: {err}"
            ) from None
    return model


def _optimizer(model, config: TrainConfig, total: int):
    """AdamW with a cosine schedule after linear warm-up over ``total`` steps."""
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, _cosine_with_warmup(config.warmup_steps, total))


def _keep_best(model, val: float, best: float, best_state: dict | None) -> tuple[float, dict | None]:
    """The best validation AUROC so far and a copy of the weights that reached it."""
    if val > best:
        return val, {k: v.detach().clone() for k, v in model.state_dict().items()}
    return best, best_state


def fast_bf16(device: torch.device) -> bool:
    """Whether bf16 autocast pays on ``device``: CUDA, or a CPU with native bf16 (AVX-512 BF16 /
    AMX). Elsewhere (AVX2) it is emulated and a ResNet-18 step took 10× longer than fp32 here."""
    if device.type == "cuda":
        return True
    return device.type == "cpu" and bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def _step(model, opt, sched, x: torch.Tensor, y: torch.Tensor, config: TrainConfig) -> float:
    """One optimisation step (bf16 autocast when asked and the device has it natively); returns the
    batch loss."""
    with torch.autocast(
        x.device.type, dtype=torch.bfloat16, enabled=config.mixed_precision and fast_bf16(x.device)
    ):
        logits = model(x)
    loss = F.binary_cross_entropy_with_logits(logits.float(), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    sched.step()
    return float(loss.detach())


def _cosine_with_warmup(warmup: int, total: int) -> Callable[[int], float]:
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        t = (step - warmup) / max(1, total - warmup)
        return 0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * min(t, 1.0)))

    return factor


def _to_unit(images: np.ndarray, idx: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(images[idx])).float().div_(255.0)[:, None]


def _augment(x: torch.Tensor, resolution: int, gen: torch.Generator) -> torch.Tensor:
    n = x.shape[0]
    angle = (torch.rand(n, generator=gen) * 2 - 1) * math.radians(6)
    scale = 0.92 + torch.rand(n, generator=gen) * 0.16
    shift = (torch.rand(n, 2, generator=gen) * 2 - 1) * 0.08  # ±4 % of the side, in [-1, 1] units
    cos, sin = torch.cos(angle) / scale, torch.sin(angle) / scale
    theta = torch.stack(
        [torch.stack([cos, -sin, shift[:, 0]], 1), torch.stack([sin, cos, shift[:, 1]], 1)], 1
    )
    grid = F.affine_grid(theta, (n, 1, resolution, resolution), align_corners=False)
    x = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
    gamma = torch.exp((torch.rand(n, 1, 1, 1, generator=gen) * 2 - 1) * 0.15)
    contrast = 1 + (torch.rand(n, 1, 1, 1, generator=gen) * 2 - 1) * 0.08
    return ((x.clamp(0, 1) ** gamma - 0.5) * contrast + 0.5).clamp(0, 1)


def _normalize(x: torch.Tensor, spec: ModelSpec) -> torch.Tensor:
    mean = torch.tensor(spec.mean, device=x.device).view(1, -1, 1, 1)
    std = torch.tensor(spec.std, device=x.device).view(1, -1, 1, 1)
    return (x.expand(-1, len(spec.mean), -1, -1) - mean) / std


@torch.inference_mode()
def _evaluate(model, images, labels, idx, spec: ModelSpec, device, batch_size: int = 64) -> float:
    model.eval()
    probs = []
    for b in range(0, len(idx), batch_size):
        part = idx[b:b + batch_size]
        x = _to_unit(images, part)
        if x.shape[-1] != spec.input_size:
            x = F.interpolate(
                x, size=(spec.input_size,) * 2, mode="bilinear", align_corners=False, antialias=True
            )
        x = _normalize(x.to(device), spec).contiguous(memory_format=torch.channels_last)
        probs.append(torch.sigmoid(model(x).float()).cpu().numpy())
    return mean_auroc(labels[idx], np.concatenate(probs))[0]
