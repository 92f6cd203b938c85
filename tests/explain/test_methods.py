"""Explainers against references: Captum, values derived by hand, known toy answers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torchvision
from captum.attr import LayerGradCam, Occlusion
from torch import nn

from cxrxai.errors import ExplainerError, UnknownNameError
from cxrxai.explain import Cancelled, explain, occlusion_grid, occlusion_progressive, postprocess, rebuild_map
from cxrxai.explain.xrai import xrai_map, xrai_segments


class Head(nn.Module):
    """features = identity (A is the input itself); the score is a fixed function of A."""

    def __init__(self, score):
        super().__init__()
        self.features = nn.Sequential(nn.Identity())
        self.score = score

    def forward(self, x):
        return self.score(self.features(x))[:, None]


A = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]], [[0.0, 1.0], [1.0, 0.0]]]])


def test_gradcam_and_gradcam_pp_linear_head_by_hand():
    # S = 4·mean(A0) − 8·mean(A1): g0 = 1, g1 = −2 everywhere.
    net = Head(lambda a: 4 * a[:, 0].mean((1, 2)) - 8 * a[:, 1].mean((1, 2)))
    cam = explain(net, A, 0, "gradcam", layer="features")
    assert np.allclose(cam, [[1, 0], [1, 4]])  # 1·A0 − 2·A1
    # ++: α0 = 1/(2 + ΣA0·g0) = 1/12, w0 = Σ α0·ReLU(g0) = 4/12; w1 = 0 (ReLU of a negative gradient).
    pp = explain(net, A, 0, "gradcam++", layer="features")
    assert np.allclose(pp, A[0, 0].numpy() / 3)


def test_gradcam_pp_quadratic_head_by_hand():
    # S = ½ ΣA²: g = A = [[1, 2], [3, 4]], ΣA = 10 → α = 1/(2 + 10A), w = Σ α·g.
    net = Head(lambda a: 0.5 * (a[:, :1] ** 2).sum((1, 2, 3)))
    a = A[:, :1]
    w = 1 / 12 + 2 / 22 + 3 / 32 + 4 / 42
    assert np.allclose(explain(net, a, 0, "gradcam++", layer="features"), w * a[0, 0].numpy(), rtol=1e-6)
    # TorchCAM's denominator 2g² + Σ(A·g³) would give w = Σ A³/(2A² + 354) ≈ 0.263 instead of 0.363.
    assert w == pytest.approx(0.36323, abs=1e-5)
    assert np.allclose(explain(net, a, 0, "gradcam", layer="features"), 2.5 * a[0, 0].numpy())


def test_gradcam_equals_captum_layer_gradcam(tiny_net, image):
    ours = explain(tiny_net, image, 1, "gradcam")
    ref = LayerGradCam(tiny_net.module, tiny_net.module.features.cam).attribute(image, target=1)[0, 0].detach().numpy()
    assert np.abs(ours - ref).max() <= 1e-6 * np.abs(ref).max()


def test_gradcam_sees_the_pre_relu_activation_despite_the_in_place_relu(tiny_net, image):
    """The head ReLUs the CAM layer in place; the map must use the activation before that."""
    net = tiny_net.module
    with torch.no_grad():
        act = net.features(image)
    assert (act < 0).any()  # otherwise this test would prove nothing
    cam = explain(tiny_net, image, 0, "gradcam")
    grads = torch.autograd.functional.jacobian(lambda a: net.classifier(torch.relu(a).mean((2, 3)))[0, 0], act)
    expected = (grads.mean((2, 3), keepdim=True) * act).sum(1)[0]
    assert np.allclose(cam, expected.numpy(), atol=1e-6)


@pytest.mark.parametrize("patch,stride,baseline", [
    (4, 2, "black"), (5, 3, "zero"), (7, 7, "white"), (16, 16, "black"), (3, 1, "random"), (6, 4, "black"),
])
def test_occlusion_equals_captum(tiny_net, image, patch, stride, baseline):
    if baseline == "random":
        baseline = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(9))
    ours = explain(tiny_net, image, 2, "occlusion", patch=patch, stride=stride, baseline=baseline, batch_size=7)
    from cxrxai.explain._common import baseline_tensor

    b = baseline_tensor(baseline, image, tiny_net.spec)
    ref = Occlusion(tiny_net.module).attribute(image, sliding_window_shapes=(3, patch, patch), strides=(1, stride, stride),
                                               baselines=b, target=2)[0]
    assert torch.allclose(ref[0], ref[1]) and torch.allclose(ref[0], ref[2])  # every channel gets the same value
    assert np.abs(ours - ref[0].numpy()).max() <= 1e-4 * ref.abs().max().item()


def test_occlusion_grid_rebuilds_the_pixel_map(tiny_net, image):
    from cxrxai.explain._common import baseline_tensor

    grid = occlusion_grid(tiny_net.module, image, 1, baseline_tensor("black", image, tiny_net.spec), patch=5, stride=3)
    assert grid.scores.shape == (5, 5)  # ceil((16 − 5) / 3) + 1
    # the per-pixel map equals Captum's Occlusion (the map of explain is checked against it above)
    assert np.allclose(grid.to_map(), explain(tiny_net, image, 1, "occlusion", patch=5, stride=3))


def test_rebuild_by_hand():
    # 1-D view: 4 px, patch 2, stride 1 → windows [0,1], [1,2], [2,3]; pixel 1 = mean(s0, s1).
    grid = np.array([[1.0, 3.0, 5.0]])
    m = rebuild_map(np.repeat(grid, 1, 0), 2, 1, 2, 4)
    assert m[0].tolist() == [1.0, 2.0, 4.0, 5.0]
    # 2-D: 4 × 4 px, patch 3, stride 1 → 2 × 2 windows; a pixel is the mean of the windows over it
    # (Captum divides the summed differences by the windows' count): corners see one window,
    # edge centres two, the middle four.
    m = rebuild_map(np.array([[1.0, 2.0], [3.0, 4.0]]), 3, 1, 4, 4)
    assert m.tolist() == [[1.0, 1.5, 1.5, 2.0], [2.0, 2.5, 2.5, 3.0], [2.0, 2.5, 2.5, 3.0], [3.0, 3.5, 3.5, 4.0]]


def test_occlusion_progressive_progress_and_cancel(tiny_net, image):
    from cxrxai.explain._common import baseline_tensor

    b = baseline_tensor("black", image, tiny_net.spec)
    stages = [(name, g.scores.shape) for name, g in occlusion_progressive(tiny_net.module, image, 0, b, patch=4, stride=2)]
    assert stages == [("coarse", (4, 4)), ("final", (7, 7))]
    seen = []
    occlusion_grid(tiny_net.module, image, 0, b, patch=4, stride=2, batch_size=10,
                   progress=lambda d, n: seen.append((d, n)))
    assert seen == [(10, 49), (20, 49), (30, 49), (40, 49), (49, 49)]
    calls = iter([False, False, True])
    with pytest.raises(Cancelled, match="20 of 49"):
        occlusion_grid(tiny_net.module, image, 0, b, patch=4, stride=2, batch_size=10, cancel=lambda: next(calls))


@pytest.mark.parametrize("kwargs,match", [(dict(patch=17), "does not fit"), (dict(stride=0), "positive integer"),
                                          (dict(patch=4, stride=5), "never occluded"), (dict(patch=8, stride=4, precision="fp8"), "fp32")])
def test_impossible_windows_are_refused(tiny_net, image, kwargs, match):
    with pytest.raises((ExplainerError, UnknownNameError), match=match):
        explain(tiny_net, image, 0, "occlusion", **kwargs)


def test_xrai_ranks_the_region_that_holds_the_attribution_first():
    img = np.full((32, 32), 0.2)
    img[8:16, 8:16] = 0.9
    attr = np.zeros((32, 32))
    attr[8:16, 8:16] = 1.0
    attr += np.random.default_rng(0).normal(0, 0.01, attr.shape)
    segs = xrai_segments(img, scales=(50,), min_size=10, dilation_radius=1)
    m = xrai_map(attr, segs)
    square = np.zeros_like(attr, bool)
    square[8:16, 8:16] = True
    top = m >= m.max() - 0.01
    assert top[square].mean() > 0.5 and not top[~square].any()  # the first region lies inside the square
    # the square's rim shares a dilated region with a 1-px ring outside it; nothing else ties with it
    assert m[square].min() >= m[~square].max() and m[square].min() > m[:4].max()


def test_postprocess_steps():
    m = np.array([[0.0, 1.0]], np.float32)
    assert postprocess.upsample(m, (1, 4)).round(3).tolist() == [[0.0, 0.25, 0.75, 1.0]]
    assert postprocess.minmax(np.full((2, 2), 3.0)).tolist() == [[0, 0], [0, 0]]
    assert postprocess.positive(np.array([[-1.0, 2.0]])).tolist() == [[0.0, 2.0]]
    clipped = postprocess.percentile_clip(np.arange(100, dtype=np.float32).reshape(10, 10), 99)
    assert clipped.max() == 1.0 and clipped[0, 0] == 0.0 and (clipped == 1.0).sum() == 1
    assert postprocess.ensemble([np.zeros((2, 2)), np.ones((2, 2))]).tolist() == [[0.5, 0.5], [0.5, 0.5]]
    with pytest.raises(ExplainerError):
        postprocess.ensemble([np.zeros((2, 2)), np.zeros((3, 3))])
    with pytest.raises(ExplainerError, match="NaN"):
        postprocess.minmax(np.array([[np.nan, 1.0]]))


@pytest.fixture(scope="module")
def densenet():
    """A randomly initialised DenseNet-121 with non-trivial BatchNorm statistics."""
    import torchvision

    torch.manual_seed(0)
    return _jitter_batchnorm(torchvision.models.densenet121(num_classes=3).eval(), seed=0, affine=True)


def _jitter_batchnorm(m: nn.Module, *, seed: int, affine: bool) -> nn.Module:
    """Non-trivial BatchNorm statistics (and scales), so a layer the engine mishandles shows."""
    gen = torch.Generator().manual_seed(seed)
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            with torch.no_grad():
                mod.running_mean.uniform_(-0.5, 0.5, generator=gen)
                mod.running_var.uniform_(0.5, 2.0, generator=gen)
                if affine:
                    mod.weight.uniform_(0.5, 1.5, generator=gen)
                    mod.bias.uniform_(-0.2, 0.2, generator=gen)
    return m


@pytest.mark.parametrize("size,patch,stride,output", [(64, 16, 8, "logit"), (72, 12, 5, "probability"),
                                                       (64, 64, 64, "logit")])
def test_incremental_densenet_occlusion_equals_captum(densenet, size, patch, stride, output):
    x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(3))
    b = torch.full((1, 3, 1, 1), -2.0)
    grid = occlusion_grid(densenet, x, 1, b, patch=patch, stride=stride, output=output, engine="incremental",
                          batch_size=6)
    f = densenet if output == "logit" else (lambda t: torch.sigmoid(densenet(t)))
    ref = Occlusion(f).attribute(x, sliding_window_shapes=(3, patch, patch), strides=(1, stride, stride),
                                 baselines=b, target=1)[0, 0].numpy()
    assert np.abs(grid.to_map() - ref).max() <= 1e-4 * np.abs(ref).max()


@pytest.mark.parametrize("arch", ["densenet121", "resnet18"])
def test_cams_closed_form_equals_autograd(densenet, arch):
    import torchvision

    from cxrxai.explain.cam import closed_form_layer, gradcam, gradcam_pp, linear_head_cams

    if arch == "resnet18":
        torch.manual_seed(0)
        net = _jitter_batchnorm(torchvision.models.resnet18(num_classes=3).eval(), seed=0, affine=True)
    else:
        net = densenet
    layer = net.get_submodule(closed_form_layer(net))
    x = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(4))
    for output in ("logit", "probability"):
        logits, gc, gpp = linear_head_cams(net, x, output=output)
        assert torch.allclose(logits, net(x), atol=1e-5)
        for label in range(3):
            t = torch.tensor([label, label])
            ref_gc = gradcam(net, layer, x, t, output=output)
            ref_pp = gradcam_pp(net, layer, x, t, output=output)
            assert torch.allclose(gc[:, label], ref_gc, atol=1e-6 * ref_gc.abs().max().item() + 1e-9)
            assert torch.allclose(gpp[:, label], ref_pp, atol=1e-5 * ref_pp.abs().max().item() + 1e-9)


def test_incremental_engine_refuses_what_it_cannot_do(tiny_net, image):
    from cxrxai.explain._common import baseline_tensor

    with pytest.raises(ExplainerError, match="DenseNet"):
        occlusion_grid(tiny_net.module, image, 0, baseline_tensor("black", image, tiny_net.spec), patch=4, stride=2,
                       engine="incremental")


@pytest.fixture(scope="module")
def small_densenet():
    """torchvision's DenseNet with DenseNet-121's layer layout (stem, four dense blocks, three
    transitions, norm5) but narrow and shallow, so 224–256 px occlusion against Captum is quick."""
    import torchvision

    torch.manual_seed(1)
    m = torchvision.models.DenseNet(growth_rate=8, block_config=(2, 2, 2, 2), num_init_features=16, bn_size=2,
                                    num_classes=3).eval()
    return _jitter_batchnorm(m, seed=1, affine=False)


@pytest.mark.parametrize("size,patch,stride", [(224, 32, 16), (256, 32, 16), (224, 32, 20), (256, 24, 20)])
def test_incremental_occlusion_at_full_size_with_windows_that_do_not_tile(small_densenet, size, patch, stride):
    """At 224–256 px a window's changed region is only part of dense block 2 and beyond, so the
    partial-window code of the transition and block 2 runs; 32/20 at 224 and 24/20 at 256 do not
    tile the image, so the last window is shifted back to the edge, as Captum places it
    (ceil((size − patch) / stride) + 1 windows a side)."""
    x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(5))
    b = torch.full((1, 3, 1, 1), -1.5)
    grid = occlusion_grid(small_densenet, x, 2, b, patch=patch, stride=stride, engine="incremental", batch_size=8)
    ref = Occlusion(small_densenet).attribute(x, sliding_window_shapes=(3, patch, patch), strides=(1, stride, stride),
                                              baselines=b, target=2)[0, 0].numpy()
    assert grid.scores.shape == (-(-(size - patch) // stride) + 1,) * 2
    # A window's score is a difference of two fp32 logits, exact only to the logit's rounding; this
    # narrow random net moves its logit by ~1e-3, so the tolerance adds 1e-6 × |logit| (a few ulps).
    with torch.inference_mode():
        logit = abs(small_densenet(x)[0, 2].item())
    assert np.abs(grid.to_map() - ref).max() <= 1e-4 * np.abs(ref).max() + 1e-6 * logit


@pytest.mark.parametrize("engine", ["incremental", "batched"])
def test_occlusion_of_several_targets_is_each_targets_own_map_from_one_set_of_passes(densenet, engine):
    """An image positive for several findings: every target's grid from the same occluded passes, each
    equal to Captum's map of that target alone, at the cost (forward passes) of one target."""
    from cxrxai.explain import occlusion_grids

    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(8))
    b = torch.full((1, 3, 1, 1), -2.0)
    calls = []
    hook = densenet.classifier.register_forward_hook(lambda m, i, o: calls.append(o.shape[0]))
    try:
        grids = occlusion_grids(densenet, x, [2, 0], b, patch=16, stride=8, engine=engine, batch_size=5)
        together = sum(calls)
        calls.clear()
        occlusion_grid(densenet, x, 2, b, patch=16, stride=8, engine=engine, batch_size=5)
        alone = sum(calls)
    finally:
        hook.remove()
    assert together == alone == 1 + 49  # the clean image, then 7 × 7 windows
    for grid, target in zip(grids, [2, 0]):
        ref = Occlusion(densenet).attribute(x, sliding_window_shapes=(3, 16, 16), strides=(1, 8, 8), baselines=b,
                                            target=target)[0, 0].numpy()
        assert np.abs(grid.to_map() - ref).max() <= 1e-4 * np.abs(ref).max()
    assert not np.allclose(grids[0].scores, grids[1].scores)  # two targets, two maps
    assert grids[0].seconds == grids[1].seconds  # each map took the whole computation


