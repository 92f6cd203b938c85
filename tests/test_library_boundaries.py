"""The library never imports Streamlit and importing it has no side effects."""

import subprocess
import sys
from pathlib import Path

CHECK = """
import sys, importlib, pkgutil, warnings
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "streamlit" or name.startswith("streamlit."):
            raise ImportError("the library must not import streamlit")
sys.meta_path.insert(0, Block())
# Third-party imports may add their own filters; what is checked is that cxrxai adds none.
for dep in ("numpy", "scipy", "pandas", "torch", "torchvision", "sklearn.metrics", "duckdb", "cv2",
            "pycocotools.mask", "plotly.graph_objects", "skimage", "statsmodels.api", "captum.attr"):
    importlib.import_module(dep)
filters = list(warnings.filters)
import cxrxai
for mod in pkgutil.walk_packages(cxrxai.__path__, "cxrxai."):
    if mod.name.endswith("__main__"):
        continue
    importlib.import_module(mod.name)
assert warnings.filters == filters, "importing cxrxai changed the warning filters"
print("ok")
"""


def test_library_imports_without_streamlit_and_without_side_effects():
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


LIGHT = """
import sys
import cxrxai.pipeline, cxrxai.pipeline.background
heavy = sorted(m for m in ("torch", "torchvision", "captum", "sklearn", "statsmodels") if m in sys.modules)
print(heavy)
from cxrxai.pipeline import build_demo, stage_names  # the package's names still import at first use
assert build_demo.__module__ == "cxrxai.pipeline.demo"
print("torch" in sys.modules, "predictions" in stage_names())
"""


def test_the_build_supervisor_imports_without_the_models():
    """What the app's background build supervisor and a status read import (``cxrxai.pipeline`` and its
    ``background``, the store among them) loads neither torch nor the models nor the explainers: the
    package's names import at first use (4.7 s of CPU to 1.8 s per such process), the store and the
    model specs import torch only to compute (1.8 s to 0.5 s), and the stage registry still finds
    every stage."""
    out = subprocess.run([sys.executable, "-c", LIGHT], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[]", "True True"]


REGISTRY = """
import sys
from types import SimpleNamespace
import numpy as np
import cxrxai.explain as explain, cxrxai.live, pages._common, pages._viewer
for name in explain.method_names():
    method = explain.get(name)
    setting = explain.Setting.stored(name, method.stored_defaults)
    assert setting.key and method.controls is not None and method.run is not None
grid = explain.OcclusionGrid(np.zeros((2, 2), np.float32), 2, 2, 4, 4)
assert explain.native_map(SimpleNamespace(kind="cam", values=grid.scores, params={})) is grid.scores
print(sorted(m for m in ("torch", "torchvision", "captum") if m in sys.modules))
print(repr(explain.get("gradcam").run))
"""


def test_the_registry_the_live_worker_and_the_pages_import_no_torch():
    """Reading the explainer registry (every method's parameters and settings), a stored map at its
    native size, the live worker and the pages' shared modules load no torch, torchvision or Captum
    (~3 s of CPU before a server answers its first page): each built-in method's
    computation is named by ``deferred`` and imported when a map is computed."""
    out = subprocess.run([sys.executable, "-c", REGISTRY], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[]", "deferred('cxrxai.explain.cam', 'gradcam_run')"]


APP = """
import os, sys
from cxrxai.cli import main

def execve(path, cmd, env):  # where the command would become the Streamlit server
    print(cmd[2:4], sorted(m for m in ("torch", "torchvision", "captum", "cxrxai.pipeline.stages") if m in sys.modules))
    sys.exit(0)

os.execve = execve
main(["app", "--store", sys.argv[1]])
"""


def test_cxrxai_app_starts_the_server_without_loading_the_models(tmp_path):
    """``cxrxai app`` builds its own command's options only: every command's (``precompute`` lists the
    stages and the explainers) imported torch and every pipeline module before the server started
    (3.8 to 0.8 s of CPU)."""
    store = tmp_path / "s.duckdb"
    store.touch()
    out = subprocess.run([sys.executable, "-c", APP, str(store)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['streamlit', 'run'] []"


def test_cxrxai_help_lists_every_command_without_loading_the_models():
    """``cxrxai --help`` names the commands and their help lines, which need no command's options:
    building every command's (``precompute`` lists the stages, and the shortcut stage's module loads
    torch and statsmodels) cost 3.0–3.5 s of CPU; the list alone costs 0.5–0.6 s. Run as a user
    runs it, ``-X importtime`` naming every module the process imported."""
    from cxrxai.cli import commands

    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "cxrxai", "--help"], capture_output=True,
                         text=True, cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    imported = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "cxrxai.cli._data" in imported  # the listing is complete: every command's module was read
    heavy = sorted(m for m in imported if m.split(".")[0] in ("torch", "torchvision", "captum", "statsmodels"))
    assert heavy == []
    listed = {line.split()[0] for line in out.stdout.splitlines() if line.startswith("    ") and line.split()}
    assert set(commands()) <= listed
