"""Values of the gradient explainers derived by hand, on models whose answer is known:

* a linear model f(x) = w·x + b: its gradient is w everywhere, so saliency, SmoothGrad (any noise),
  guided backprop = w; SmoothGrad-squared = w²; Integrated Gradients and GradientSHAP from a
  baseline x₀ = (x − x₀) ⊙ w exactly; for the probability, the gradient is p (1 − p) w;
* Integrated Gradients on a non-linear net: completeness, Σ attributions = f(x) − f(x₀), within
  the integration error;
* the channel reductions, ensembles, ``mean_image`` and ``average_mask`` by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from cxrxai.explain import average_mask, explain, explain_ensemble, mean_image
from cxrxai.models.registry import LoadedModel
from cxrxai.models.spec import IMAGENET_MEAN, IMAGENET_STD, ModelSpec

C, H, W, K = 3, 6, 6, 3


def _linear(seed: int = 0) -> LoadedModel:
    g = torch.Generator().manual_seed(seed)
    lin = nn.Linear(C * H * W, K)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(K, C * H * W, generator=g))
        lin.bias.copy_(torch.randn(K, generator=g))
    net = nn.Sequential(nn.Flatten(), lin).eval()
    spec = ModelSpec(name=f"linear{seed}", arch="linear", labels=("a", "b", "c"), input_size=H)
    return LoadedModel(net, spec, torch.device("cpu"))


def _w(model: LoadedModel, target: int) -> torch.Tensor:
    return model.module[1].weight[target].detach().view(C, H, W)


@pytest.fixture()
def x() -> torch.Tensor:
    return torch.randn(1, C, H, W, generator=torch.Generator().manual_seed(3))


def _black() -> torch.Tensor:
    """Grey level 0 through ImageNet normalisation, derived by hand: (0 − mean) / std per channel."""
    return torch.tensor([-m / s for m, s in zip(IMAGENET_MEAN, IMAGENET_STD)]).view(1, C, 1, 1)


@pytest.mark.parametrize("method", ["saliency", "smoothgrad", "guided_backprop"])
def test_gradient_methods_of_a_linear_model_are_its_weights(method, x):
    model = _linear()
    expected = _w(model, 1).sum(0).numpy()  # reduce="sum" over the three replicated channels
    np.testing.assert_allclose(explain(model, x, 1, method), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduce,fn", [("sum", lambda w: w.sum(0)), ("abs_sum", lambda w: w.abs().sum(0)),
                                       ("mean", lambda w: w.mean(0)),
                                       ("max_abs", lambda w: w.gather(0, w.abs().argmax(0, keepdim=True))[0])])
def test_channel_reductions(reduce, fn, x):
    model = _linear()
    np.testing.assert_allclose(explain(model, x, 2, "saliency", reduce=reduce), fn(_w(model, 2)).numpy(), rtol=1e-5)


def test_smoothgrad_squared_is_the_squared_weight(x):
    model = _linear()
    got = explain(model, x, 0, "smoothgrad", nt_type="smoothgrad_sq", nt_samples=4)
    np.testing.assert_allclose(got, (_w(model, 0) ** 2).sum(0).numpy(), rtol=1e-5)


@pytest.mark.parametrize("method,params", [("ig", {"steps": 8}), ("ig", {"steps": 3, "integration": "riemann_middle"}),
                                           ("gradientshap", {"n_samples": 3})])
def test_path_methods_of_a_linear_model_from_the_black_image(method, params, x):
    model = _linear()
    expected = ((x - _black())[0] * _w(model, 1)).sum(0).numpy()
    np.testing.assert_allclose(explain(model, x, 1, method, baseline="black", **params), expected, rtol=1e-4, atol=1e-5)


def test_captums_trapezoid_rule_weighs_the_path_by_one_minus_one_over_n(x):
    """Captum's ``riemann_trapezoid`` uses steps of 1/n with halved ends, which sum to 1 − 1/n (a
    true trapezoid rule sums to 1): IG with it is short of completeness by that factor even on a
    linear model. We pass Captum's behaviour through (the papers used its default, Gauss–Legendre,
    which is exact here); this pins the factor so a user choosing the option knows it."""
    model = _linear()
    expected = ((x - _black())[0] * _w(model, 1)).sum(0).numpy()
    got = explain(model, x, 1, "ig", baseline="black", steps=3, integration="riemann_trapezoid")
    np.testing.assert_allclose(got, (1 - 1 / 3) * expected, rtol=1e-4, atol=1e-5)


def test_explaining_the_probability_scales_the_gradient_by_p_one_minus_p(x):
    model = _linear()
    with torch.no_grad():
        p = torch.sigmoid(model.module(x))[0, 1].item()
    got = explain(model, x, 1, "saliency", output="probability")
    np.testing.assert_allclose(got, p * (1 - p) * _w(model, 1).sum(0).numpy(), rtol=1e-4, atol=1e-7)


def test_integrated_gradients_completeness_on_a_nonlinear_net(x):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(C, 4, 3, padding=1), nn.Softplus(), nn.Conv2d(4, 4, 3, padding=1), nn.Tanh(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, K)).eval()
    model = LoadedModel(net, ModelSpec(name="n", arch="n", labels=("a", "b", "c"), input_size=H), torch.device("cpu"))
    with torch.no_grad():
        gap = (net(x) - net(_black().expand_as(x)))[0, 2].item()
    attr = explain(model, x, 2, "ig", baseline="black", steps=64)
    assert abs(gap) > 1e-3
    assert attr.sum() == pytest.approx(gap, rel=1e-3)


def test_an_ensemble_averages_its_members_maps(x):
    a, b = _linear(0), _linear(1)
    got = explain_ensemble([a, b], x, 0, "saliency")
    np.testing.assert_allclose(got, ((_w(a, 0) + _w(b, 0)) / 2).sum(0).numpy(), rtol=1e-5, atol=1e-6)


def test_mean_image_and_average_mask_by_hand():
    model = _linear()
    films = np.stack([np.zeros((H, W), np.uint8), np.full((H, W), 255, np.uint8)])
    grey_half = torch.tensor([(0.5 - m) / s for m, s in zip(IMAGENET_MEAN, IMAGENET_STD)]).view(1, C, 1, 1)
    torch.testing.assert_close(mean_image(films, model), grey_half.expand(1, C, H, W), rtol=1e-5, atol=1e-6)
    masks = [np.array([[1, 0], [0, 0]]), np.array([[1, 1], [0, 0]])]
    assert average_mask(masks).tolist() == [[1.0, 0.5], [0.0, 0.0]]


def test_guided_gradcam_of_a_conv_then_linear_model_by_hand(x):
    """A 1×1 convolution averaging the channels (the CAM layer, A = mean_c x), then a linear
    head w: Grad-CAM = ReLU(mean(w) · A); guided backprop (no ReLU to guide) = w / 3 per channel;
    guided Grad-CAM = their product, summed over the channels = w ⊙ ReLU(mean(w) · A)."""
    torch.manual_seed(0)
    conv = nn.Conv2d(C, 1, 1, bias=False)
    lin = nn.Linear(H * W, K)
    with torch.no_grad():
        conv.weight.fill_(1 / C)
    net = nn.Sequential()
    net.add_module("features", conv)
    net.add_module("flat", nn.Flatten())
    net.add_module("head", lin)
    model = LoadedModel(net.eval(), ModelSpec(name="g", arch="g", labels=("a", "b", "c"), input_size=H,
                                              cam_layer="features"), torch.device("cpu"))
    w = lin.weight[1].detach().view(H, W)
    cam = torch.relu(w.mean() * x[0].mean(0))
    np.testing.assert_allclose(explain(model, x, 1, "gradcam", relu=True), cam.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(explain(model, x, 1, "guided_gradcam"), (w * cam).numpy(), rtol=1e-4, atol=1e-6)
