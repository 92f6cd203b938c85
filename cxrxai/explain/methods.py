"""The built-in explainers of the three papers, registered with their typed parameters.

Each entry adapts a method's function (:mod:`.cam`, :mod:`.gradients`, :mod:`.occlusion`,
:mod:`.xrai`) to the registry's ``run(module, spec, images, targets, **params)`` and declares
what the rest of the tool needs to know (see :class:`~cxrxai.explain.registry.Method`).
"""

from __future__ import annotations

import torch

from ..models.spec import OUTPUTS
from ._common import BASELINES, CHANNEL_REDUCTIONS, baseline_tensor, layer_of, reduce_channels
from .cam import closed_form_layer, gradcam, gradcam_pp, linear_head_cams
from .gradients import (
    NT_TYPES,
    gradientshap,
    guided_backprop,
    guided_gradcam,
    integrated_gradients,
    saliency,
    smoothgrad,
)
from .occlusion import ENGINES, PRECISIONS, occlusion_grid, occlusion_grids, occlusion_progressive
from .registry import Method, Param, register
from .xrai import xrai_map, xrai_segments

__all__: list[str] = []

INTEGRATIONS = ("gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid")

# --------------------------------------------------------------------------- shared parameters
OUTPUT = Param(
    "output", "logit", str, "explain the logit (the papers) or the sigmoid probability", choices=OUTPUTS
)
REDUCE = Param("reduce", "sum", str, "how colour channels are reduced to one map", choices=CHANNEL_REDUCTIONS)
BASELINE = Param(
    "baseline",
    "black",
    object,
    "reference image: grey level 0 (the papers'), white, zero or a tensor",
    choices=BASELINES,
)
LAYER = Param("layer", None, object, "CAM layer (dotted name or module); default the model card's cam_layer")
RELU = Param("relu", False, bool, "apply ReLU to the CAM (Grad-CAM's original definition)")
SEED = Param("seed", 0, int, "random seed of the sampled noise or baselines", range=(0, 2**31 - 1))
NOISE = (Param("noise_level", 0.15, float, "noise σ as a fraction of the input's range", range=(0.0, 10.0)),
         Param("nt_type", "smoothgrad", str, "noise tunnel aggregation", choices=NT_TYPES))


def _cam(fn):
    def run(module, spec, images, targets, *, layer=None, output="logit", relu=False):
        return fn(module, layer_of(module, layer, spec), images, targets, output=output, relu=relu)

    return run


_LAST_CLOSED_FORM: dict = {}  # Grad-CAM and Grad-CAM++ of one batch come from the same pass


def _closed_form(module, x: torch.Tensor):
    """:func:`linear_head_cams` of ``x``, computed once for the two CAMs (the batch is held, so its id cannot be reused)."""
    last = _LAST_CLOSED_FORM
    if last.get("module") is not module or last.get("x") is not x or last.get("version") != x._version:
        last.clear()
        last.update(module=module, x=x, version=x._version, value=linear_head_cams(module, x))
    return last["value"]


def _cam_all_labels(which: int):
    """Every label's CAM from one forward pass on a DenseNet or ResNet head (closed form), else ``None``."""

    def all_labels(model, x, params):
        layer = closed_form_layer(model.module)
        if layer is None or (params.get("layer") or model.spec.cam_layer) != layer \
                or params.get("relu") or params.get("output", "logit") != "logit":
            return None
        return _closed_form(model.module, x)[which]

    return all_labels


def _pixel(fn, *, needs_baseline=False):
    def run(module, spec, images, targets, *, reduce="sum", baseline="black", **kw):
        args = (baseline_tensor(baseline, images, spec),) if needs_baseline else ()
        return reduce_channels(fn(module, images, targets, *args, **kw), reduce)

    return run


def _guided_gradcam(module, spec, images, targets, *, layer=None, output="logit", reduce="sum"):
    resolved = layer_of(module, layer, spec)
    name = next(n for n, m in module.named_modules() if m is resolved)
    return reduce_channels(guided_gradcam(module, name, images, targets, output=output), reduce)


def _occlusion_kwargs(x, spec, params: dict) -> dict:
    baseline = params.get("baseline", "black")
    return dict(
        baseline=baseline_tensor(baseline, x, spec),
        patch=params.get("patch", 32),
        stride=params.get("stride", 16),
        output=params.get("output", "logit"),
        batch_size=params.get("batch_size"),
        precision=params.get("precision", "fp32"),
        engine=params.get("engine", "auto"),
        progress=params.get("progress"),
        cancel=params.get("cancel"),
        baseline_name=baseline if isinstance(baseline, str) else "custom",
    )


