"""Tiny deterministic networks for explainer tests (milliseconds per map)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from cxrxai.models.registry import LoadedModel
from cxrxai.models.spec import ModelSpec


class TinyNet(nn.Module):
    """conv → ReLU → conv (the CAM layer, 'features.cam') → in-place ReLU → GAP → linear (3 outputs).

    Like DenseNet, the classifier applies an in-place ReLU to the CAM layer's output.
    """

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential()
        self.features.add_module("conv", nn.Conv2d(3, 6, 3, padding=1))
        self.features.add_module("relu", nn.ReLU(inplace=True))
        self.features.add_module("cam", nn.Conv2d(6, 5, 3, stride=2, padding=1))
        self.classifier = nn.Linear(5, 3)

    def forward(self, x):
        f = torch.relu_(self.features(x))
        return self.classifier(f.mean(dim=(2, 3)))


@pytest.fixture()
def tiny_net() -> LoadedModel:
    torch.manual_seed(0)
    net = TinyNet().eval()
    spec = ModelSpec(name="tiny", arch="densenet121", labels=("a", "b", "c"), input_size=16, cam_layer="features.cam")
    return LoadedModel(net, spec, torch.device("cpu"))


@pytest.fixture()
def image() -> torch.Tensor:
    return torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1))
