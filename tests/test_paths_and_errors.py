"""Stored paths mean the same files from any folder, a moved dataset is re-rooted with one
command, and the small lies and raw tracebacks users met each end in a plain, typed message.

The precompute runs as a user types it, from the data folder with relative paths (``--root films``,
``--model resnet18:ckpt/chexnet.pth.tar:…``); the store is then read from a third folder.
"""

from __future__ import annotations

import builtins
import json
import os
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import torch
import torchvision
from PIL import Image

from cxrxai.cli import main
from cxrxai.data.adapters import load_dataset
from cxrxai.data.adapters._base import Problems, read_csv, sniff_delimiter, unit_interval
from cxrxai.data.cases import case_image
from cxrxai.errors import DataError, ExplainerError, StoreError, UnknownNameError
from cxrxai.explain._common import check_target
from cxrxai.models.checkpoints import model_id_from_file
from cxrxai.store import open_store, write_store

LABELS = ["Effusion", "Nodule"]


def _films(folder: Path, n: int = 4) -> None:
    folder.mkdir(parents=True)
    rows = ["path,sex,age,split,Effusion,Nodule"]
    for i in range(n):
        pixels = (np.random.default_rng(i).random((48, 48)) * 255).astype(np.uint8)
        Image.fromarray(pixels).save(folder / f"f{i}.png")
        rows.append(f"f{i}.png,{'MF'[i % 2]},{40 + i},test,{i % 2},{(i + 1) % 2}")
    (folder / "meta.csv").write_text("\n".join(rows) + "\n")


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    """``data/films`` (4 PNGs + meta.csv), ``data/ckpt/chexnet.pth.tar`` (a ResNet-18 state_dict,
    2 labels) and ``data/s.duckdb`` precomputed from ``data/`` with relative paths only."""
    root = tmp_path_factory.mktemp("world")
    data = root / "data"
    _films(data / "films")
    (data / "ckpt").mkdir()
    torch.manual_seed(0)
    torch.save(torchvision.models.resnet18(num_classes=2).state_dict(), data / "ckpt" / "chexnet.pth.tar")
    (data / "ckpt" / "labels.json").write_text(json.dumps(LABELS))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CXRXAI_DATA_CACHE", str(root / "cache"))
        mp.chdir(data)
        assert main(["precompute", "--dataset", "folder", "--root", "films", "--data-option",
                     "csv=films/meta.csv", "--data-option", "labels=Effusion,Nodule",
                     "--model", "resnet18:ckpt/chexnet.pth.tar:ckpt/labels.json", "--input-size", "64",
                     "--store", "s.duckdb", "--split", "all", "--explainers", "gradcam"]) == 0
    return root


@pytest.fixture
def moved(world, tmp_path) -> Path:
    """A copy of the world (store, films, weights) in a fresh folder, its store pointed at the
    copy's films and weights by plain SQL (not by the re-rooting under test)."""
    data = tmp_path / "data"
    shutil.copytree(world / "data", data)
    with duckdb.connect(str(data / "s.duckdb")) as con:
        con.execute("UPDATE datasets SET root = ?", [str(data / "films")])
        con.execute("UPDATE models SET weights_path = ?", [str(data / "ckpt" / "chexnet.pth.tar")])
    return data


def _explain(store: Path, out: Path, *extra: str) -> int:
    return main(["explain", "--store", str(store), "--image", "f1.png", "--label", "Nodule",
                 "--method", "gradcam", "--out", str(out), *extra])


# ------------------------------ 6: absolute paths, re-rooting

@pytest.mark.slow
def test_precompute_with_relative_paths_stores_absolute_ones_readable_from_a_third_folder(world, tmp_path,
                                                                                         monkeypatch, capsys):
    data = world / "data"
    with open_store(data / "s.duckdb") as store:
        ds, models = store.datasets().iloc[0], store.models()
    assert ds["root_stored"] == str(data / "films") and ds["root"] == str(data / "films")
    assert models["model_id"].tolist() == ["chexnet"]  # 9e: not "chexnet.pth"
    assert models["weights_stored"].tolist() == [str(data / "ckpt" / "chexnet.pth.tar")]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert _explain(data / "s.duckdb", tmp_path / "m.npy") == 0
    assert json.loads(capsys.readouterr().out)["model"] == "chexnet" and np.load(tmp_path / "m.npy").ndim == 2


