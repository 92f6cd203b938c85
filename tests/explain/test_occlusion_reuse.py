"""Occlusion computes only the windows it lacks, and paints a pass while it computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torchvision

from cxrxai.explain import occlusion_grid, occlusion_progressive
from cxrxai.explain.occlusion import PARTIAL, partial_map, window_starts


@pytest.fixture(scope="module")
def small_densenet():
    """DenseNet-121's layer layout, narrow and shallow (both engines run on it)."""
    torch.manual_seed(3)
    return torchvision.models.DenseNet(growth_rate=8, block_config=(2, 2, 2, 2), num_init_features=16,
                                       bn_size=2, num_classes=3).eval()


@pytest.fixture()
def x():
    return torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(4))


class Rows:
    """Counts the images the classifier scores: one per occluded window, one per clean pass."""

    def __init__(self, module):
        self.n = 0
        self._handle = module.classifier.register_forward_pre_hook(self._count)

    def _count(self, _module, inputs):
        self.n += inputs[0].shape[0]

    def take(self) -> int:
        n, self.n = self.n, 0
        return n


def _run(net, x, known, **kw):
    black = torch.zeros(1, 3, 1, 1)
    return list(occlusion_progressive(net, x, 1, black, known=known, **kw))


@pytest.mark.parametrize("engine", ["incremental", "batched"])
def test_a_finer_stride_computes_only_the_windows_it_lacks_and_equals_the_map_from_scratch(
        small_densenet, x, engine):
    rows, known = Rows(small_densenet), {}
    _run(small_densenet, x, known, patch=16, stride=16, engine=engine, batch_size=8)
    assert rows.take() == 16 + 1  # 4 × 4 windows and the clean pass
    seen = []
    stages = _run(small_densenet, x, known, patch=16, stride=8, engine=engine, batch_size=8,
                  progress=lambda done, total: seen.append((done, total)))
    # the coarse pass is all reused; the fine pass lacks 7 × 7 − 4 × 4 windows
    assert rows.take() == 49 - 16 + 1
    assert [name for name, _ in stages if name != PARTIAL] == ["coarse", "final"]
    assert seen[0] == (16, 16) and seen[1] == (16, 49) and seen[-1] == (49, 49)
    scratch = occlusion_grid(small_densenet, x, 1, torch.zeros(1, 3, 1, 1), patch=16, stride=8, engine=engine)
    final = stages[-1][1]
    # to float32 rounding: a window's recomputed region depends on its batch
    tol = 1e-6 * np.abs(scratch.scores).max()
    np.testing.assert_allclose(final.scores, scratch.scores, rtol=1e-5, atol=tol)
    np.testing.assert_allclose(final.to_map(), scratch.to_map(), rtol=1e-5, atol=tol)
    rows.take()  # the map from scratch
    _run(small_densenet, x, known, patch=16, stride=8, engine=engine)
    assert rows.take() == 0  # everything known: nothing runs again
    rows._handle.remove()


def test_the_fine_pass_paints_the_windows_known_so_far_before_the_final_map(small_densenet, x):
    stages = _run(small_densenet, x, {}, patch=16, stride=8, batch_size=4, paint_every_s=0, engine="batched")
    names = [name for name, _ in stages]
    # 4 batches of coarse windows, then 9 of the 33 fine ones: a partial map after each but the last
    assert names == [PARTIAL] * 3 + ["coarse"] + [PARTIAL] * 8 + ["final"]
    partials = [value for name, value in stages if name == PARTIAL]
    assert all(p.shape == (64, 64) and p.dtype == np.float32 for p in partials)
    assert not all(np.array_equal(a, b) for a, b in zip(partials, partials[1:]))
    # once every window is known, the partial rebuild is the grid's own map
    known = {o: s for o, s in zip(window_starts(64, 64, 16, 8), stages[-1][1].scores.ravel())}
    final = stages[-1][1].to_map()
    full = partial_map(known, [window_starts(64, 64, 16, 8)], 16, 64, 64)
    np.testing.assert_allclose(full, final, rtol=1e-5, atol=1e-6 * np.abs(final).max())


def test_a_partial_map_is_the_mean_of_the_known_windows_over_each_pixel_and_zero_elsewhere():
    # 4 × 4 px, patch 2, stride 1: windows at (0, 0) and (1, 1) known, overlapping at pixel (1, 1)
    m = partial_map({(0, 0): 2.0, (1, 1): 4.0, (2, 2): 100.0}, [[(0, 0), (1, 1)]], 2, 4, 4)
    assert m.tolist() == [[2, 2, 0, 0], [2, 3, 4, 0], [0, 4, 4, 0], [0, 0, 0, 0]]
