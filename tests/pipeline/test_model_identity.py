"""A model is known by its weights, not its file name (issue 41, items 1 and 4).

Built as a user has them: two training runs' checkpoints saved under one name
(``epoch=4-step=2000.ckpt``) in two folders, precomputed into one store. The second is refused with
both hashes and the option that names it otherwise; the store is left as the first run wrote it; under
``--model-name`` it is stored as a model of its own. ``report`` on that two-model store without
``--model`` then refuses and lists the models, as ``explain`` does.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import torchvision
from PIL import Image

from cxrxai.cli import main
from cxrxai.present.provenance import report_provenance, table_provenance
from cxrxai.store import open_store

NAME = "epoch=4-step=2000.ckpt"


def _folder(root: Path) -> Path:
    rng = np.random.default_rng(0)
    root.mkdir(parents=True)
    rows = []
    for i in range(6):
        Image.fromarray(rng.integers(0, 256, (40, 40), dtype=np.uint8)).save(root / f"c{i}.png")
        rows.append({"path": f"c{i}.png", "sex": "MF"[i % 2], "age": 30 + i, "split": "test",
                     "labels": ["Nodule", "Effusion"][i % 2]})
    pd.DataFrame(rows).to_csv(root / "cases.csv", index=False)
    return root


def _run(folder: Path, seed: int) -> Path:
    """One training run's checkpoint: a ResNet-18 state dict of its own seed, named as Lightning does."""
    folder.mkdir(parents=True)
    torch.manual_seed(seed)
    torch.save(torchvision.models.resnet18(num_classes=2).state_dict(), folder / NAME)
    (folder / "labels.json").write_text(json.dumps(["Effusion", "Nodule"]))
    return folder / NAME


def _precompute(root: Path, store: Path, ckpt: Path, *extra: str) -> int:
    return main(["precompute", "--dataset", "folder", "--root", str(root), "--data-option",
                 f"csv={root / 'cases.csv'}", "--model", f"resnet18:{ckpt}:{ckpt.parent / 'labels.json'}",
                 "--input-size", "32", "--store", str(store), "--split", "all", "--explainers", "gradcam",
                 *extra])


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """The folder, both runs' checkpoints and a store holding run 1 (precomputed once)."""
    root = tmp_path_factory.mktemp("identity")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CXRXAI_DATA_CACHE", str(root / "cache"))
        data = _folder(root / "data")
        one, two = _run(root / "run1", 1), _run(root / "run2", 2)
        store = root / "s.duckdb"
        assert _precompute(data, store, one) == 0
    return data, one, two, store


def test_the_weights_hash_is_stored_with_the_model(two_runs):
    _, one, _, store = two_runs
    with open_store(store) as s:
        row = s.models().set_index("model_id").loc["epoch=4-step=2000"]
        identity = s.model_identity("epoch=4-step=2000")
    assert row["weights_sha256"] == _sha(one)
    assert identity.weights_sha256 == _sha(one) and identity.weights_path == str(one)
    assert identity.short == _sha(one)[:12]


def test_same_name_other_weights_is_refused_and_the_store_untouched(two_runs, tmp_path, monkeypatch, capsys):
    data, one, two, store = two_runs
    monkeypatch.setenv("CXRXAI_DATA_CACHE", str(tmp_path / "cache"))
    work = tmp_path / "s.duckdb"
    work.write_bytes(store.read_bytes())
    before = work.read_bytes()
    capsys.readouterr()
    assert _precompute(data, work, two) == 2
    err = capsys.readouterr().err
    assert _sha(one) in err and _sha(two) in err, err
    assert "--model-name" in err and str(two) in err
    assert work.read_bytes() == before  # nothing published: not the models row, not a prediction
    with open_store(work) as s:
        assert s.models().set_index("model_id").loc["epoch=4-step=2000", "weights_path"] == str(one)


def test_the_refusal_is_typed(two_runs, tmp_path, monkeypatch):
    from cxrxai.data.adapters import load_dataset
    from cxrxai.errors import ModelIdentityError
    from cxrxai.models.from_text import load_model_text
    from cxrxai.pipeline.dataset import build_dataset, dataset_plan

    data, one, two, store = two_runs
    work = tmp_path / "s.duckdb"
    work.write_bytes(store.read_bytes())
    model, weights = load_model_text(f"resnet18:{two}:{two.parent / 'labels.json'}", input_size=32)
    tables = load_dataset("folder", data, csv=str(data / "cases.csv"))
    with pytest.raises(ModelIdentityError) as err:
        build_dataset(work, tables, model, dataset_plan(explainers=("gradcam",), split=None),
                      cache_dir=tmp_path / "decoded", model_path=weights)
    assert err.value.stored == _sha(one) and err.value.given == _sha(two)


def test_another_name_stores_a_second_model_and_report_then_asks_which(two_runs, tmp_path, monkeypatch,
                                                                       capsys):
    data, one, two, store = two_runs
    monkeypatch.setenv("CXRXAI_DATA_CACHE", str(tmp_path / "cache"))
    work = tmp_path / "s.duckdb"
    work.write_bytes(store.read_bytes())
    assert _precompute(data, work, two, "--model-name", "run2") == 0
    with open_store(work) as s:
        models = s.models().set_index("model_id")
        first = s.prediction_table("epoch=4-step=2000").sort_values(["image_id", "label"])
        second = s.prediction_table("run2").sort_values(["image_id", "label"])
        head = report_provenance(s, "performance", "run2")
        table_head = table_provenance(s, "cohort")
    assert models.loc["run2", "weights_sha256"] == _sha(two)
    assert models.loc["epoch=4-step=2000", "weights_sha256"] == _sha(one)
    assert np.abs(first.logit.to_numpy() - second.logit.to_numpy()).max() > 1e-3  # each run its own
    assert _sha(two)[:12] in head["model"]
    assert _sha(one)[:12] in table_head["models"] and _sha(two)[:12] in table_head["models"]
    capsys.readouterr()
    assert main(["info", "--store", str(work)]) == 0
    info = capsys.readouterr().out
    assert _sha(one)[:12] in info and _sha(two)[:12] in info
    # item 4: no --model on a store of two models is a question, not the first model's answer
    assert main(["report", "performance", "--store", str(work)]) == 2
    err = capsys.readouterr().err
    assert "epoch=4-step=2000" in err and "run2" in err and "--model" in err
    assert main(["report", "performance", "--store", str(work), "--model", "run2", "--csv"]) == 0


def test_a_live_model_from_other_weights_than_the_stored_ones_is_refused(two_runs):
    """The app and ``explain`` reload a stored model from its weights file: a file that now holds other
    weights (run 2 copied over run 1) would draw live maps beside run 1's stored ones."""
    from cxrxai.errors import ModelIdentityError
    from cxrxai.models.stored import load_stored

    _, one, two, store = two_runs
    with open_store(store) as s:
        spec = s.model_spec("epoch=4-step=2000")
    assert load_stored(spec, one, device="cpu").spec.card["weights_sha256"] == _sha(one)
    with pytest.raises(ModelIdentityError, match=f"now holds other weights \\(sha256 {_sha(two)}\\)"):
        load_stored(spec, two, device="cpu")
