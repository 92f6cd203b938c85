"""What a new user's own store lacks is said with its cause and the command that fills it (issue 41,
item 6): thresholds after a precompute of the default (test) split, localization on a dataset of
labels only, and the split the app's report pages evaluate on a store precomputed with ``--split all``.

The data is a user's folder outside the project (8 PNG films, a CSV with 4 test and 4 validation
films, two labels, no boxes) and a ResNet-18 state_dict with a labels file, precomputed from the
command line as a user types it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

from cxrxai.cli import main
from cxrxai.store import open_store

pytestmark = pytest.mark.slow
LABELS = ["Effusion", "Nodule"]


def _precompute(world: Path, store: Path, *extra: str) -> int:
    films = world / "films"
    return main(["precompute", "--dataset", "folder", "--root", str(films), "--data-option",
                 f"csv={films / 'meta.csv'}", "--data-option", "labels=Effusion,Nodule", "--model",
                 f"resnet18:{world / 'ckpt.pt'}:{world / 'labels.json'}", "--input-size", "64",
                 "--store", str(store), "--explainers", "gradcam", *extra])


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    """The user's folder, ``test.duckdb`` (default split) and ``all.duckdb`` (``--split all``)."""
    world = tmp_path_factory.mktemp("user")
    films = world / "films"
    films.mkdir()
    rows = ["path,sex,age,split,Effusion,Nodule"]
    for i in range(8):
        pixels = (np.random.default_rng(i).random((48, 48)) * 255).astype(np.uint8)
        Image.fromarray(pixels).save(films / f"f{i}.png")
        rows.append(f"f{i}.png,{'MF'[i % 2]},{40 + i},{'test' if i < 4 else 'val'},{i % 2},{(i + 1) % 2}")
    (films / "meta.csv").write_text("\n".join(rows) + "\n")
    torch.manual_seed(0)
    torch.save(torchvision.models.resnet18(num_classes=2).state_dict(), world / "ckpt.pt")
    (world / "labels.json").write_text(json.dumps(LABELS))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CXRXAI_DATA_CACHE", str(world / "cache"))
        assert _precompute(world, world / "test.duckdb") == 0
        assert _precompute(world, world / "all.duckdb", "--split", "all") == 0
    return world


def test_missing_thresholds_name_precompute_thresholds_file_which_fills_them(world, tmp_path, capsys,
                                                                             monkeypatch):
    monkeypatch.setenv("CXRXAI_DATA_CACHE", str(world / "cache"))
    store = tmp_path / "s.duckdb"
    shutil.copy(world / "test.duckdb", store)
    capsys.readouterr()
    assert main(["report", "subgroup-tpr", "--store", str(store)]) == 2
    said = capsys.readouterr().err
    assert "`python -m cxrxai precompute ... --thresholds FILE`" in said and "label,threshold" in said
    (tmp_path / "thresholds.csv").write_text("label,threshold\nEffusion,0.5\nNodule,0.5\n")
    assert _precompute(world, store, "--thresholds", str(tmp_path / "thresholds.csv")) == 0
    with open_store(store) as s:
        stored = s.thresholds("ckpt")
    assert sorted(stored.label) == LABELS and set(stored.method) == {"file:thresholds.csv"}
    capsys.readouterr()
    assert main(["report", "subgroup-tpr", "--store", str(store), "--csv"]) == 0


def test_localization_on_labels_only_data_says_why_it_is_empty(world, capsys):
    capsys.readouterr()
    assert main(["report", "localization", "--store", str(world / "test.duckdb")]) == 2
    said = capsys.readouterr().err
    assert "no box or mask" in said and "labels only" in said and "boxes_csv=FILE" in said
    assert "cannot bootstrap" not in said and "choose slice=positive" not in said


def test_the_subgroups_page_names_the_split_it_evaluates(world):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120)
    at.session_state["store_path"] = str(world / "all.duckdb")
    at.run()
    at.switch_page("pages/subgroups.py").run()
    assert not at.exception, at.exception
    captions = " ".join(c.value for c in at.caption)
    assert "the test split: 4 of the 8 images with predictions" in captions
    assert "val 4" in captions
