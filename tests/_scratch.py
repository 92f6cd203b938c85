"""A scratch copy of the package, the way a contributor's checkout looks after following a recipe:
``cxrxai/`` (and, for a page, ``pages/`` and ``app.py``) copied into a temporary folder, the new
files written there and nothing else; code then runs in a subprocess with that copy first on
``sys.path``, so the registries find the new modules the way the installed package would."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import cxrxai

ROOT = Path(cxrxai.__file__).resolve().parents[1]


def scratch_copy(tmp_path: Path, files: dict[str, str], *, app: bool = False) -> Path:
    """``tmp_path/pkg`` holding a copy of ``cxrxai/`` (with ``pages/`` and ``app.py`` when ``app``)
    and ``files`` (path in the copy → text, dedented) written into it."""
    scratch = tmp_path / "pkg"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "cxrxai", scratch / "cxrxai", ignore=ignore)
    if app:
        shutil.copytree(ROOT / "pages", scratch / "pages", ignore=ignore)
        shutil.copy(ROOT / "app.py", scratch / "app.py")
    for rel, text in files.items():
        (scratch / rel).write_text(textwrap.dedent(text))
    return scratch


def run_in(scratch: Path, code: str, *args: str, home: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """``python -c code args…`` in ``scratch`` with it first on ``sys.path`` (and ``HOME`` at
    ``home``: nothing of the user's is read); the completed process, its output as text."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=scratch,
                          env={"PYTHONPATH": str(scratch), "PATH": "/usr/bin:/bin", "HOME": str(home)},
                          capture_output=True, text=True, timeout=timeout)
