"""cxrxai as a lab installs it: a wheel built from the tracked files (each file the app opens in
it), installed into a new virtual environment outside the checkout, run from another directory
(``cxrxai --help``, ``cxrxai precompute`` on a folder dataset with a shipped demo model named by
its name, ``cxrxai app`` with every page opened in Chromium) — and nothing written to the working
directory: caches go to the home (``CXRXAI_HOME``, else the user cache directory).

The new environment borrows this one's third-party packages through a ``.pth`` file (installing
torch again would take minutes and gigabytes) and gets cxrxai from the wheel alone, with
``--no-deps --no-index``: an import of the checkout would need the checkout on ``sys.path``,
which the test asserts it is not.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from cxrxai import paths
from cxrxai.store import open_store

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


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


#: The tracked paths whose files the app opens: each ships, at its place in an installed package
#: (pyproject's package-dir puts the repository root's app under ``cxrxai/_app/``).
SHIPPED = ["app.py", "pages", ".streamlit", "cxrxai", "data_cache/models", "data_cache/evidence"]
#: Tracked files under SHIPPED that must not ship, each with the reason (none today).
NOT_SHIPPED: dict[str, str] = {}


def _tracked(*paths: str) -> list[str]:
    """The files git tracks under ``paths`` (all of them without), as the working tree holds them,
    and the new ones it does not ignore: a clean clone's files, and a module not yet added is not
    missing from the wheel a contributor's edit is tested with."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *paths],
                         cwd=ROOT, capture_output=True, check=True).stdout
    return sorted({rel for rel in out.decode().split("\0") if rel and (ROOT / rel).is_file()})