@pytest.mark.parametrize("baseline,grey", [("black", 0.0), ("white", 1.0)])
def test_occlusion_baselines_are_the_grey_level_through_the_models_normalisation(tiny_net, image, baseline, grey):
    """Black and white are grey levels 0 and 1 after ImageNet normalisation, by hand:
    (grey − mean) / std per channel — e.g. black = (−2.118, −2.036, −1.804)."""
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    b = torch.tensor([(grey - m) / s for m, s in zip(mean, std)]).view(1, 3, 1, 1)
    if baseline == "black":
        assert b.flatten().tolist() == pytest.approx([-2.1179, -2.0357, -1.8044], abs=1e-4)
    ours = explain(tiny_net, image, 1, "occlusion", patch=4, stride=2, baseline=baseline)
    ref = Occlusion(tiny_net.module).attribute(image, sliding_window_shapes=(3, 4, 4), strides=(1, 2, 2),
                                               baselines=b, target=1)[0, 0].numpy()
    assert np.abs(ours - ref).max() <= 1e-5 * np.abs(ref).max()


class _DoubledResNet(torchvision.models.ResNet):
    def forward(self, x):  # its own head: the closed form would be wrong
        return 2 * super().forward(x)


class _DenseNetWithTemperature(torchvision.models.DenseNet):
    def forward(self, x):
        return super().forward(x) / 3