def _occlusion(module, spec, images, targets, **params):
    maps = []
    for i in range(images.shape[0]):
        img = images[i:i + 1]
        grid = occlusion_grid(module, img, int(targets[i]), **_occlusion_kwargs(img, spec, params))
        maps.append(torch.from_numpy(grid.to_map()))
    return torch.stack(maps)


def _occlusion_store(model, x, targets, params):
    """The window-score grids of ``targets`` (rebuilt per pixel exactly by :func:`~cxrxai.explain.native_map`),
    all from the same occluded passes."""
    grids = occlusion_grids(model.module, x, targets, **_occlusion_kwargs(x, model.spec, params))
    return [(grid.scores, "occlusion_grid") for grid in grids]


def _occlusion_progressive(model, x, target, params, progress, cancel):
    kw = _occlusion_kwargs(x, model.spec, {**params, "progress": progress, "cancel": cancel})
    patch, stride, base = kw.pop("patch"), kw.pop("stride"), kw.pop("baseline")
    yield from occlusion_progressive(model.module, x, target, base, patch=patch, stride=stride,
                                     known=params.get("known"), **kw)


def _xrai(module, spec, images, targets, *, steps=50, output="logit", internal_batch_size=16,
          scales=(50, 100, 150, 250, 500, 1200), sigma=0.8, min_size=None, dilation_radius=5):
    out = []
    for i in range(images.shape[0]):
        img, tgt = images[i:i + 1], targets[i:i + 1]
        attr = sum(
            integrated_gradients(module, img, tgt, baseline_tensor(b, img, spec), output=output, steps=steps,
                                 internal_batch_size=internal_batch_size).sum(1)[0]
            for b in ("black", "white")
        ) / 2
        grey = img[0].mean(0).cpu().numpy()
        grey = (grey - grey.min()) / max(float(grey.max() - grey.min()), 1e-12)
        segs = xrai_segments(
            grey, scales=scales, sigma=sigma, min_size=min_size, dilation_radius=dilation_radius
        )
        out.append(torch.from_numpy(xrai_map(attr.cpu().numpy(), segs)))
    return torch.stack(out)