def _in_wheel(rel: str) -> str:
    return rel if rel.startswith("cxrxai/") else f"cxrxai/_app/{rel}"


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
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the tracked files (the build writes ``build/`` and the egg-info
    beside its sources), by setuptools' own build backend without isolation: offline, 3 s of CPU.
    (``pip wheel --no-build-isolation`` failed inside pip 23.2's subprocess with setuptools 84:
    "'NoneType' object has no attribute 'has_pure_modules'".)"""
    work = tmp_path_factory.mktemp("pkg")
    src = work / "src"
    for rel in _tracked():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    _run([sys.executable, "-c", "import sys; from setuptools import build_meta; build_meta.build_wheel(sys.argv[1])",
          str(work / "dist")], cwd=src)
    return next((work / "dist").glob("cxrxai-*.whl"))


@pytest.mark.slow
def test_the_wheel_holds_every_tracked_file_the_app_opens(wheel):
    """Every tracked file of the app, its settings, its components, the library and the shipped
    weights and evidence is in the wheel, and nothing else: the Image explorer's grid component
    (``pages/_grid_component/``) was missing, and the page crashed in every installed copy."""
    with zipfile.ZipFile(wheel) as z:
        packaged = {name for name in z.namelist() if ".dist-info/" not in name}
    expected = {_in_wheel(rel) for rel in _tracked(*SHIPPED) if rel not in NOT_SHIPPED}
    missing, extra = sorted(expected - packaged), sorted(packaged - expected)
    assert not missing, f"tracked but not packaged (pyproject's package-data): {missing}"
    assert not extra, f"packaged but not a tracked file of the app: {extra}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory, wheel) -> Path:
    """A venv with cxrxai installed from the wheel; returns its bin directory."""
    work = wheel.parent.parent
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
def test_installed_wheel_runs_from_another_directory(installed, tmp_path):
    """From an empty directory and an empty home: ``--help``; ``precompute`` with a shipped demo
    model named by its name alone (read where the wheel put it: nothing copied, no training); and
    ``cxrxai app`` on that store, every page of its navigation opened in Chromium without an
    exception, served by modules of the wheel alone (the server's imports, logged, name none of
    the checkout)."""
    cwd, home, data = tmp_path / "elsewhere", tmp_path / "user", tmp_path / "data"
    for d in (cwd, home, data):
        d.mkdir()
    env = _env(home)
    cxrxai = str(installed / "cxrxai")
    site_dir = next(installed.parent.glob("lib/python*/site-packages"))
    where = _run([str(installed / "python"), "-c", "import cxrxai; print(cxrxai.__file__)"], cwd=cwd, env=env)
    assert where.stdout.strip() == str(site_dir / "cxrxai" / "__init__.py")  # the wheel's, not the checkout's
    assert "precompute" in _run([cxrxai, "--help"], cwd=cwd, env=env).stdout

    csv = _folder_dataset(data)
    _run([cxrxai, "precompute", "--dataset", "folder", "--root", "../data", "--data-option", f"csv={csv}",
          "--data-option", "labels=Effusion,Nodule", "--model", "demo-densenet121", "--store", "../s.duckdb",
          "--split", "all", "--explainers", "gradcam", "--workers", "1"], cwd=cwd, env=env)
    with open_store(tmp_path / "s.duckdb") as store:
        weights = store.models().set_index("model_id")["weights_path"].to_dict()
    assert weights == {"demo-densenet121": str(site_dir / "cxrxai/_app/data_cache/models/demo-densenet121.pt")}
    cache = home / ".cache" / "cxrxai"
    assert list((cache / "decoded").glob("decoded-*.npy")) and not (cache / "models").exists()  # nothing copied

    port, log = _free_port(), tmp_path / "server.log"
    with open(log, "w") as out:  # every import the server makes, with the file it came from
        server = subprocess.Popen([cxrxai, "app", "--store", "../s.duckdb", "--port", str(port)], cwd=cwd,
                                  env={**env, "PYTHONVERBOSE": "1"}, stdout=out, stderr=subprocess.STDOUT)
    try:
        assert _answers(f"http://127.0.0.1:{port}/_stcore/health", server), log.read_text()[-3000:]
        visited = _every_page_in_chromium(f"http://127.0.0.1:{port}", log)
    finally:
        server.terminate()
        server.wait(timeout=30)
    with pytest.raises(urllib.error.URLError) as gone:  # the signal stopped the server itself: none left
        urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5)
    assert isinstance(gone.value.reason, ConnectionRefusedError)  # refused, not slow to answer
    assert list(cwd.iterdir()) == []  # nothing written where the user stood
    sources = set(re.findall(r"(/[^\s']+\.py)(?!\w)", log.read_text()))
    assert {str(site_dir / "cxrxai/__init__.py"), str(site_dir / "cxrxai/_app/pages/_shell.py")} <= sources
    assert not [p for p in sources if p.startswith((f"{ROOT}/cxrxai/", f"{ROOT}/pages/", f"{ROOT}/app.py"))]
    if visited is None:
        pytest.skip(f"pages not opened: no Chromium at {CHROMIUM} (apt-get install chromium)")


#: Where Streamlit's frontend looks for its server below a page's own path first (a 404, then the root).
_PROBE = re.compile(r"/[^/?]+/_stcore/(health|host-config)$")


def _every_page_in_chromium(url: str, log: Path) -> list[str] | None:
    """Open each page of the app's navigation (``pages/_shell.py``'s SECTIONS) in one headless
    Chromium; fail on an exception or an error shown, or a file the server did not find (a
    component's script), with the server's last traceback (``log``: the app hides it). The titles
    opened; ``None`` without Chromium on a developer's machine (under CI, a failure)."""
    from pages._shell import DEFAULT_PAGE, SECTIONS

    if not Path(CHROMIUM).exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but no Chromium at {CHROMIUM}: the installed app's pages must be opened")
        return None
    from playwright.sync_api import sync_playwright

    pages = [("" if name == DEFAULT_PAGE else name, title) for entries in SECTIONS.values() for name, title, _ in entries]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            missing = []
            page.on("response", lambda r: missing.append(f"{r.status} {r.url}")
                    if r.status >= 400 and not _PROBE.search(r.url) else None)
            for path, title in pages:
                page.goto(f"{url}/{path}")
                page.get_by_role("heading", name=title).first.wait_for(timeout=90_000)
                page.wait_for_timeout(1500)
                shown = page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]')
                if shown.count():
                    text = log.read_text()
                    pytest.fail(f"{title}: {shown.first.inner_text()}\n{text[text.rfind('Traceback'):][:3000]}")
            assert not missing, "\n".join(missing)
        finally:
            browser.close()
    return [title for _, title in pages]


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
