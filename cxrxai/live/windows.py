"""Occlusion window scores kept between live jobs, so a new setting computes only what it lacks.

A window's score depends on the model, the image, the target, the window (its size and top-left
corner) and what replaces it (baseline), what is scored (output) and the precision; not on the
stride, which only picks which windows a grid holds. Every 16/16 window is a 16/8 window, and
every 16/8 window a 16/4 one: going 16/16 → 16/8 computes the three quarters it lacks. Kept per
model (weakly: a model that is dropped takes its windows with it), the last :data:`KEEP` keys
each, in the process that computes the maps (the worker's child, or the thread worker's).
"""

from __future__ import annotations

import collections
import hashlib
import threading
import weakref
from typing import TYPE_CHECKING

from ..store import params_key

if TYPE_CHECKING:
    import torch

__all__ = ["KEEP", "known_windows"]

#: Images × targets × window settings remembered per model (a 224-px 8/4 grid is ~3,000 scores).
KEEP = 32

#: Parameters that pick which windows a grid holds, not what a window scores.
_PICKS_WINDOWS = ("stride",)

_STORE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def known_windows(module: torch.nn.Module, image: torch.Tensor, target: int, params: dict) -> dict | None:
    """The window scores (top-left corner → score) computed so far for ``module``, ``image``,
    ``target`` and the map-defining ``params`` (runtime ones left out by the caller), to be
    read and extended by the computation; ``None`` when ``params`` cannot be keyed (a tensor
    baseline)."""
    try:
        settings = params_key({k: v for k, v in params.items() if k not in _PICKS_WINDOWS})
    except TypeError:
        return None
    key = (_digest(image), int(target), settings)
    with _LOCK:
        kept = _STORE.setdefault(module, collections.OrderedDict())
        windows = kept.setdefault(key, {})
        kept.move_to_end(key)
        while len(kept) > KEEP:
            kept.popitem(last=False)
    return windows


def _digest(image: torch.Tensor) -> tuple:
    """The image's identity by content (the same pixels read twice are the same image)."""
    pixels = image.detach().cpu().contiguous().numpy()
    return pixels.shape, str(pixels.dtype), hashlib.blake2b(pixels.tobytes(), digest_size=16).hexdigest()
