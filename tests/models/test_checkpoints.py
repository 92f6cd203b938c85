"""Checkpoints saved the way other groups save them load into the same model.

For each layout the file is written on disk as that group's code writes it (arnoweng/CheXNet's
DataParallel ``DenseNet121`` wrapper with torchvision < 0.3 layer names, jrzech/reproduce-chexnet's
pickled ``{"model": model}``, a PyTorch Lightning ``.ckpt``, a one-channel network), loaded with
``load_checkpoint``, and its outputs compared with the source model's on a fixed random input.
Random-init DenseNet-121 / ResNet-18, CPU only, nothing downloaded.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torchvision
from torch import nn

from cxrxai.errors import ModelError
from cxrxai.models.checkpoints import CHEXNET_HEAD, detect_layout, normalise_state_dict
from cxrxai.models.external import GREY_MEAN, GREY_STD, load_checkpoint
from cxrxai.models.spec import preprocess

LABELS = [f"finding {k}" for k in range(14)]
X = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))


def _outputs(model, x=X) -> torch.Tensor:
    with torch.inference_mode():
        return model.module(x.contiguous(memory_format=torch.channels_last).to(model.device)).cpu()


def _randomise_bn(net: nn.Module) -> nn.Module:
    """Non-trivial running statistics, so a batch-norm buffer not loaded would change the output."""
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.9, 1.1)
    return net.eval()


def _densenet(n: int = 14, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return _randomise_bn(torchvision.models.densenet121(num_classes=n))


def _resnet(n: int = 14, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return _randomise_bn(torchvision.models.resnet18(num_classes=n))


def _source_out(src: nn.Module, x=X) -> torch.Tensor:
    with torch.inference_mode():
        return src(x)


class DenseNet121(nn.Module):
    """arnoweng/CheXNet's model class: torchvision's DenseNet-121 with a Linear + Sigmoid head."""

    def __init__(self, out_size: int):
        super().__init__()
        self.densenet121 = _densenet()
        self.densenet121.classifier = nn.Sequential(nn.Linear(1024, out_size), nn.Sigmoid())

    def forward(self, x):
        return self.densenet121(x)


class SigmoidInForward(nn.Module):
    """A model whose sigmoid is a function call in forward: it cannot be removed."""

    def __init__(self):
        super().__init__()
        self.net = _resnet()

    def forward(self, x):
        return torch.sigmoid(self.net(x))


class GatedResNet(nn.Module):
    """A Linear + Sigmoid Sequential inside the network (a channel gate), logits out."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Sequential(nn.Linear(3, 3), nn.Sigmoid())
        self.net = _resnet()

    def forward(self, x):
        return self.net(x * self.gate(x.mean((2, 3)))[:, :, None, None])


def _old_densenet_names(state: dict) -> dict:
    """Keys as torchvision < 0.3 (PyTorch 0.3, CheXNet's) wrote them: norm1 → norm.1, conv2 →
    conv.2, and no ``num_batches_tracked`` buffers (added in PyTorch 0.4.1)."""
    return {re.sub(r"(denselayer\d+\.(?:norm|relu|conv))([12])\.", r"\1.\2.", k): v for k, v in state.items()
            if not k.endswith("num_batches_tracked")}


@pytest.mark.parametrize("wrap", ["plain", "module.", "state_dict", "model", "model_state_dict"])
def test_torchvision_state_dict_plain_dataparallel_or_nested(tmp_path, wrap):
    src = _resnet()
    state = nn.DataParallel(src).state_dict() if wrap == "module." else src.state_dict()
    obj = state if wrap in ("plain", "module.") else {wrap: state, "epoch": 7, "optimizer": {"lr": 0.1}}
    torch.save(obj, tmp_path / "r18.pt")
    m = load_checkpoint(tmp_path / "r18.pt", arch="resnet18", labels=LABELS, device="cpu")
    torch.testing.assert_close(_outputs(m), _source_out(src), atol=1e-5, rtol=0)
    assert m.spec.card["checkpoint_layout"] == ("dataparallel" if wrap == "module." else "torchvision")
    assert m.spec.explained_output == "logit" and "head" not in m.spec.card
    assert m.spec.mean == (0.485, 0.456, 0.406)


def test_chexnet_dataparallel_old_names_and_sigmoid_head(tmp_path):
    src = DenseNet121(14).eval()
    state = _old_densenet_names(nn.DataParallel(src).state_dict())
    assert "module.densenet121.features.denseblock1.denselayer1.norm.1.weight" in state
    assert "module.densenet121.classifier.0.weight" in state
    # CheXNet's training script: torch.save({'epoch': ..., 'state_dict': model.state_dict(), ...})
    torch.save({"epoch": 9, "state_dict": state, "best_loss": 0.1, "optimizer": {"param_groups": [{"lr": 1e-3}]}},
               tmp_path / "m-25012018-123527.pth.tar")
    m = load_checkpoint(tmp_path / "m-25012018-123527.pth.tar", arch="densenet121", labels=LABELS, device="cpu")
    # our model outputs the logit before CheXNet's sigmoid: sigmoid(ours) is CheXNet's output
    torch.testing.assert_close(torch.sigmoid(_outputs(m)), _source_out(src), atol=1e-5, rtol=0)
    assert m.spec.card["checkpoint_layout"] == "dataparallel+chexnet+old-densenet+sequential-head"
    assert m.spec.card["head"] == "linear+sigmoid in the source model; cxrxai explains the logit before the sigmoid"
    assert m.spec.explained_output == "logit" and m.spec.cam_layer == "features.norm5"


