"""Occlusion (Zeiler & Fergus 2014) as a registered explainer: its parameters, its stored window
grid and its progressive (coarse, then fine) live runner over the engines of :mod:`.occlusion`
(imported when a map is computed: reading the registry loads no torch)."""

from __future__ import annotations

from .params import BASELINES, ENGINES, OUTPUT, PRECISIONS
from .registry import Param, explainer

__all__ = ["PARAMS", "run"]

PARAMS = (
    Param("patch", 32, int, "square window side (px at the model's input)",
          control=(8, 12, 16, 24, 32, 48, 64), label="Patch (px)"),
    Param("stride", 16, int, "window step (px); a map point averages every window covering it",
          control=(4, 8, 12, 16, 24, 32, 48, 64), at_most="patch", label="Stride (px)"),
    Param("baseline", "black", object, "what fills the window", choices=BASELINES,
          control=("black", "zero", "white"), label="Baseline"),
    OUTPUT,
    Param("batch_size", None, object, "occluded copies per forward (default per device)", runtime=True),
    Param("precision", "fp32", str, "autocast precision (bf16/fp16 approximate; deviation reported)",
          choices=PRECISIONS),
    Param("engine", "auto", str, "batched forwards or the exact incremental DenseNet engine",
          choices=ENGINES, runtime=True),
    Param("progress", None, object, "callback(done, total)", runtime=True),
    Param("cancel", None, object, "callable returning True to stop", runtime=True),
    Param("known", None, object, "window scores computed before (corner → score), reused", runtime=True),
)


def _kwargs(x, spec, params: dict) -> dict:
    """The engines' arguments from a setting's call arguments (every parameter given: see
    :meth:`~cxrxai.explain.settings.Setting.kwargs`)."""
    from ._common import baseline_tensor

    baseline = params["baseline"]
    return dict(
        baseline=baseline_tensor(baseline, x, spec),
        patch=params["patch"],
        stride=params["stride"],
        output=params["output"],
        batch_size=params["batch_size"],
        precision=params["precision"],
        engine=params["engine"],
        progress=params["progress"],
        cancel=params["cancel"],
        baseline_name=baseline if isinstance(baseline, str) else "custom",
    )


def _store(model, x, targets, params):
    """The window-score grids of ``targets`` (rebuilt per pixel exactly by
    :func:`~cxrxai.explain.native_map`), all from the same occluded passes."""
    from .occlusion import occlusion_grids

    grids = occlusion_grids(model.module, x, targets, **_kwargs(x, model.spec, params))
    return [(grid.scores, "occlusion_grid") for grid in grids]


def _progressive(model, x, target, params, progress, cancel):
    from .occlusion import occlusion_progressive

    kw = _kwargs(x, model.spec, {**params, "progress": progress, "cancel": cancel})
    patch, stride, base = kw.pop("patch"), kw.pop("stride"), kw.pop("baseline")
    yield from occlusion_progressive(model.module, x, target, base, patch=patch, stride=stride,
                                     known=params.get("known"), **kw)


@explainer(
    "occlusion",
    "occlusion_grid",
    PARAMS,
    "Zeiler & Fergus, ECCV 2014, doi:10.1007/978-3-319-10590-1_53; Captum Occlusion",
    label="Occlusion",
    cost="costly",
    plan_per_label=1,
    named_by=("patch", "stride"),
    store=_store,
    per_image=True,
    progressive=_progressive,
)
def run(module, spec, images, targets, **params):
    import torch

    from .occlusion import occlusion_grid

    maps = []
    for i in range(images.shape[0]):
        img = images[i:i + 1]
        grid = occlusion_grid(module, img, int(targets[i]), **_kwargs(img, spec, params))
        maps.append(torch.from_numpy(grid.to_map()))
    return torch.stack(maps)
