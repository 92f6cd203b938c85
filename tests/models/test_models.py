"""Model specs, preprocessing, registry files and thresholds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cxrxai.errors import DataError, ModelError, UnknownNameError
from cxrxai.models import registry
from cxrxai.models.spec import ModelSpec, preprocess
from cxrxai.models.thresholds import choose_threshold

SPEC = ModelSpec(name="t", arch="densenet121", labels=("A", "B"), input_size=32)


def test_preprocess_shapes_normalisation_and_resize():
    img = np.full((2, 40, 40), 255, np.uint8)
    x = preprocess(img, SPEC)
    assert x.shape == (2, 3, 32, 32) and x.is_contiguous(memory_format=torch.channels_last)
    expected = (1.0 - np.array(SPEC.mean)) / np.array(SPEC.std)
    assert np.allclose(x[0, :, 5, 5].numpy(), expected, atol=1e-5)


@pytest.mark.parametrize("bad", [np.zeros((2, 3, 4, 4), np.uint8), np.full((4, 4), 2.0), np.zeros((4, 4), np.int32)])
def test_preprocess_refuses_bad_images(bad):
    with pytest.raises(DataError):
        preprocess(bad, SPEC)


def test_spec_validation_and_label_lookup():
    assert SPEC.label_index("B") == 1
    with pytest.raises(UnknownNameError, match="'A', 'B'"):
        SPEC.label_index("C")
    with pytest.raises(UnknownNameError):
        ModelSpec(name="t", arch="densenet121", labels=("A",), explained_output="softmax")
    with pytest.raises(UnknownNameError):
        ModelSpec(name="t", arch="densenet121", labels=("A",), thresholds={"Z": 0.5})
    assert ModelSpec.from_json(SPEC.to_json()) == SPEC


def test_save_load_round_trip_in_fp16(tmp_path):
    torch.manual_seed(0)
    module = registry.build("resnet18", 2).eval()
    path = registry.save(module, SPEC.with_(arch="resnet18", cam_layer="layer4"), tmp_path / "r18")
    loaded = registry.load(path, device="cpu")
    assert loaded.spec.card["weights_sha256"] == registry.sha256(path)
    x = torch.randn(1, 3, 32, 32)
    with torch.inference_mode():
        ref = module.half().float()(x)
        assert torch.allclose(loaded.module(x), ref, atol=1e-4)
    assert loaded.layer() is loaded.module.layer4


def test_missing_weights_say_what_to_do(tmp_path):
    with pytest.raises(ModelError, match="python -m cxrxai demo --train"):
        registry.load(tmp_path / "absent.pt")


def test_unknown_architecture_lists_the_known_ones():
    with pytest.raises(UnknownNameError, match="densenet121"):
        registry.build("vgg11", 2)


def test_weights_for_another_head_are_refused(tmp_path):
    path = registry.save(registry.build("resnet18", 3), SPEC.with_(arch="resnet18"), tmp_path / "bad")
    with pytest.raises(ModelError, match="do not fit"):
        registry.load(path)


def test_f1_threshold_matches_chexclusion_rule():
    y = np.array([0, 0, 1, 1, 1, 0])
    p = np.array([0.1, 0.4, 0.35, 0.8, 0.7, 0.2])
    thr, f1 = choose_threshold(y, p)
    # At 0.35 the positives are {0.35, 0.4, 0.7, 0.8}: precision 3/4, recall 1 → F1 6/7.
    assert thr == 0.35 and f1 == pytest.approx(6 / 7)
    assert ((p >= thr) == np.array([0, 1, 1, 1, 1, 0], bool)).all()


def test_youden_threshold():
    thr, j = choose_threshold([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], method="youden")
    assert thr == 0.8 and j == pytest.approx(0.5)


def test_threshold_needs_both_classes():
    with pytest.raises(DataError, match="both"):
        choose_threshold([1, 1], [0.2, 0.3])
    with pytest.raises(UnknownNameError):
        choose_threshold([0, 1], [0.2, 0.3], method="median")