@pytest.mark.slow
def test_a_moved_dataset_says_its_stored_root_is_missing_and_how_to_reroot(moved, tmp_path, monkeypatch,
                                                                           capsys):
    store, old = moved / "s.duckdb", moved / "films"
    shutil.move(old, tmp_path / "films")
    monkeypatch.chdir(tmp_path)
    assert _explain(store, tmp_path / "m.npy") == 2
    err = capsys.readouterr().err
    assert f"the stored root {old} does not exist" in err
    assert f"`python -m cxrxai reroot --store {store} --dataset folder --root NEWDIR`" in err
    assert main(["reroot", "--store", str(store), "--dataset", "folder", "--root", "films"]) == 0  # relative
    assert json.loads(capsys.readouterr().out)["images_found"] == 4
    assert open_store(store).datasets()["root_stored"].iloc[0] == str(tmp_path / "films")
    assert _explain(store, tmp_path / "m.npy") == 0


@pytest.mark.slow
def test_reroot_refuses_a_folder_without_the_images_and_names_known_datasets(moved, tmp_path, capsys):
    store = moved / "s.duckdb"
    assert main(["reroot", "--store", str(store), "--dataset", "folder", "--root", str(tmp_path)]) == 2
    assert "none of 4 images of 'folder' is under" in capsys.readouterr().err
    assert main(["reroot", "--store", str(store), "--dataset", "nih", "--root", str(tmp_path)]) == 2
    assert "unknown dataset" in capsys.readouterr().err
    assert main(["reroot", "--store", str(store), "--dataset", "folder", "--root", str(tmp_path),
                 "--force"]) == 0
    assert open_store(store).datasets()["root"].iloc[0] == str(tmp_path)


@pytest.mark.slow
def test_moved_weights_say_how_to_reroot_the_model(moved, tmp_path, capsys):
    store = moved / "s.duckdb"
    shutil.move(moved / "ckpt", tmp_path / "weights")
    assert _explain(store, tmp_path / "m.npy") == 2
    err = capsys.readouterr().err
    assert f"{moved / 'ckpt' / 'chexnet.pth.tar'}, does not exist" in err
    assert "reroot --store STORE --model chexnet --weights NEWFILE" in err
    assert main(["reroot", "--store", str(store), "--model", "chexnet", "--weights",
                 str(tmp_path / "weights" / "chexnet.pth.tar")]) == 0
    assert _explain(store, tmp_path / "m.npy") == 0


def _old_store(folder: Path, root: str) -> Path:
    """A store as written before absolute paths: ``root`` as the user typed it."""
    store = folder / "old.duckdb"
    with write_store(store) as w:
        w.put_dataset("folder", source="folder", labels=LABELS, root=root)
        w.put_images(pd.DataFrame({"image_id": ["f1.png"], "dataset": "folder", "path": "f1.png"}))
    return store


def test_an_old_stores_relative_root_is_read_beside_the_store_file(tmp_path, monkeypatch):
    _films(tmp_path / "data" / "films", n=2)
    store = _old_store(tmp_path / "data", "films")
    monkeypatch.chdir(tmp_path)  # not the store's folder: "films" alone would not be found from here
    with open_store(store) as s:
        row, ds = s.image("f1.png"), s.datasets().set_index("dataset").loc["folder"].to_dict()
    assert ds["root"] == str(tmp_path / "data" / "films") and ds["root_stored"] == "films"
    assert case_image(row, ds).shape == (48, 48)
    shutil.rmtree(tmp_path / "data" / "films")
    with pytest.raises(DataError) as err:
        case_image(row, ds)
    assert ("the stored root films (a relative path, from a store written before cxrxai stored absolute "
            f"paths; read beside the store file as {tmp_path / 'data' / 'films'}) does not exist"
            ) in str(err.value)
    assert f"reroot --store {store} --dataset folder --root NEWDIR" in str(err.value)


