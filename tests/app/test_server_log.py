"""A server's log from start to exit says nothing the app caused: no "No runtime found" (a page
module imported outside the server's runtime, as the live worker's spawned child did with app.py)
and no "nanobind: leaked" dump (a DuckDB connection still open at the interpreter's teardown)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from test_browser import _browser, _chromium, _free_port, _no_error  # noqa: F401 — the fixture skips

from benchmarks._browser import wait_healthy
from cxrxai.cli import main

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.server]


@pytest.fixture(scope="module")
def demo_quick_store(tmp_path_factory):
    """The demo's quick phase from the shipped snapshot (its films drawn when shown): the tiny store
    left no connection open at exit, the demo's did."""
    root = tmp_path_factory.mktemp("demo")
    store = root / "demo.duckdb"
    assert main(["demo", "--phase", "quick", "--store", str(store), "--data-dir", str(root / "phantoms")]) == 0
    return store


def test_a_server_started_used_and_stopped_logs_no_warning_of_ours(demo_quick_store, tmp_path):
    port, log = _free_port(), tmp_path / "server.log"
    env = {**os.environ, "CXRXAI_STORE": str(demo_quick_store), "CXRXAI_BACKGROUND": "0"}
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                                 "--server.headless", "true"], env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, 120)
            with _browser() as page:
                page.goto(url)
                page.get_by_role("heading", name="Overview").first.wait_for(timeout=90_000)
                page.goto(f"{url}/explorer")
                page.get_by_role("heading", name="Image explorer").first.wait_for(timeout=90_000)
                page.locator('iframe[title*="cxrxai_film"]').first.wait_for(timeout=90_000)
                page.wait_for_timeout(3000)  # the live worker's child started
                _no_error(page)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
    text = log.read_text()
    assert "No runtime found" not in text
    assert "nanobind: leaked" not in text
