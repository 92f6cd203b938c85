"""A click costs no full garbage collection: Streamlit's default collects after every run and
fragment run, which with torch, scikit-learn and SciPy loaded held the GIL 150-350 ms after each
click on 2 cores (``.streamlit/config.toml``: ``runner.postScriptGC``; docs/performance.md).
AppTest's script runner never collects, so the server's own configuration is read here."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

ROOT = Path(__file__).resolve().parents[2]
OPTION = "runner.postScriptGC"


def test_the_server_started_from_the_repository_runs_no_collection_after_a_run():
    # as `make app` and the benchmarks start it: from the repository's root, a fresh config read
    read = f"from streamlit import config; print(config.get_option({OPTION!r}))"
    shown = subprocess.run([sys.executable, "-c", read], cwd=ROOT, capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "False", shown.stdout + shown.stderr
    # the option is the one the server's script runner asks before its collection after each run
    finished = inspect.getsource(ScriptRunner._on_script_finished)
    assert OPTION in finished and "gc.collect" in finished
