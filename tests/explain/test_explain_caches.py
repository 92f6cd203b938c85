"""What a map costs beyond its explainer: the output count is learnt once per model, and a private
randomization step is hooked as it is (never copied again), with the same maps either way."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

from cxrxai.explain import explain
from cxrxai.explain._common import _N_OUTPUTS, hook_ready, no_inplace_copy
from cxrxai.models.registry import LoadedModel


def _forwards(module: torch.nn.Module) -> list[int]:
    calls: list[int] = []
    module.register_forward_hook(lambda m, i, o: calls.append(i[0].shape[0]))
    return calls


def test_the_output_count_costs_one_forward_pass_per_model_not_one_per_map(tiny_net, image):
    calls = _forwards(tiny_net.module)
    first = explain(tiny_net, image, 1, "saliency")
    after_first = len(calls)
    again = explain(tiny_net, image, 1, "saliency")
    assert after_first - 1 == len(calls) - after_first  # the first map paid one more pass, to count outputs
    np.testing.assert_array_equal(first, again)
    with pytest.raises(Exception, match=r"allowed: 0\.\.2"):  # the remembered count still checks targets
        explain(tiny_net, image, 3, "saliency")


def test_the_output_count_is_forgotten_with_its_model(image):
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                              torch.nn.Flatten(), torch.nn.Linear(4, 2)).eval()
    before = len(_N_OUTPUTS)
    explain(net, image, 0, "saliency")
    assert len(_N_OUTPUTS) == before + 1
    del net
    gc.collect()
    assert len(_N_OUTPUTS) == before


def test_a_hook_ready_step_gives_the_copys_guided_backprop_without_a_copy(tiny_net, image):
    expected = explain(tiny_net, image, 2, "guided_backprop")  # through no_inplace_copy's copy
    own = LoadedModel(hook_ready(type(tiny_net.module)()), tiny_net.spec, tiny_net.device)
    own.module.load_state_dict(tiny_net.module.state_dict())
    own.module.eval()
    assert no_inplace_copy(own.module) is own.module
    assert not any(getattr(m, "inplace", False) for m in own.module.modules())
    np.testing.assert_array_equal(explain(own, image, 2, "guided_backprop"), expected)
    assert no_inplace_copy(tiny_net.module) is not tiny_net.module  # a shared model is still copied
