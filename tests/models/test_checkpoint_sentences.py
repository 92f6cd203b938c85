"""A checkpoint that cannot be loaded as given says why in a sentence with the way out (issue 41,
item 6): a Lightning ``.ckpt`` names its labels in ``hyper_parameters``, and a whole pickled model
whose class lived in the training script says what that means and how to export a state dict.

Each file is written as a user's training code writes it, in a folder outside the project: a
Lightning checkpoint dict (``state_dict`` under ``model.``, ``hyper_parameters``,
``pytorch-lightning_version``), and ``torch.save(model)`` of a class defined in a script that is
gone when cxrxai loads the file. Random-init ResNet-18, CPU only.
"""

from __future__ import annotations

import re
import sys
import types

import pytest
import torch
import torchvision
from torch import nn

from cxrxai.errors import ModelError
from cxrxai.models.external import load_checkpoint

NAMES = ["Atelectasis", "Cardiomegaly", "Effusion"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _lightning_ckpt(folder, hparams: dict):
    """A checkpoint as ``Trainer.save_checkpoint`` writes it for a LightningModule holding
    ``self.model`` and ``self.save_hyperparameters()``."""
    torch.manual_seed(0)
    net = torchvision.models.resnet18(num_classes=len(NAMES))
    path = folder / "epoch=4-step=2000.ckpt"
    torch.save({"epoch": 4, "global_step": 2000, "pytorch-lightning_version": "2.4.0",
                "state_dict": {f"model.{k}": v for k, v in net.state_dict().items()},
                "loops": {}, "callbacks": {}, "optimizer_states": [], "lr_schedulers": [],
                "hparams_name": "kwargs", "hyper_parameters": hparams}, path)
    return path, net


@pytest.mark.parametrize("key", ["labels", "class_names", "pathologies", "label_names", "classes", "tasks"])
def test_lightning_labels_are_read_from_its_hyper_parameters(tmp_path, key):
    path, net = _lightning_ckpt(tmp_path, {"lr": 1e-4, "num_classes": 3, key: NAMES})
    m = load_checkpoint(path, arch="resnet18", device="cpu")
    assert m.spec.labels == tuple(NAMES)
    assert m.spec.card["labels_source"] == f"{path}: hyper_parameters[{key!r}]"
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(m.module(x), net.eval()(x), atol=1e-5, rtol=0)


def test_labels_given_win_over_hyper_parameters_and_say_so(tmp_path):
    path, _ = _lightning_ckpt(tmp_path, {"class_names": NAMES})
    m = load_checkpoint(path, arch="resnet18", labels=["a", "b", "c"], device="cpu")
    assert m.spec.labels == ("a", "b", "c") and m.spec.card["labels_source"] == "labels= (given)"


def test_hyper_parameters_without_names_say_what_they_hold(tmp_path):
    path, _ = _lightning_ckpt(tmp_path, {"lr": 1e-4, "num_classes": 3})
    with pytest.raises(ModelError) as err:
        load_checkpoint(path, arch="resnet18", device="cpu")
    text = str(err.value)
    assert "hyper_parameters" in text and "'num_classes'" in text and "labels=[...]" in text


class _Net(nn.Module):
    """The training script's model: a torchvision network under ``self.net``, a sigmoid after it."""

    def __init__(self):
        super().__init__()
        self.net = torchvision.models.resnet18(num_classes=len(NAMES))

    def forward(self, x):
        return torch.sigmoid(self.net(x))


def _pickled_from_a_script(tmp_path, module_name: str):
    """``torch.save(model)`` run in a training script whose module (``__main__`` or ``train``) is
    then gone: the class is found by name when saving, and nowhere when loading."""
    cls = type("MainSigmoidNet", (_Net,), {"__module__": module_name})
    script = sys.modules.get(module_name) or types.ModuleType(module_name)
    had = module_name in sys.modules
    sys.modules[module_name] = script
    script.MainSigmoidNet = cls
    try:
        torch.save(cls(), tmp_path / "whole.pt")
    finally:
        del script.MainSigmoidNet
        if not had:
            del sys.modules[module_name]
    return tmp_path / "whole.pt"


@pytest.mark.parametrize("module_name", ["__main__", "train_cxr"])
def test_a_model_pickled_in_its_training_script_says_how_to_export_a_state_dict(tmp_path, module_name):
    path = _pickled_from_a_script(tmp_path, module_name)
    with pytest.raises(ModelError) as err:
        load_checkpoint(path, arch="resnet18", labels=NAMES, device="cpu", trust_pickle=True)
    text = str(err.value)
    assert f"{module_name}.MainSigmoidNet" in text and "importable" in text
    assert "torch.save(model.state_dict(), " in text and "resnet18:" in text
    assert not ANSI.search(text)
    # the recipe, run where the class is importable, gives a file that loads as the message says
    out = re.search(r"torch\.save\(model\.state_dict\(\), '([^']+)'\)", text).group(1)
    torch.manual_seed(1)
    trained = _Net().eval()
    torch.save(trained.state_dict(), out)
    m = load_checkpoint(out, arch="resnet18", labels=NAMES, device="cpu")
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(torch.sigmoid(m.module(x)), trained(x), atol=1e-5, rtol=0)


def test_without_trust_pickle_the_message_names_the_flag_and_has_no_colour_codes(tmp_path):
    path = _pickled_from_a_script(tmp_path, "__main__")
    with pytest.raises(ModelError) as err:
        load_checkpoint(path, arch="resnet18", labels=NAMES, device="cpu")
    text = str(err.value)
    assert "--trust-pickle" in text and "trust_pickle=True" in text
    assert "__main__.MainSigmoidNet" in text and "torch.save(model.state_dict(), " in text
    assert not ANSI.search(text)


def test_precompute_says_where_a_checkpoints_labels_came_from(tmp_path, capsys, monkeypatch):
    from PIL import Image

    from cxrxai.cli import main

    monkeypatch.setenv("CXRXAI_DATA_CACHE", str(tmp_path / "cache"))
    films = tmp_path / "films"
    films.mkdir()
    for i in range(2):
        Image.new("L", (40, 40), 60 * i).save(films / f"f{i}.png")
    (films / "meta.csv").write_text("path,split,Effusion\nf0.png,test,1\nf1.png,test,0\n")
    path, _ = _lightning_ckpt(tmp_path, {"lr": 1e-4, "class_names": NAMES})
    assert main(["precompute", "--dataset", "folder", "--root", str(films), "--data-option",
                 f"csv={films / 'meta.csv'}", "--data-option", "labels=Effusion", "--model", f"resnet18:{path}",
                 "--input-size", "32", "--store", str(tmp_path / "s.duckdb"), "--explainers", "gradcam"]) == 0
    said = capsys.readouterr().err
    assert f"labels of epoch=4-step=2000 read from {path}: hyper_parameters['class_names']" in said