def test_load_dataset_makes_the_root_and_path_options_absolute(tmp_path, monkeypatch):
    _films(tmp_path / "films", n=2)
    monkeypatch.chdir(tmp_path)
    tables = load_dataset("folder", "films", csv="films/meta.csv", labels="Effusion,Nodule")
    assert tables.root == tmp_path / "films" and tables.root.is_absolute()


# ------------------------------ 9a: a store where nothing can be written

def test_a_store_under_a_file_is_a_store_error_naming_the_folder(tmp_path):
    """A real OS refusal (NotADirectoryError): the store's folder is a file."""
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    with pytest.raises(StoreError) as err:
        with write_store(tmp_path / "notes.txt" / "s.duckdb"):
            pass
    assert f"its folder {tmp_path / 'notes.txt'} cannot hold" in str(err.value)
    assert "pass that path to --store" in str(err.value)


def test_a_read_only_folder_is_a_store_error_naming_the_folder(tmp_path, monkeypatch):
    """Tests run as root, whom chmod does not stop: the lock file's ``open`` is made to fail
    with the PermissionError a read-only folder gives (what this exercises is the handling, not
    the file system). Without root, the folder is also really made read-only."""
    folder = tmp_path / "shared"
    folder.mkdir()
    real_open = builtins.open

    def refusing(file, *args, **kwargs):
        if str(file).endswith(".lock"):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    if os.geteuid() == 0:
        monkeypatch.setattr(builtins, "open", refusing)
    else:
        folder.chmod(0o555)
    try:
        with pytest.raises(StoreError) as err:
            with write_store(folder / "s.duckdb"):
                pass
    finally:
        folder.chmod(0o755)
    assert f"its folder {folder} cannot hold the files a writer keeps" in str(err.value)
    assert "PermissionError" in str(err.value)


# ------------------------------ 9b: an option the adapter does not take

def test_unknown_data_option_lists_the_adapters_options(tmp_path, capsys):
    with pytest.raises(DataError) as err:
        load_dataset("rsna", tmp_path, header_csv="h.csv")
    assert "the rsna adapter has no option 'header_csv'" in str(err.value)
    assert "headers_csv (default None)" in str(err.value)
    assert "exclude_not_normal (default False)" in str(err.value)
    with pytest.raises(DataError, match="folder adapter needs the option 'csv'"):
        load_dataset("folder", tmp_path)
    for part in ("x.pt", "x.json"):  # a model file that exists (paths are checked first), never read
        (tmp_path / part).write_text("")
    assert main(["precompute", "--dataset", "rsna", "--root", str(tmp_path),
                 "--data-option", "header_csv=h.csv", "--model", str(tmp_path / "x.pt"),
                 "--store", str(tmp_path / "s.duckdb")]) == 2
    assert "no option 'header_csv'" in capsys.readouterr().err


# ------------------------------ 9c: a semicolon-separated CSV

def test_a_semicolon_csv_is_read_and_said_to_be(tmp_path):
    _films(tmp_path / "films", n=3)
    meta = tmp_path / "films" / "meta.csv"
    meta.write_text(meta.read_text().replace(",", ";"))
    tables = load_dataset("folder", tmp_path / "films", csv=meta, labels="Effusion,Nodule", strict=True)
    assert len(tables.images) == 3 and tables.images["sex"].tolist() == ["M", "F", "M"]
    assert tables.problems[["file", "row", "problem"]].values.tolist() == [
        [str(meta), None, "columns separated by ';', not commas; read with ';' as the delimiter"]]


def test_the_delimiter_of_real_published_csvs_and_their_semicolon_copy(tmp_path):
    xrv = pytest.importorskip("torchxrayvision")
    nih = Path(xrv.__file__).parent / "data" / "Data_Entry_2017_v2020.csv.gz"
    assert sniff_delimiter(nih) == ","  # "Finding Labels" holds '|' in many rows: still a comma
    frame = read_csv(nih)
    frame.head(2000).to_csv(tmp_path / "semi.csv", sep=";", index=False)
    frame.head(2000).to_csv(tmp_path / "tabs.tsv", sep="\t", index=False)
    problems = Problems(strict=False)
    assert read_csv(tmp_path / "semi.csv", problems=problems).shape == (2000, frame.shape[1])
    assert read_csv(tmp_path / "tabs.tsv").attrs["delimiter"] == "\t" and len(problems.rows) == 1
    (tmp_path / "one.csv").write_text("path\na.png\nb.png\n")
    assert read_csv(tmp_path / "one.csv").columns.tolist() == ["path"]


