"""Every path a user gives is checked before any work (issue 41, item 5): a store in a folder that does
not exist, an existing store in a read-only folder, a file where a folder is expected (and the reverse),
a missing dataset root, model file or output folder — each a typed error naming the path and what is
wrong, with nothing read, written or created (no status, lock or staging file beside the store).

Tests run as root, whom a read-only folder (chmod 555) does not stop: there the system's answer is
simulated (``os.access`` refusing to write in that folder, which is what a read-only mount answers root
and what mode 555 answers anyone else); run as another user, the folder is really made read-only.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PIL import Image

from cxrxai import paths
from cxrxai.cli import main
from cxrxai.errors import PathError, UnknownNameError


def _precompute(root: Path, store: Path, *extra: str, model: str | None = None) -> int:
    return main(["precompute", "--dataset", "folder", "--root", str(root), "--data-option",
                 f"csv={root / 'cases.csv'}", "--data-option", "labels=Effusion",
                 "--model", model or f"resnet18:{root / 'net.pt'}", "--store", str(store), *extra])


@pytest.fixture
def data(tmp_path) -> Path:
    """A folder dataset of one film (never read by these tests: each stops before)."""
    root = tmp_path / "films"
    root.mkdir()
    Image.new("L", (8, 8)).save(root / "a.png")
    (root / "cases.csv").write_text("path,Effusion\na.png,1\n")
    (root / "net.pt").write_bytes(b"not read")
    return root


@pytest.fixture(autouse=True)
def _nothing_read(monkeypatch):
    """A check that comes after any work fails these tests: reading the dataset or the model raises."""
    def refuse(*args, **kwargs):
        raise AssertionError("work started before the paths were checked")

    monkeypatch.setattr("cxrxai.data.adapters.load_dataset", refuse)
    monkeypatch.setattr("cxrxai.models.from_text.load_model_text", refuse)


def _beside(store: Path) -> list[str]:
    folder = store.parent
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_a_store_in_a_folder_that_does_not_exist(data, tmp_path, capsys):
    store = tmp_path / "no-such-folder" / "s.duckdb"
    assert _precompute(data, store) == 2
    err = capsys.readouterr().err
    assert f"--store {store}: its folder {store.parent} does not exist" in err, err
    assert f"mkdir -p {store.parent}" in err
    assert not store.parent.exists()  # not created, and no status file written in it


def _read_only(folder: Path, monkeypatch) -> None:
    """``folder`` refuses writes, as the system answers: for root (whom mode 555 does not stop) by
    ``os.access``, as on a read-only mount; for anyone else by the folder's mode."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return
    real = os.access

    def access(path, mode, *args, **kwargs):
        if Path(path) == folder and mode & os.W_OK:
            return False
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)


def test_an_existing_store_in_a_read_only_folder_is_refused_and_untouched(data, tmp_path, monkeypatch,
                                                                           capsys):
    shared = tmp_path / "shared"
    shared.mkdir()
    store = shared / "s.duckdb"
    store.write_bytes(b"a published store")
    _read_only(shared, monkeypatch)
    try:
        assert _precompute(data, store) == 2
    finally:
        shared.chmod(0o755)
    err = capsys.readouterr().err
    assert f"--store {store}: its folder {shared} is not writable by you (read-only)" in err, err
    assert "Traceback" not in err
    assert _beside(store) == ["s.duckdb"] and store.read_bytes() == b"a published store"


def test_a_store_under_a_file_is_a_file_where_a_folder_is_expected(data, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("a file")
    assert _precompute(data, tmp_path / "notes.txt" / "s.duckdb") == 2
    assert f"{tmp_path / 'notes.txt'} is a file, where a folder is expected" in capsys.readouterr().err


def test_a_store_that_is_a_folder(data, tmp_path, capsys):
    assert _precompute(data, tmp_path) == 2
    assert f"--store {tmp_path}: a folder, where a file is expected" in capsys.readouterr().err


def test_dataset_root_missing_or_a_file(data, tmp_path, capsys):
    store = tmp_path / "s.duckdb"
    assert main(["precompute", "--dataset", "folder", "--root", str(tmp_path / "gone"), "--model", "x.pt",
                 "--store", str(store)]) == 2
    assert f"--root {tmp_path / 'gone'}: no such folder" in capsys.readouterr().err
    assert main(["precompute", "--dataset", "folder", "--root", str(data / "a.png"), "--model", "x.pt",
                 "--store", str(store)]) == 2
    assert f"--root {data / 'a.png'}: a file, where a folder is expected" in capsys.readouterr().err
    assert not store.exists()


def test_a_missing_model_file_or_thresholds_file_stops_before_the_dataset_is_read(data, tmp_path, capsys):
    store = tmp_path / "s.duckdb"
    assert _precompute(data, store, model=f"resnet18:{tmp_path / 'run2' / 'last.ckpt'}") == 2
    assert f"--model {tmp_path / 'run2' / 'last.ckpt'}: " in capsys.readouterr().err
    assert _precompute(data, store, model=f"resnet18:{data / 'net.pt'}:{tmp_path / 'labels.json'}") == 2
    assert f"--model {tmp_path / 'labels.json'}: no such file" in capsys.readouterr().err
    assert _precompute(data, store, "--thresholds", str(tmp_path / "thr.csv")) == 2
    assert f"--thresholds {tmp_path / 'thr.csv'}: no such file" in capsys.readouterr().err
    assert not store.exists()


def test_read_commands_name_a_missing_store_and_out_files_their_folder(tmp_path, capsys):
    gone = tmp_path / "gone.duckdb"
    for argv in (["info"], ["report", "performance"], ["export", "table", "images", "--out", "x.csv"],
                 ["audit-data"]):
        assert main([*argv, "--store", str(gone)]) == 2
        assert f"--store {gone}: no such file (--store must be an existing store" in capsys.readouterr().err
    (tmp_path / "s.duckdb").write_bytes(b"")  # never opened: the --out check comes first
    out = tmp_path / "reports" / "perf.csv"
    assert main(["report", "performance", "--store", str(tmp_path / "s.duckdb"), "--out", str(out)]) == 2
    assert f"its folder {out.parent} does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("kind", sorted(paths.PATH_KINDS))
def test_check_path_accepts_what_each_kind_allows(kind, tmp_path):
    (tmp_path / "f.txt").write_text("x")
    good = tmp_path if kind == "folder" else tmp_path / ("new.csv" if kind in ("output", "store to write")
                                                         else "f.txt")
    assert paths.check_path(good, kind) == good


def test_check_path_refuses_an_unknown_kind_and_a_path_under_a_file(tmp_path):
    with pytest.raises(UnknownNameError):
        paths.check_path(tmp_path, "directory")
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(PathError, match="is a file, not a folder"):
        paths.check_path(tmp_path / "f.txt" / "a.png", "file", option="--map")
    if os.geteuid() != 0:  # root writes a mode-444 file
        os.chmod(tmp_path / "f.txt", 0o444)
        with pytest.raises(PathError, match="the file exists and is not writable"):
            paths.check_path(tmp_path / "f.txt", "output")