@pytest.mark.parametrize("prefix", ["model.", "net.", "backbone."])
def test_lightning_checkpoint(tmp_path, prefix):
    src = _resnet()
    state = {prefix + k: v for k, v in src.state_dict().items()}
    state["criterion.pos_weight"] = torch.ones(14)  # a loss buffer Lightning saves beside the model
    torch.save({"epoch": 3, "global_step": 300, "pytorch-lightning_version": "2.4.0", "state_dict": state,
                "optimizer_states": [{"state": {}, "param_groups": [{"lr": 1e-3}]}], "hyper_parameters": {"lr": 1e-3}},
               tmp_path / "epoch=3-step=300.ckpt")
    m = load_checkpoint(tmp_path / "epoch=3-step=300.ckpt", arch="resnet18", labels=LABELS, device="cpu")
    torch.testing.assert_close(_outputs(m), _source_out(src), atol=1e-5, rtol=0)
    assert m.spec.card["checkpoint_layout"] == "lightning"
    assert m.spec.card["checkpoint_notes"] == [
        f"lightning: stripped '{prefix}'; ignored 1 key(s) outside it, e.g. 'criterion.pos_weight'"]


@pytest.mark.parametrize("arch", ["resnet18", "densenet121"])
def test_one_channel_model(tmp_path, arch):
    src = _resnet(3) if arch == "resnet18" else _densenet(3)
    if arch == "resnet18":
        src.conv1 = nn.Conv2d(1, 64, 7, 2, 3, bias=False)
    else:
        src.features.conv0 = nn.Conv2d(1, 64, 7, 2, 3, bias=False)
    torch.save(src.state_dict(), tmp_path / "grey.pt")
    m = load_checkpoint(tmp_path / "grey.pt", arch=arch, labels=["a", "b", "c"], device="cpu", input_size=32)
    assert (m.spec.mean, m.spec.std) == (GREY_MEAN, GREY_STD) == ((0.5,), (0.5,))
    assert m.spec.card["checkpoint_layout"] == "one-channel"
    films = np.random.default_rng(0).integers(0, 256, (2, 64, 64), dtype=np.uint8)
    x = preprocess(films, m.spec)
    assert tuple(x.shape) == (2, 1, 32, 32)
    torch.testing.assert_close(_outputs(m, x), _source_out(src, x), atol=1e-5, rtol=0)


def test_one_channel_normalisation_given_or_refused(tmp_path):
    src = _resnet(3)
    src.conv1 = nn.Conv2d(1, 64, 7, 2, 3, bias=False)
    torch.save(src.state_dict(), tmp_path / "grey.pt")
    m = load_checkpoint(tmp_path / "grey.pt", arch="resnet18", labels=["a", "b", "c"], device="cpu",
                        mean=[0.4], std=[0.3])
    assert (m.spec.mean, m.spec.std) == ((0.4,), (0.3,))
    with pytest.raises(ModelError, match="1 input channel.*mean has 3"):
        load_checkpoint(tmp_path / "grey.pt", arch="resnet18", labels=["a", "b", "c"], device="cpu",
                        mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))


def test_whole_chexnet_model_ending_in_a_sigmoid(tmp_path):
    src = DenseNet121(14).eval()
    torch.save(src, tmp_path / "whole.pt")
    with pytest.raises(ModelError, match="trust_pickle=True"):
        load_checkpoint(tmp_path / "whole.pt", arch="densenet121", labels=LABELS, device="cpu")
    m = load_checkpoint(tmp_path / "whole.pt", arch="densenet121", labels=LABELS, device="cpu", trust_pickle=True,
                        input_size=64)
    torch.testing.assert_close(torch.sigmoid(_outputs(m)), _source_out(src), atol=1e-5, rtol=0)
    assert m.spec.explained_output == "logit" and m.spec.card["checkpoint_layout"] == "whole-module"
    assert m.spec.card["head"].startswith(CHEXNET_HEAD)
    assert "'densenet121.classifier.1' was removed" in m.spec.card["head"]
    assert m.spec.cam_layer == "densenet121.features.norm5"  # found inside the wrapper


def test_jrzech_checkpoint_holding_the_model(tmp_path):
    """reproduce-chexnet: torch.save({'model': model, 'best_loss': ..., 'epoch': ..., 'LR': ...})."""
    src = _densenet()
    src.classifier = nn.Sequential(nn.Linear(1024, 14), nn.Sigmoid())
    torch.save({"model": src, "best_loss": 0.2, "epoch": 5, "LR": 0.01}, tmp_path / "checkpoint")
    m = load_checkpoint(tmp_path / "checkpoint", arch="densenet121", labels=LABELS, device="cpu", trust_pickle=True,
                        input_size=64)
    torch.testing.assert_close(torch.sigmoid(_outputs(m)), _source_out(src), atol=1e-5, rtol=0)
    assert m.spec.cam_layer == "features.norm5" and m.spec.explained_output == "logit"