def _batches(params: dict) -> int:
    """Forward passes of one integrated-gradients path: ``steps`` points, ``internal_batch_size`` at a time."""
    return -(-int(params["steps"]) // int(params.get("internal_batch_size") or params["steps"]))


STEPS = Param(
    "steps",
    50,
    int,
    "integration steps along the path",
    range=(1, 10_000),
    control=(8, 16, 25, 50, 100),
    label="Integration steps",
)
INTERNAL_BATCH = Param(
    "internal_batch_size", 16, int, "path points per forward", range=(1, 4096), runtime=True
)

register(Method("gradcam", "cam", (LAYER, OUTPUT, RELU), "Selvaraju et al., Grad-CAM, ICCV 2017, "
                "doi:10.1109/ICCV.2017.74", run=_cam(gradcam), label="Grad-CAM", layer=True,
                all_labels=_cam_all_labels(1)))
register(
    Method(
        "gradcam++",
        "cam",
        (LAYER, OUTPUT, RELU),
        "Chattopadhay et al., Grad-CAM++, WACV 2018 (eq. 19), doi:10.1109/WACV.2018.00097",
        run=_cam(gradcam_pp),
        label="Grad-CAM++",
        layer=True,
        all_labels=_cam_all_labels(2),
    )
)
register(Method("saliency", "pixel", (OUTPUT, REDUCE), "Simonyan et al., Deep Inside Convolutional Networks, "
                "ICLR workshop 2014, arXiv:1312.6034", run=_pixel(saliency), label="Saliency", cost="costly"))
register(
    Method(
        "smoothgrad",
        "pixel",
        (
            OUTPUT,
            REDUCE,
            Param(
                "nt_samples",
                25,
                int,
                "noisy copies averaged",
                range=(1, 10_000),
                control=(5, 10, 25, 50),
                label="Noisy samples",
            ),
            *NOISE,
            SEED,
        ),
        "Smilkov et al., SmoothGrad, 2017, arXiv:1706.03825",
        run=_pixel(smoothgrad),
        label="SmoothGrad",
        stochastic=True,
        cost="costly",
    )
)
register(
    Method(
        "ig",
        "pixel",
        (
            OUTPUT,
            REDUCE,
            BASELINE,
            STEPS,
            Param(
                "integration", "gausslegendre", str, "quadrature rule along the path", choices=INTEGRATIONS
            ),
            INTERNAL_BATCH,
            Param("nt_samples", 0, int, "noise-tunnel copies (0: plain IG)", range=(0, 10_000)),
            *NOISE,
            SEED,
        ),
        "Sundararajan et al., Axiomatic Attribution for Deep Networks, ICML 2017, arXiv:1703.01365",
        run=_pixel(integrated_gradients, needs_baseline=True),
        label="Integrated Gradients",
        cost="costly",
        plan_per_label=1,
        passes=lambda p: _batches(p) * max(1, p["nt_samples"]),
        unit="integration batches",
    )
)
register(
    Method(
        "gradientshap",
        "pixel",
        (
            OUTPUT,
            REDUCE,
            BASELINE,
            Param(
                "n_samples",
                5,
                int,
                "random baselines × points per map",
                range=(1, 10_000),
                control=(5, 10, 20, 50),
                label="Samples",
            ),
            Param("stdevs", 0.0, float, "noise added to each sample", range=(0.0, 10.0)),
            SEED,
        ),
        "Lundberg & Lee, SHAP, NeurIPS 2017, arXiv:1705.07874; Captum GradientShap",
        run=_pixel(gradientshap, needs_baseline=True),
        label="GradientSHAP",
        stochastic=True,
        cost="costly",
        plan_per_label=4,
    )
)
register(Method("guided_backprop", "pixel", (OUTPUT, REDUCE), "Springenberg et al., Striving for Simplicity, "
                "ICLR workshop 2015, arXiv:1412.6806", run=_pixel(guided_backprop), label="Guided backprop",
                cost="costly"))
register(
    Method(
        "guided_gradcam",
        "pixel",
        (LAYER, OUTPUT, REDUCE),
        "Selvaraju et al., Grad-CAM, ICCV 2017 (guided Grad-CAM), doi:10.1109/ICCV.2017.74",
        run=_guided_gradcam,
        label="Guided Grad-CAM",
        layer=True,
        cost="costly",
    )
)
register(
    Method(
        "occlusion",
        "occlusion_grid",
        (
            Param(
                "patch",
                32,
                int,
                "square window side (px at the model's input)",
                control=(8, 12, 16, 24, 32, 48, 64),
                label="Patch (px)",
            ),
            Param(
                "stride",
                16,
                int,
                "window step (px); a map point averages every window covering it",
                control=(4, 8, 12, 16, 24, 32, 48, 64),
                at_most="patch",
                label="Stride (px)",
            ),
            Param(
                "baseline",
                "black",
                object,
                "what fills the window",
                choices=BASELINES,
                control=("black", "zero", "white"),
                label="Baseline",
            ),
            OUTPUT,
            Param(
                "batch_size", None, object, "occluded copies per forward (default per device)", runtime=True
            ),
            Param(
                "precision",
                "fp32",
                str,
                "autocast precision (bf16/fp16 approximate; deviation reported)",
                choices=PRECISIONS,
            ),
            Param(
                "engine",
                "auto",
                str,
                "batched forwards or the exact incremental DenseNet engine",
                choices=ENGINES,
                runtime=True,
            ),
            Param("progress", None, object, "callback(done, total)", runtime=True),
            Param("cancel", None, object, "callable returning True to stop", runtime=True),
            Param("known", None, object, "window scores computed before (corner → score), reused",
                  runtime=True),
        ),
        "Zeiler & Fergus, ECCV 2014, doi:10.1007/978-3-319-10590-1_53; Captum Occlusion",
        run=_occlusion,
        label="Occlusion",
        cost="costly",
        batched=False,
        plan_per_label=1,
        store=_occlusion_store,
        per_image=True,
        progressive=_occlusion_progressive,
    )
)
register(
    Method(
        "xrai",
        "pixel",
        (
            STEPS,
            OUTPUT,
            INTERNAL_BATCH,
            Param("scales", (50, 100, 150, 250, 500, 1200), object, "Felzenszwalb scales"),
            Param("sigma", 0.8, float, "Felzenszwalb smoothing", range=(0.0, 100.0)),
            Param("min_size", None, object, "smallest segment (px)"),
            Param("dilation_radius", 5, int, "segment dilation (px)", range=(0, 100)),
        ),
        "Kapishnikov et al., XRAI, ICCV 2019, doi:10.1109/ICCV.2019.00505",
        run=_xrai,
        label="XRAI",
        cost="costly",
        batched=False,
        passes=lambda p: 2 * _batches(p),
        unit="integration batches (black and white baselines), then segments",
    )
)
