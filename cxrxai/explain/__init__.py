"""One API over every saliency method of the three papers.

    m = explain(model, image, target, "gradcam")
    heat = postprocess.to_image(m, (224, 224))

``explain(model, image, target, method, **params) -> np.ndarray`` returns the raw, signed 2-D
map at the method's native resolution: the CAM layer's grid for ``gradcam``/``gradcam++``,
the input grid for gradient methods, ``occlusion`` (per pixel, Captum's mean over covering
windows) and ``xrai``. ``image`` is a preprocessed float tensor (1, C, H, W); ``target`` is an
output index. Post-processing (upsampling, min–max, ReLU, |·|, percentile clip, ensembles) is
in :mod:`cxrxai.postprocess`.

Common parameters: ``output`` — explain the ``"logit"`` (default; the spec's
``explained_output`` when the model is a :class:`~cxrxai.models.registry.LoadedModel`) or the
``"probability"``; ``reduce`` — channel reduction of input-space methods (``"sum"``,
``"abs_sum"``, ``"mean"``, ``"max_abs"``); ``baseline`` — ``"black"`` (grey level 0, the
papers'), ``"white"``, ``"zero"`` or a tensor such as :func:`mean_image`.

Importing this package and reading its registry (names, parameters, settings, stored maps at their
native size) loads no torch or Captum: a method's computation loads when a map is computed, and the
occlusion engine's functions when first named (``cxrxai.explain.occlusion_grid``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import postprocess
from ..discovery import discover
from ..errors import Cancelled, ExplainerError
from ..models.spec import preprocess
from .native import OcclusionGrid, native_map
from .registry import METHODS, Method, Param, deferred, explainer, get, method_names, register, unregister
from .settings import Setting, setting_names

#: Every module of this package that registers an explainer (``explainer(``), imported in name order:
#: a new method's module is found without being listed; the computation modules are not imported.
discover(sys.modules[__name__], "explainer(")

if TYPE_CHECKING:
    import torch

    from ..models.registry import LoadedModel
    from .occlusion import occlusion_grid, occlusion_grids, occlusion_progressive, rebuild_map

#: The occlusion engine's names this package offers, imported (with torch) when first asked for.
_OCCLUSION = ("occlusion_grid", "occlusion_grids", "occlusion_progressive", "rebuild_map")


def __getattr__(name: str):
    if name in _OCCLUSION:
        return getattr(importlib.import_module(".occlusion", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "METHODS",
    "Cancelled",
    "Method",
    "OcclusionGrid",
    "Param",
    "Setting",
    "average_mask",
    "deferred",
    "explain",
    "explain_batch",
    "explain_ensemble",
    "explainer",
    "get",
    "mean_image",
    "method_names",
    "native_map",
    "occlusion_grid",
    "occlusion_grids",
    "occlusion_progressive",
    "postprocess",
    "random_map",
    "rebuild_map",
    "register",
    "setting_names",
    "unregister",
]


def explain_batch(model, images: torch.Tensor, targets, method: str, **params) -> np.ndarray:
    """Maps for a batch: ``targets`` is one index for all images or one per image → (N, h, w)."""
    import torch

    from ._common import as_module, check_image, check_target, n_outputs

    module, spec = as_module(model)
    setting, runtime = Setting.split(method, params, spec=spec)
    images = check_image(images)
    n_out = n_outputs(module, images)
    tgt = [targets] * images.shape[0] if np.ndim(targets) == 0 else list(targets)
    if len(tgt) != images.shape[0]:
        raise ExplainerError(f"got {len(tgt)} targets for {images.shape[0]} images")
    t = torch.tensor([check_target(x, n_out, spec) for x in tgt], device=images.device)
    out = get(method).run(module, spec, images, t, **setting.kwargs(**runtime))
    return out.detach().float().cpu().numpy().astype(np.float32)


def explain(model, image: torch.Tensor, target: int, method: str, **params) -> np.ndarray:
    """The raw 2-D map of one image (see the module docstring)."""
    from ._common import check_image

    image = check_image(image)
    if image.shape[0] != 1:
        raise ExplainerError(
            f"explain() takes one image (1, C, H, W); use explain_batch for {image.shape[0]}"
        )
    return explain_batch(model, image, [target], method, **params)[0]


def explain_ensemble(models: Sequence, image: torch.Tensor, target: int, method: str, **params) -> np.ndarray:
    """Mean of the members' maps (Saporta et al.'s ensemble); members must agree on map shape."""
    return postprocess.ensemble([explain(m, image, target, method, **params) for m in models])


def mean_image(images: np.ndarray, model: LoadedModel) -> torch.Tensor:
    """Mean of uint8 grey images, preprocessed for ``model`` — a "mean image" baseline (thesis)."""
    arr = np.asarray(images)
    if arr.ndim != 3 or len(arr) == 0:
        raise ExplainerError(f"mean_image needs a non-empty (N, H, W) stack, got {arr.shape}")
    mean = arr.astype(np.float64).mean(0) / 255.0
    return preprocess(mean.astype(np.float32), model.spec).to(model.device)


def average_mask(masks: Sequence[np.ndarray]) -> np.ndarray:
    """Arun et al.'s low baseline: the pixel-wise mean of ground-truth masks (training split)."""
    arrs = [np.asarray(m, np.float32) for m in masks]
    if not arrs:
        raise ExplainerError("average_mask needs at least one mask")
    if len({a.shape for a in arrs}) != 1:
        raise ExplainerError("masks differ in shape; resample them to one size first")
    return np.mean(arrs, axis=0)


def random_map(shape: tuple[int, int], *, seed: int = 0) -> np.ndarray:
    """A uniform random map — the chance-level baseline scored like any explainer."""
    return np.random.default_rng(seed).random(shape, dtype=np.float32)
