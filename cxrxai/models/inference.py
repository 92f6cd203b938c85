"""Batched prediction: grey images in, logits out (``torch.inference_mode``, channels_last)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from .registry import LoadedModel
from .spec import preprocess

__all__ = ["predict_logits", "sigmoid"]


def predict_logits(model: LoadedModel, images: Sequence[np.ndarray] | np.ndarray, *, batch_size: int | None = None,
                   progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Logits (N, n_labels) float32 for a stack or sequence of (H, W) uint8 images.

    ``batch_size`` defaults to 8 on CPU (small batches stay in cache: DenseNet-121 ran 65 ms
    per image at batch 8 and 87–95 ms at 32 on 2 cores) and 64 on a GPU.
    """
    n = len(images)
    batch_size = batch_size or (64 if model.device.type == "cuda" else 8)
    out = np.empty((n, len(model.spec.labels)), np.float32)
    with torch.inference_mode():
        for start in range(0, n, batch_size):
            batch = np.stack([np.asarray(images[i]) for i in range(start, min(n, start + batch_size))])
            x = preprocess(batch, model.spec).to(model.device)
            out[start:start + len(batch)] = model.module(x).float().cpu().numpy()
            if progress:
                progress(min(n, start + batch_size), n)
    return out


def sigmoid(logits: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function."""
    z = np.asarray(logits, dtype=np.float64)
    return np.where(z >= 0, 1 / (1 + np.exp(-np.abs(z))), np.exp(-np.abs(z)) / (1 + np.exp(-np.abs(z))))
