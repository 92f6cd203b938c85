"""Promises every explainer keeps (parametrised over the whole registry)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cxrxai.errors import ExplainerError, UnknownNameError
from cxrxai.explain import METHODS, explain, explain_batch

FAST = {"ig": dict(steps=8), "xrai": dict(steps=4, scales=(20, 60), min_size=4, dilation_radius=1),
        "smoothgrad": dict(nt_samples=4), "occlusion": dict(patch=4, stride=2)}


def _hooks(module: torch.nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks) for m in module.modules())


@pytest.mark.parametrize("method", list(METHODS))
def test_shape_dtype_finite(method, tiny_net, image):
    m = explain(tiny_net, image, 1, method, **FAST.get(method, {}))
    expected = (8, 8) if METHODS[method].kind == "cam" else (16, 16)
    assert m.shape == expected and m.dtype == np.float32 and np.isfinite(m).all()


@pytest.mark.parametrize("method", list(METHODS))
def test_input_untouched_and_hooks_released(method, tiny_net, image):
    before = image.clone()
    explain(tiny_net, image, 2, method, **FAST.get(method, {}))
    assert torch.equal(image, before) and not image.requires_grad
    assert _hooks(tiny_net.module) == 0


@pytest.mark.parametrize("method", list(METHODS))
def test_deterministic_under_a_seed(method, tiny_net, image):
    a = explain(tiny_net, image, 0, method, **FAST.get(method, {}))
    b = explain(tiny_net, image, 0, method, **FAST.get(method, {}))
    assert np.array_equal(a, b)


@pytest.mark.parametrize("method", list(METHODS))
def test_batched_equals_unbatched(method, tiny_net, image):
    other = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(5))
    both = explain_batch(tiny_net, torch.cat([image, other]), [1, 2], method, **FAST.get(method, {}))
    one = explain(tiny_net, image, 1, method, **FAST.get(method, {}))
    two = explain(tiny_net, other, 2, method, **FAST.get(method, {}))
    if METHODS[method].stochastic:  # the noise draw depends on the batch: check shapes only
        assert both.shape == (2, *one.shape)
        return
    scale = max(np.abs(one).max(), np.abs(two).max(), 1e-6)
    assert np.abs(both[0] - one).max() <= 1e-5 * scale and np.abs(both[1] - two).max() <= 1e-5 * scale


@pytest.mark.parametrize("method", ["gradientshap", "smoothgrad"])
def test_global_rng_state_is_left_alone(method, tiny_net, image):
    torch.manual_seed(123)
    np.random.seed(123)
    expected = (torch.rand(1), np.random.rand())
    torch.manual_seed(123)
    np.random.seed(123)
    explain(tiny_net, image, 0, method, **FAST.get(method, {}))
    assert torch.equal(torch.rand(1), expected[0]) and np.random.rand() == expected[1]


def test_unknown_method_lists_them(tiny_net, image):
    with pytest.raises(UnknownNameError, match="gradcam"):
        explain(tiny_net, image, 0, "lime")


@pytest.mark.parametrize("target", [-1, 3, 1.5, True])
def test_target_out_of_range_lists_the_labels(tiny_net, image, target):
    with pytest.raises(ExplainerError, match="0=a, 1=b, 2=c"):
        explain(tiny_net, image, target, "gradcam")


def test_unknown_parameter_lists_the_allowed_ones(tiny_net, image):
    with pytest.raises(ExplainerError, match="steps"):
        explain(tiny_net, image, 0, "ig", n_steps=10)


def test_inference_mode_is_refused(tiny_net, image):
    with torch.inference_mode(), pytest.raises(ExplainerError, match="inference_mode"):
        explain(tiny_net, image, 0, "saliency")


@pytest.mark.parametrize("bad", [torch.zeros(3, 16, 16), torch.zeros(1, 3, 16, 16, dtype=torch.int64),
                                 torch.full((1, 3, 16, 16), float("nan"))])
def test_bad_images_are_refused(tiny_net, bad):
    with pytest.raises(ExplainerError):
        explain(tiny_net, bad, 0, "gradcam")