def test_a_sigmoid_in_forward_is_undone_by_a_logit(tmp_path):
    src = SigmoidInForward().eval()
    torch.save(src, tmp_path / "f.pt")
    m = load_checkpoint(tmp_path / "f.pt", arch="resnet18", labels=LABELS, device="cpu", trust_pickle=True,
                        input_size=64)
    # the source's probabilities come back as logits: predictions (their sigmoid) are the source's own,
    # and explainers differentiate the logit, never a sigmoid of a probability
    torch.testing.assert_close(torch.sigmoid(_outputs(m)), _source_out(src), atol=1e-5, rtol=0)
    assert m.spec.explained_output == "logit"
    assert "turned back into the logit" in m.spec.card["head"]


def test_a_sigmoid_inside_the_network_is_left_alone(tmp_path):
    src = GatedResNet().eval()
    torch.save(src, tmp_path / "g.pt")
    m = load_checkpoint(tmp_path / "g.pt", arch="resnet18", labels=LABELS, device="cpu", trust_pickle=True,
                        input_size=64)
    torch.testing.assert_close(_outputs(m), _source_out(src), atol=1e-5, rtol=0)
    assert m.spec.explained_output == "logit" and "head" not in m.spec.card
    assert isinstance(m.module.gate[1], nn.Sigmoid)


def test_a_checkpoint_that_does_not_fit_names_the_keys(tmp_path):
    state = _resnet().state_dict()
    state["layer4.extra.weight"] = state.pop("layer4.1.bn2.weight")
    state["layer1.0.conv1.weight"] = torch.zeros(64, 64, 5, 5)
    torch.save({"state_dict": state}, tmp_path / "odd.pt")
    with pytest.raises(ModelError) as err:
        load_checkpoint(tmp_path / "odd.pt", arch="resnet18", labels=LABELS, device="cpu")
    text = str(err.value)
    assert "1 missing keys, first ['layer4.1.bn2.weight']" in text
    assert "1 unexpected keys, first ['layer4.extra.weight']" in text
    assert "layer1.0.conv1.weight (64, 64, 5, 5) vs (64, 64, 3, 3) expected" in text
    for layout in ("plain torchvision", "'module.'", "'densenet121.'", "'norm.1'", "'classifier.0'", "'model.'",
                   "one-channel"):
        assert layout in text


def test_outputs_and_labels_must_agree(tmp_path):
    torch.save(_resnet(5).state_dict(), tmp_path / "five.pt")
    with pytest.raises(ModelError, match="5 outputs but 14 labels"):
        load_checkpoint(tmp_path / "five.pt", arch="resnet18", labels=LABELS, device="cpu")
    torch.save(_resnet(5), tmp_path / "five-whole.pt")
    with pytest.raises(ModelError, match="5 outputs but 14 labels"):
        load_checkpoint(tmp_path / "five-whole.pt", arch="resnet18", labels=LABELS, device="cpu", trust_pickle=True,
                        input_size=64)


@pytest.mark.parametrize("content", [b"not a checkpoint", None, {"epoch": 3}])
def test_unreadable_files_are_model_errors(tmp_path, content):
    path = tmp_path / "bad.pt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        torch.save(content, path)
    with pytest.raises(ModelError):
        load_checkpoint(path, arch="resnet18", labels=LABELS, device="cpu")


def test_a_sidecar_without_labels_is_a_model_error(tmp_path):
    torch.save(_resnet().state_dict(), tmp_path / "r.pt")
    (tmp_path / "r.labels.json").write_text('{"classes": ["a"]}')
    with pytest.raises(ModelError, match="label names"):
        load_checkpoint(tmp_path / "r.pt", arch="resnet18", device="cpu")


@pytest.mark.parametrize(("keys", "layout"), [
    (["conv1.weight", "fc.weight"], "torchvision"),
    (["module.conv1.weight", "module.fc.weight"], "dataparallel"),
    (["module.densenet121.features.denseblock1.denselayer1.norm.1.weight",
      "module.densenet121.classifier.0.weight"], "dataparallel+chexnet+old-densenet+sequential-head"),
    (["model.conv1.weight", "model.fc.weight", "loss.weight"], "lightning"),
])
def test_detect_layout_from_keys(keys, layout):
    assert detect_layout(dict.fromkeys(keys, torch.zeros(2, 2))) == layout


def test_normalise_state_dict_leaves_its_input_alone():
    state = {"module.densenet121.features.denseblock1.denselayer1.conv.2.weight": torch.ones(1),
             "module.densenet121.classifier.0.weight": torch.ones(14, 1024)}
    before = dict(state)
    out, layout, notes = normalise_state_dict(state, "densenet121")
    assert set(out) == {"features.denseblock1.denselayer1.conv2.weight", "classifier.weight"}
    assert state == before and len(notes) == 4 and layout.startswith("dataparallel+chexnet")
