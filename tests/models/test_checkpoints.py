"""Checkpoints saved the way other groups save them load into the same model: for each layout a
file is written on disk as that group's code writes it, loaded with ``load_checkpoint``, and its
logits compared with the source model's on a fixed input."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torchvision
from torch import nn

from cxrxai.errors import ModelError
from cxrxai.models.external import GREY_MEAN, load_checkpoint
from cxrxai.models.spec import preprocess

LABELS = [f"finding {k}" for k in range(14)]
X = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(1))


def _logits(model, x=X) -> torch.Tensor:
    with torch.inference_mode():
        return model.module(x.contiguous(memory_format=torch.channels_last).to(model.device)).cpu()


def _source(n: int = 14, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    net = torchvision.models.densenet121(num_classes=n).eval()
    for m in net.modules():  # non-trivial running statistics, so a batch-norm key lost would show
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.9, 1.1)
    return net


class CheXNet(nn.Module):
    """The CheXNet model class (arnoweng/CheXNet): torchvision's DenseNet-121 with a Linear +
    Sigmoid head, trained under nn.DataParallel."""

    def __init__(self, n: int):
        super().__init__()
        self.densenet121 = _source(n)
        self.densenet121.classifier = nn.Sequential(nn.Linear(1024, n), nn.Sigmoid())

    def forward(self, x):
        return self.densenet121(x)


def _old_names(state: dict) -> dict:
    """Keys as torchvision < 0.3 wrote them: norm1 → norm.1, conv2 → conv.2, …"""
    out = {}
    for k, v in state.items():
        out[re.sub(r"(denselayer\d+\.(?:norm|relu|conv))([12])\.", r"\1.\2.", k)] = v
    return out


def test_plain_torchvision_state_dict(tmp_path):
    src = _source()
    torch.save(src.state_dict(), tmp_path / "plain.pt")
    m = load_checkpoint(tmp_path / "plain.pt", arch="densenet121", labels=LABELS, device="cpu")
    torch.testing.assert_close(_logits(m), src(X).detach(), atol=1e-5, rtol=1e-5)
    assert m.spec.card["checkpoint_layout"] == ["torchvision"]


def test_chexnet_dataparallel_old_names_and_sigmoid_head(tmp_path):
    src = CheXNet(14).eval()
    state = _old_names(nn.DataParallel(src).state_dict())
    assert "module.densenet121.features.denseblock1.denselayer1.norm.1.weight" in state
    assert "module.densenet121.classifier.0.weight" in state
    torch.save({"epoch": 9, "state_dict": state, "best_loss": 0.1}, tmp_path / "m-25012018-123527.pth.tar")
    m = load_checkpoint(tmp_path / "m-25012018-123527.pth.tar", arch="densenet121", labels=LABELS, device="cpu")
    probs = src(X).detach()
    # our model outputs the logit before CheXNet's sigmoid: sigmoid(ours) is CheXNet's output
    torch.testing.assert_close(torch.sigmoid(_logits(m)), probs, atol=1e-5, rtol=1e-4)
    layout = " | ".join(m.spec.card["checkpoint_layout"])
    for word in ("dataparallel", "wrapped: stripped 'densenet121.'", "old-densenet", "sequential-head"):
        assert word in layout, layout
    assert m.spec.explained_output == "logit"


def test_lightning_nesting(tmp_path):
    src = _source()
    state = {f"model.{k}": v for k, v in src.state_dict().items()}
    state["criterion.pos_weight"] = torch.ones(14)  # a loss buffer Lightning saves beside the model
    torch.save({"epoch": 3, "global_step": 300, "pytorch-lightning_version": "2.4.0", "state_dict": state},
               tmp_path / "epoch=3.ckpt")
    m = load_checkpoint(tmp_path / "epoch=3.ckpt", arch="densenet121", labels=LABELS, device="cpu")
    torch.testing.assert_close(_logits(m), src(X).detach(), atol=1e-5, rtol=1e-5)
    assert "wrapped: stripped 'model.', ignored 1 other keys" in m.spec.card["checkpoint_layout"][0]


def test_one_channel_resnet(tmp_path):
    torch.manual_seed(0)
    src = torchvision.models.resnet18(num_classes=3).eval()
    src.conv1 = nn.Conv2d(1, 64, 7, 2, 3, bias=False)
    torch.save(src.state_dict(), tmp_path / "grey.pt")
    m = load_checkpoint(tmp_path / "grey.pt", arch="resnet18", labels=["a", "b", "c"], device="cpu", input_size=64)
    assert m.spec.mean == GREY_MEAN and len(m.spec.std) == 1
    films = np.random.default_rng(0).integers(0, 256, (2, 80, 70), dtype=np.uint8)
    x = preprocess(films, m.spec)
    assert tuple(x.shape) == (2, 1, 64, 64)
    torch.testing.assert_close(_logits(m, x), src(x).detach(), atol=1e-5, rtol=1e-5)


def test_whole_model_ending_in_a_sigmoid(tmp_path):
    src = CheXNet(14).eval()
    torch.save(src, tmp_path / "whole.pt")
    with pytest.raises(ModelError, match="trust_pickle=True"):
        load_checkpoint(tmp_path / "whole.pt", arch="densenet121", labels=LABELS, device="cpu")
    m = load_checkpoint(tmp_path / "whole.pt", arch="densenet121", labels=LABELS, device="cpu", trust_pickle=True)
    torch.testing.assert_close(torch.sigmoid(_logits(m)), src(X).detach(), atol=1e-5, rtol=1e-4)
    assert m.spec.cam_layer == "densenet121.features.norm5"  # found inside the wrapper
    assert any("removed the Sigmoid" in n for n in m.spec.card["checkpoint_layout"])


def test_a_checkpoint_that_does_not_fit_names_the_keys(tmp_path):
    state = _source().state_dict()
    state["features.extra.weight"] = state.pop("features.norm5.weight")
    torch.save(state, tmp_path / "odd.pt")
    with pytest.raises(ModelError) as err:
        load_checkpoint(tmp_path / "odd.pt", arch="densenet121", labels=LABELS, device="cpu")
    text = str(err.value)
    assert "missing keys, first ['features.norm5.weight']" in text
    assert "unexpected keys, first ['features.extra.weight']" in text
    assert "layouts recognised" in text and "CheXNet" in text


def test_outputs_and_labels_must_agree(tmp_path):
    torch.save(_source(5).state_dict(), tmp_path / "five.pt")
    with pytest.raises(ModelError, match="5 outputs but 14 labels"):
        load_checkpoint(tmp_path / "five.pt", arch="densenet121", labels=LABELS, device="cpu")
