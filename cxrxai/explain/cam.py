"""Class activation maps from a layer's activations A and the score's gradients g = ∂S/∂A.

* Grad-CAM (Selvaraju et al., ICCV 2017): weights α_k = mean_ij g_kij, map Σ_k α_k A_k.
  Equal to Captum's ``LayerGradCam`` with ``relu_attributions=False``.
* Grad-CAM++ (Chattopadhay et al., WACV 2018, eq. 19) with the exponential-score closed form
  used by pytorch-grad-cam: α_kij = g² / (2 g² + (Σ_ab A_kab) g³) (0 where g = 0),
  weights w_k = Σ_ij α_kij ReLU(g_kij), map Σ_k w_k A_k. The constant factor exp(S) of
  eq. 19 is dropped (it rescales the whole map). TorchCAM writes the denominator as
  2 g² + Σ_ab A_kab g_kab³, which differs when g varies over the map.

Both return the *raw, signed* map at the layer's resolution; ReLU is a separate step
(:func:`cxrxai.postprocess.positive`) unless ``relu=True``.

DenseNet's ``forward`` applies ``F.relu(..., inplace=True)`` to the ``features.norm5`` output.
The forward hook here keeps the pre-ReLU activation and hands the rest of the network a clone,
so the map is the same on CPU and GPU (a hook that kept the tensor itself would see it ReLU'd
in place on CPU only).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torchvision

from ..errors import ExplainerError
from ._common import layer_of, runs_stock_code, score_fn

__all__ = [
    "activations_and_gradients",
    "cam_all_labels",
    "cam_run",
    "closed_form_layer",
    "gradcam",
    "gradcam_all_labels",
    "gradcam_pp",
    "gradcam_pp_all_labels",
    "gradcam_pp_run",
    "gradcam_run",
    "linear_head_cams",
]


@contextmanager
def _capture(layer: torch.nn.Module) -> Iterator[dict]:
    saved: dict = {}

    def hook(_module, _inputs, output):
        if not isinstance(output, torch.Tensor):
            raise ExplainerError(
                f"CAM layer {type(_module).__name__} returns {type(output).__name__}, not a tensor"
            )
        saved["act"] = output
        return output.clone()

    handle = layer.register_forward_hook(hook)
    try:
        yield saved
    finally:
        handle.remove()


def activations_and_gradients(
    module: torch.nn.Module,
    layer: torch.nn.Module,
    images: torch.Tensor,
    targets: torch.Tensor,
    output: str = "logit",
) -> tuple[torch.Tensor, torch.Tensor]:
    """(A, ∂S/∂A) at ``layer`` for each image's own target score; input never modified."""
    if torch.is_inference_mode_enabled():
        raise ExplainerError("gradient explainers cannot run inside torch.inference_mode()")
    f = score_fn(module, output)
    x = images.detach().clone().requires_grad_(True)
    with torch.enable_grad(), _capture(layer) as saved:
        scores = f(x).gather(1, targets.view(-1, 1).to(x.device)).sum()
        if "act" not in saved:
            raise ExplainerError("the CAM layer was not reached by the forward pass")
        act = saved["act"]
        (grads,) = torch.autograd.grad(scores, act)
    return act.detach(), grads.detach()


def closed_form_layer(module: torch.nn.Module) -> str | None:
    """The CAM layer behind which a torchvision model's head is a global mean and a linear layer, so
    its CAMs have a closed form: ``features.norm5`` of a DenseNet, ``layer4`` of a ResNet; else None.
    A subclass that runs its own ``forward`` (or a ResNet whose pooling is not a global mean) gets
    None: its score may not be that head, so its CAMs go through autograd."""
    models, linear = torchvision.models, torch.nn.Linear
    if isinstance(module, models.DenseNet) and isinstance(module.classifier, linear) \
            and runs_stock_code(module, models.DenseNet, "forward"):
        return "features.norm5"
    pool = getattr(module, "avgpool", None)
    if isinstance(module, models.ResNet) and isinstance(module.fc, linear) \
            and runs_stock_code(module, models.ResNet, "forward", "_forward_impl") \
            and isinstance(pool, torch.nn.AdaptiveAvgPool2d) and pool.output_size in (1, (1, 1)):
        return "layer4"
    return None


def _head(module: torch.nn.Module, images: torch.Tensor):
    """(A at the CAM layer, the mean's input, where ∂ReLU ≠ 0, the linear layer) of a closed-form head."""
    if closed_form_layer(module) == "features.norm5":
        act = module.features(images).float()  # pre-ReLU norm5 output
        return act, torch.relu(act), (act > 0).float(), module.classifier
    m = module  # ResNet: layer4's output has passed its last ReLU; only the mean and fc follow
    act = m.layer4(m.layer3(m.layer2(m.layer1(m.maxpool(m.relu(m.bn1(m.conv1(images)))))))).float()
    return act, act, torch.ones_like(act), m.fc