# ------------------------------ 9d: plain numbers in messages

def test_messages_print_plain_numbers_not_numpy_reprs(tmp_path):
    frame = pd.DataFrame({"threshold": [0.5, 1.7]})
    with pytest.raises(DataError) as err:
        unit_interval(frame, ["threshold"], "t.csv")
    assert "threshold = 1.7;" in str(err.value) and "np." not in str(err.value)
    with pytest.raises(ExplainerError) as err:
        check_target(np.int64(9), 2, None)
    assert str(err.value).startswith("target 9 is out of range")
    assert str(UnknownNameError("label", np.float64(2.5), [np.int64(1)])) == "unknown label 2.5; allowed: 1"
    _films(tmp_path / "films", n=2)
    meta = tmp_path / "films" / "meta.csv"
    meta.write_text(meta.read_text().replace("test,0,1", "test,2,1"))
    tables = load_dataset("folder", tmp_path / "films", csv=meta, labels="Effusion,Nodule")
    assert tables.problems["problem"].tolist() == ["label Effusion = 2; allowed 0, 1 or blank; image skipped"]


# ------------------------------ 9e: the default model id

@pytest.mark.parametrize("name, expected", [("chexnet.pth.tar", "chexnet"), ("m.pth", "m"), ("m.pt", "m"),
                                            ("run/epoch=3.ckpt", "epoch=3"), ("weights.tar", "weights"),
                                            ("pytorch_model.bin", "pytorch_model"), ("m.safetensors", "m"),
                                            ("densenet-v1.2.PTH.TAR", "densenet-v1.2"), ("model", "model")])
def test_the_default_model_id_drops_every_checkpoint_suffix(name, expected):
    assert model_id_from_file(name) == expected


# ------------------------------ 9f: explain takes the precompute's specs

@pytest.mark.slow
def test_explain_an_image_file_with_a_checkpoint_spec_from_another_folder(world, tmp_path, monkeypatch,
                                                                          capsys):
    monkeypatch.chdir(world)
    out = tmp_path / "m.npy"
    assert main(["explain", "--image", "data/films/f2.png", "--model",
                 "resnet18:data/ckpt/chexnet.pth.tar:data/ckpt/labels.json", "--input-size", "64",
                 "--label", "Effusion", "--method", "gradcam", "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model"] == "chexnet"
    assert np.load(out).shape == (2, 2)  # 64 px through ResNet-18 (stride 32): a 2×2 Grad-CAM


# ------------------------------ 9g: CheXpert rows name their own file

def test_chexpert_problem_rows_name_the_file_and_row_they_came_from(tmp_path):
    head = "Path,Sex,Age,Frontal/Lateral,AP/PA,Edema\n"
    film = "CheXpert-v1.0/{}/view1_frontal.jpg"
    (tmp_path / "train.csv").write_text(head + film.format("train/patient1/study1")
                                        + ",Male,50,Frontal,PA,1\n")
    (tmp_path / "valid.csv").write_text(head
                                        + film.format("valid/patient2/study1") + ",Female,60,Frontal,PA,0\n"
                                        + film.format("valid/patient3/study1") + ",Female,300,Frontal,AP,1\n"
                                        + film.format("valid/../../patient4") + ",Male,40,Frontal,AP,1\n")
    tables = load_dataset("chexpert", tmp_path)
    p = tables.problems.assign(file=tables.problems.file.map(lambda f: Path(f).name))
    assert sorted(p[["file", "row"]].values.tolist()) == [["valid.csv", 3], ["valid.csv", 4]]
    assert p.set_index("row").loc[3, "problem"].startswith("absurd age 300")
