"""Trust (SSIM, randomization), fidelity (faithfulness, deletion/insertion) and geometry."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from cxrxai.errors import MetricError, UnknownNameError
from cxrxai.metrics import fidelity, geometry, trust
from cxrxai.models import randomize


def test_ssim_identical_is_one_and_data_range_matters():
    rng = np.random.default_rng(0)
    a, b = rng.random((16, 16)), rng.random((16, 16))
    assert trust.ssim(a, a) == pytest.approx(1.0)
    # Arun et al.'s implicit float range (2.0) gives a different value than the true [0, 1] range.
    assert trust.ssim(a, b, data_range=2.0) != pytest.approx(trust.ssim(a, b, data_range=1.0), abs=1e-3)
    with pytest.raises(MetricError, match="7×7"):
        trust.ssim(np.zeros((4, 4)), np.zeros((4, 4)))



@pytest.mark.parametrize("data_range", [1.0, 2.0])
def test_ssim_of_two_constant_maps_by_hand(data_range):
    """Constant maps c1, c2: no variance, so SSIM = (2 c1 c2 + C1) / (c1² + c2² + C1) with
    C1 = (0.01 L)² (Wang et al. 2004) — 0.2401 / 0.4001 for 0.2 and 0.6 at L = 1."""
    c1, c2, k = 0.2, 0.6, (0.01 * data_range) ** 2
    expected = (2 * c1 * c2 + k) / (c1**2 + c2**2 + k)
    assert trust.ssim(np.full((9, 9), c1), np.full((9, 9), c2), data_range=data_range) == pytest.approx(expected, rel=1e-12)


def test_arun_normalize_clips_at_the_99th_percentile():
    m = np.arange(100, dtype=float).reshape(10, 10)
    out = trust.arun_normalize(m)
    assert out.max() == 1.0 and out.min() == 0.0 and (out == 1.0).sum() == 1


def test_randomization_steps_are_cumulative_and_leave_the_model_alone():
    torch.manual_seed(0)
    net = nn.Sequential()
    net.add_module("a", nn.Linear(4, 4))
    net.add_module("b", nn.Linear(4, 2))
    before = {k: v.clone() for k, v in net.state_dict().items()}
    steps = []
    for name, model in randomize.randomization_steps(net, seed=1):
        steps.append((name, model.a.weight.clone(), model.b.weight.clone()))
    assert [s[0] for s in steps] == ["original", "b", "a"]  # top down
    assert torch.equal(steps[0][1], before["a.weight"]) and not torch.equal(steps[1][2], before["b.weight"])
    assert torch.equal(steps[1][1], before["a.weight"])  # after step "b", layer a is still trained
    assert all(torch.equal(v, before[k]) for k, v in net.state_dict().items())


def test_densenet_order_is_top_down():
    import torchvision

    order = randomize.randomization_order(torchvision.models.densenet121(num_classes=2))
    assert order[0] == ("classifier",) and order[-1] == ("features.conv0", "features.norm0")
    assert len(order) == 9


def test_degradation_threshold_uses_different_images():
    maps = [np.eye(8), np.eye(8)[::-1], np.ones((8, 8)) * 0.5]
    assert trust.degradation_threshold(maps, n_pairs=20) < 0.99
    with pytest.raises(MetricError):
        trust.degradation_threshold(maps[:1])


def test_pass_fail_table():
    rows = []
    for i in range(10):
        rows += [{"method": "good", "criterion": "utility", "value": 0.5 + 0.01 * i, "baseline": 0.1},
                 {"method": "good", "criterion": "repeatability", "value": 0.9, "baseline": np.nan},
                 {"method": "bad", "criterion": "utility", "value": 0.1, "baseline": 0.2 + 0.001 * i},
                 {"method": "bad", "criterion": "repeatability", "value": 0.3 + 0.01 * i, "baseline": np.nan}]
    rows[1]["value"] = 0.91  # a constant sample has no variance
    t = trust.pass_fail(pd.DataFrame(rows)).set_index("method")
    assert t.loc["good", "utility"] == "PASS" and t.loc["good", "repeatability"] == "PASS"
    assert t.loc["bad", "utility"] == "FAIL" and t.loc["bad", "repeatability"] == "FAIL"
    only = trust.pass_fail(pd.DataFrame(rows[:2] + [{"method": "cam", "criterion": "randomization", "value": 0.2,
                                                    "baseline": 0.5}]))
    assert only.set_index("method").randomization_n.isna().to_dict() == {"cam": False, "good": True}
    assert str(only.randomization_n.dtype) == "Int64" and only.utility_n.dropna().tolist() == [1]  # counts, not 1.0


class Lit(nn.Module):
    """Score = mean of the top-left quadrant of channel 0: only that region matters."""

    def forward(self, x):
        return x[:, 0, :4, :4].mean(dim=(1, 2))


def test_deletion_curve_falls_fastest_in_attribution_order():
    image = torch.ones(1, 1, 8, 8)
    black = torch.zeros(1, 1, 1, 1)
    attr = np.zeros((8, 8))
    attr[:4, :4] = 1.0
    x, ordered = fidelity.perturbation_curve(Lit(), image, attr, black, region=4)
    assert x.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0] and ordered.tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    _, inserted = fidelity.perturbation_curve(Lit(), image, attr, black, mode="insertion", region=4)
    assert inserted.tolist() == [0.0, 1.0, 1.0, 1.0, 1.0]
    assert fidelity.curve_area(x, ordered) == pytest.approx(0.125)
    _, reversed_ = fidelity.perturbation_curve(Lit(), image, -attr, black, region=4)
    assert fidelity.audc_diff(ordered, reversed_, x) == pytest.approx(0.875 - 0.125)


def test_random_order_is_seeded_and_a_permutation():
    a = fidelity.region_order(np.zeros((8, 8)), 4, order="random", seed=1)
    assert a == fidelity.region_order(np.zeros((8, 8)), 4, order="random", seed=1)
    assert sorted(a) == [(0, 0), (0, 4), (4, 0), (4, 4)]
    with pytest.raises(UnknownNameError):
        fidelity.region_order(np.zeros((8, 8)), 4, order="reverse")


def test_normalized_audc_diff_rescales_to_the_reference_range():
    assert fidelity.normalized_audc_diff(0.1, [0.9, 0.4], [0.9, 0.0]) == pytest.approx(0.18)
    assert np.isnan(fidelity.normalized_audc_diff(0.1, [0.5, 0.5], [0.9, 0.0]))


def test_faithfulness_correlation_is_high_when_attribution_matches_the_model():
    image = torch.rand(1, 1, 8, 8, generator=torch.Generator().manual_seed(0)) + 1
    attr = np.zeros((8, 8))
    attr[:4, :4] = image[0, 0, :4, :4].numpy() / 16  # exactly each pixel's contribution
    r = fidelity.faithfulness_correlation(Lit(), image, attr, torch.zeros(1, 1, 1, 1), iterations=50, subset=8)
    assert r == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(MetricError, match="subset"):
        fidelity.faithfulness_correlation(Lit(), image, attr, torch.zeros(1, 1, 1, 1), subset=64)


def test_faithfulness_of_several_maps_shares_one_set_of_forward_passes():
    image = torch.rand(1, 1, 8, 8, generator=torch.Generator().manual_seed(1)) + 1
    seen = []

    def score(x):  # nonlinear, so a wrong subset or drop would change r
        seen.append(len(x))
        return torch.tanh(x[:, 0, :4, :4].sum(dim=(1, 2)) / 8) + 0.1 * x[:, 0].amax(dim=(1, 2))

    rng = np.random.default_rng(0)
    lesion = np.zeros((8, 8))
    lesion[:4, :4] = image[0, 0, :4, :4].numpy()  # where the score looks
    maps = [lesion, rng.random((8, 8)), np.ones((8, 8))]
    subsets = np.random.default_rng(3)  # by hand, one subset at a time: Bhatt et al.'s definition
    drops, sums = [], [[] for _ in maps]
    for _ in range(30):
        idx = subsets.choice(64, 6, replace=False)
        x = image.clone().view(-1)
        x[torch.as_tensor(idx)] = 0.0
        drops.append(float(score(image) - score(x.view(1, 1, 8, 8))))
        for s, m in zip(sums, maps):
            s.append(m.reshape(-1)[idx].sum())
    by_hand = [np.corrcoef(s, drops)[0, 1] for s in sums[:2]]
    seen.clear()
    shared = fidelity.faithfulness_correlations(score, image, maps, torch.zeros(1), iterations=30, subset=6, seed=3)
    assert sum(seen) == 31  # the image once and 30 subsets, for three maps
    np.testing.assert_allclose(shared[:2], by_hand, rtol=0, atol=1e-6)
    assert np.isnan(shared[2]) and shared[0] > 0.5  # a constant map's sums never vary


def test_fidelity_refuses_mismatched_attribution():
    with pytest.raises(MetricError, match="match the image"):
        fidelity.perturbation_curve(Lit(), torch.ones(1, 1, 8, 8), np.zeros((4, 4)), torch.zeros(1, 1, 1, 1))


def test_geometry_degenerate_and_multi_instance_cases():
    empty = geometry.features(np.zeros((5, 5), bool))
    assert empty["instances"] == 0 and empty["size"] == 0 and np.isnan(empty["elongation"])
    line = np.zeros((5, 5), bool)
    line[2, :] = True  # a one-pixel line has a zero-area rectangle
    assert np.isnan(geometry.features(line)["elongation"])
    two = np.zeros((10, 10), bool)
    two[1:3, 1:3] = True
    two[5:9, 5:9] = True
    f = geometry.features(two)
    assert f["instances"] == 2 and f["size"] == 0.2 and f["elongation"] == 1.0
    assert geometry.features(two, instances=3)["instances"] == 3
    with pytest.raises(UnknownNameError):
        geometry.features(two, dominant="first")