def test_closed_form_is_refused_for_a_head_it_does_not_know():
    from torchvision.models.resnet import BasicBlock

    from cxrxai.explain.cam import closed_form_layer

    def resnet(cls=torchvision.models.ResNet):
        return cls(BasicBlock, [1, 1, 1, 1], num_classes=3)

    max_pooled = resnet()
    max_pooled.avgpool = torch.nn.AdaptiveMaxPool2d(1)
    dense = {"growth_rate": 4, "block_config": (1, 1), "num_init_features": 8, "num_classes": 3}
    assert closed_form_layer(resnet()) == "layer4"
    assert closed_form_layer(torchvision.models.DenseNet(**dense)) == "features.norm5"
    assert [closed_form_layer(m) for m in (resnet(_DoubledResNet), max_pooled,
                                           _DenseNetWithTemperature(**dense))] == [None, None, None]


def test_incremental_occlusion_is_not_chosen_for_a_densenet_with_its_own_head(image):
    """Incremental occlusion re-derives the head (norm5 → ReLU → mean → classifier); a subclass
    that divides by a temperature would get the stock head's scores, so ``auto`` must fall back."""
    from cxrxai.explain.cam import linear_head_cams
    from cxrxai.explain.occlusion import pick_engine

    config = {"growth_rate": 4, "block_config": (1, 1, 1, 1), "num_init_features": 8, "bn_size": 2, "num_classes": 3}
    cpu = torch.device("cpu")
    assert pick_engine(torchvision.models.DenseNet(**config), cpu, "fp32") == "incremental"
    own_head = _DenseNetWithTemperature(**config).eval()
    assert pick_engine(own_head, cpu, "fp32") == "batched"
    with pytest.raises(ExplainerError, match="own forward"):
        pick_engine(own_head, cpu, "fp32", "incremental")
    with pytest.raises(ExplainerError, match="own forward"):
        linear_head_cams(own_head, image)