def linear_head_cams(module: torch.nn.Module, images: torch.Tensor, *, output: str = "logit"
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Grad-CAM and Grad-CAM++ at :func:`closed_form_layer` for *every* label from one forward pass.

    A DenseNet's score is ``S_c = Σ_k W_ck · mean_ij ReLU(A_kij) + b_c``, so ``∂S_c/∂A_kij = W_ck /
    (h w) · 1[A_kij > 0]`` in closed form — no backward pass; a ResNet's is ``Σ_k W_ck · mean_ij A_kij
    + b_c`` (layer4 ends in its ReLU), so the indicator is 1. With ``output="probability"`` the
    gradient is multiplied by ``p (1 − p)``. Returns ``(logits (N, L), gradcam (N, L, h, w),
    gradcam++ (N, L, h, w))``, equal to :func:`gradcam` / :func:`gradcam_pp` up to floating-point
    summation order (tested for both architectures).
    """
    if closed_form_layer(module) is None:
        raise ExplainerError(
            "the closed form needs a torchvision DenseNet or ResNet that runs torchvision's own forward "
            "(no subclass head), with a linear classifier and, for a ResNet, global mean pooling; "
            "use gradcam()/gradcam_pp() with a layer for any other model"
        )
    with torch.inference_mode():
        act, pooled, positive, linear = _head(module, images)
        logits = linear(pooled.mean(dim=(2, 3)))
        n, k, h, w = act.shape
        weight = linear.weight.float() / (h * w)  # (L, K)
        g = weight[None].expand(n, -1, -1)  # (N, L, K) gradient where A > 0
        if output == "probability":
            p = torch.sigmoid(logits)
            g = g * (p * (1 - p))[..., None]
        frac = positive.mean(dim=(2, 3))  # (N, K)
        gradcam_map = torch.einsum("nlk,nk,nkij->nlij", g, frac, act)
        n_pos = positive.sum(dim=(2, 3))[:, None, :]  # (N, 1, K)
        total = act.sum(dim=(2, 3))[:, None, :]
        denom = 2 + total * g
        w_pp = torch.where(
            (g > 0) & (denom != 0),
            n_pos * g / torch.where(denom != 0, denom, torch.ones_like(denom)),
            torch.zeros_like(g),
        )
        gradcampp_map = torch.einsum("nlk,nkij->nlij", w_pp, act)
    return logits, gradcam_map, gradcampp_map


def gradcam(module, layer, images, targets, *, output: str = "logit", relu: bool = False) -> torch.Tensor:
    """(N, h, w) Grad-CAM maps at the layer's resolution."""
    act, grads = activations_and_gradients(module, layer, images, targets, output)
    cam = (grads.mean(dim=(2, 3), keepdim=True) * act).sum(1)
    return cam.clamp_min(0) if relu else cam


def gradcam_pp(module, layer, images, targets, *, output: str = "logit", relu: bool = False) -> torch.Tensor:
    """(N, h, w) Grad-CAM++ maps (eq. 19, see the module docstring)."""
    act, g = activations_and_gradients(module, layer, images, targets, output)
    g2, g3 = g.pow(2), g.pow(3)
    denom = 2 * g2 + act.sum(dim=(2, 3), keepdim=True) * g3
    alpha = torch.where((g != 0) & (denom != 0), g2 / torch.where(denom != 0, denom, torch.ones_like(denom)),
                        torch.zeros_like(g))
    weights = (alpha * g.clamp_min(0)).sum(dim=(2, 3), keepdim=True)
    cam = (weights * act).sum(1)
    return cam.clamp_min(0) if relu else cam


def cam_run(fn):
    """A CAM function (:func:`gradcam`, :func:`gradcam_pp`) as a registry ``run``: the layer resolved
    from the parameter or the model card, the explained output and ReLU passed on."""

    def run(module, spec, images, targets, *, layer=None, output="logit", relu=False):
        return fn(module, layer_of(module, layer, spec), images, targets, output=output, relu=relu)

    return run


def cam_all_labels(which: int):
    """Every label's CAM (``which``: 1 Grad-CAM, 2 Grad-CAM++) from one forward pass on a DenseNet or
    ResNet head (:func:`linear_head_cams`), else ``None``. ``memo`` is the caller's dict for one
    batch: the CAMs of that batch share one pass."""

    def all_labels(model, x, params, memo: dict):
        layer = closed_form_layer(model.module)
        if layer is None or (params.get("layer") or model.spec.cam_layer) != layer \
                or params.get("relu") or params.get("output", "logit") != "logit":
            return None
        if "linear_head_cams" not in memo:
            memo["linear_head_cams"] = linear_head_cams(model.module, x)
        return memo["linear_head_cams"][which]

    return all_labels


#: The computations :mod:`.gradcam` and :mod:`.gradcampp` register (by name: :func:`~.registry.deferred`).
gradcam_run, gradcam_all_labels = cam_run(gradcam), cam_all_labels(1)
gradcam_pp_run, gradcam_pp_all_labels = cam_run(gradcam_pp), cam_all_labels(2)
