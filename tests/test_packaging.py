"""cxrxai as a lab installs it: a wheel built from the tracked files, installed into a new virtual
environment outside the checkout, run from another directory (``cxrxai --help``, ``cxrxai
precompute`` on a folder dataset, ``cxrxai app`` until the server answers) — and nothing written to
the working directory: caches go to the home (``CXRXAI_HOME``, else the user cache directory).

The new environment borrows this one's third-party packages through a ``.pth`` file (installing
torch again would take minutes and gigabytes) and gets cxrxai from the wheel alone, with
``--no-deps --no-index``: an import of the checkout would need the checkout on ``sys.path``,
which the test asserts it is not.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from cxrxai import paths

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_of_cxrxai_is_in_the_wheel_list():
    """pyproject lists packages by hand (the app's two map onto the repository root): a new package
    missing from the list would be missing from every installed copy."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "cxrxai").rglob("__init__.py")}
    assert found | {"cxrxai._app", "cxrxai._app.pages"} == listed


def test_home_is_the_checkouts_data_cache_or_the_env(monkeypatch, tmp_path):
    monkeypatch.delenv("CXRXAI_HOME", raising=False)
    monkeypatch.delenv("CXRXAI_DATA_CACHE", raising=False)
    assert paths.home() == ROOT / "data_cache" and paths.app_dir() == ROOT
    monkeypatch.setenv("CXRXAI_HOME", str(tmp_path / "h"))
    assert paths.demo_store() == tmp_path / "h" / "demo.duckdb"
    model = paths.demo_model_path("demo-resnet18")  # shipped weights are copied into a new home
    assert model == tmp_path / "h" / "models" / "demo-resnet18.pt" and model.is_file()
    assert (tmp_path / "h" / "models" / "demo-densenet121.json").is_file()


def test_a_shipped_model_resolves_by_its_name_from_an_empty_home(monkeypatch, tmp_path):
    """``--model demo-densenet121`` reads the shipped weights where they are (nothing copied into
    the home); weights of that name in the home come first; an unknown name lists the names."""
    from cxrxai.errors import ModelError
    from cxrxai.models.from_text import load_model_text

    monkeypatch.setenv("CXRXAI_HOME", str(tmp_path / "h"))
    shipped = sorted(paths.shipped_models_dir().glob("*.pt"))
    assert paths.shipped_models_dir() / "demo-densenet121.pt" in shipped
    assert [paths.named_model(p.stem) for p in shipped] == shipped
    assert not (tmp_path / "h").exists()
    own = tmp_path / "h" / "models" / "demo-resnet18.pt"
    own.parent.mkdir(parents=True)
    own.touch()
    assert paths.named_model("demo-resnet18") == own
    with pytest.raises(ModelError, match="no model named 'demo-densenet12'.*'demo-densenet121'") as err:
        load_model_text("demo-densenet12")
    assert "--train" not in str(err.value)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A venv with cxrxai installed from a wheel of the tracked files; returns its bin directory."""
    work = tmp_path_factory.mktemp("pkg")
    src = work / "src"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, tracked.decode().split("\0")):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(work / "dist"),
          str(src)], cwd=work)
    wheel = next((work / "dist").glob("cxrxai-*.whl"))
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=work)
    venv_site = next(venv.glob("lib/python*/site-packages"))
    (venv_site / "_borrowed.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps", "--no-index",
          "-q", str(wheel)], cwd=work)
    return venv / "bin"


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    assert out.returncode == 0, f"{cmd} exited {out.returncode}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def _env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CXRXAI_", "PYTHON"))}
    return {**env, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}


def _folder_dataset(root: Path) -> Path:
    rng = np.random.default_rng(0)
    rows = []
    for k in range(6):
        Image.fromarray(rng.integers(0, 255, (80, 72), dtype=np.uint8)).save(root / f"film{k}.png")
        rows.append({"path": f"film{k}.png", "Effusion": k % 2, "Nodule": 1 - k % 2, "sex": "FM"[k % 2],
                     "age": 30 + k, "split": "test"})
    pd.DataFrame(rows).to_csv(root / "cases.csv", index=False)
    return root / "cases.csv"


@pytest.mark.slow
def test_installed_wheel_runs_from_another_directory(installed, tiny_model_path, tmp_path):
    cwd, home, data = tmp_path / "elsewhere", tmp_path / "user", tmp_path / "data"
    for d in (cwd, home, data):
        d.mkdir()
    env = _env(home)
    cxrxai = str(installed / "cxrxai")
    where = _run([str(installed / "python"), "-c", "import cxrxai; print(cxrxai.__file__)"], cwd=cwd, env=env)
    assert str(installed.parent) in where.stdout and str(ROOT) not in where.stdout  # the wheel's, not the checkout's
    assert "precompute" in _run([cxrxai, "--help"], cwd=cwd, env=env).stdout

    csv = _folder_dataset(data)
    _run([cxrxai, "precompute", "--dataset", "folder", "--root", "../data", "--data-option", f"csv={csv}",
          "--data-option", "labels=Effusion,Nodule", "--model", str(tiny_model_path), "--store", "../s.duckdb",
          "--split", "all", "--explainers", "gradcam", "--workers", "1"], cwd=cwd, env=env)
    assert (tmp_path / "s.duckdb").is_file()
    assert list((home / ".cache" / "cxrxai" / "decoded").glob("decoded-*.npy"))  # the cache went to the home

    port = _free_port()
    server = subprocess.Popen([cxrxai, "app", "--store", "../s.duckdb", "--port", str(port)], cwd=cwd, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert _answers(f"http://127.0.0.1:{port}/_stcore/health", server), server.stdout.read() if server.poll() else ""
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read().decode()
        assert "<div id=\"root\">" in page or "streamlit" in page.lower()
    finally:
        server.terminate()
        server.wait(timeout=30)
    with pytest.raises(urllib.error.URLError) as gone:  # the signal stopped the server itself: none left
        urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5)
    assert isinstance(gone.value.reason, ConnectionRefusedError)  # refused, not slow to answer
    assert list(cwd.iterdir()) == []  # nothing written where the user stood


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str, proc: subprocess.Popen, timeout: float = 90) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        try:
            if urllib.request.urlopen(url, timeout=2).read().strip() == b"ok":
                return True
        except OSError:
            time.sleep(0.5)
    return False
