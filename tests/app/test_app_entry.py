"""app.py as a spawned child process runs it: the live worker's child (``multiprocessing``'s spawn
runs the parent's ``__main__`` file as ``__mp_main__``) imports no page, so it decorates no
``st.cache_data`` function outside a runtime (each logged "No runtime found" at every server start)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import runpy, sys
runpy.run_path(sys.argv[1], run_name="__mp_main__")
print(sorted(m for m in sys.modules if m == "pages" or m.startswith("pages.")))
"""


def test_the_live_workers_spawned_child_imports_no_page():
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "app.py")], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout
    assert "No runtime found" not in out.stderr
