"""Headless Chromium and the background build's sidebar: Stop changes what the page itself says.

The sidebar's status is a fragment (it refreshes itself every few seconds); a click in it reruns
only the fragment unless it asks for more, which AppTest cannot show (it always runs the whole
script), so this runs in a browser. The build is a stand-in process the test owns.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from test_background_status import quick_cache  # noqa: F401 — fixture
from test_browser import _browser, _chromium, _serve  # noqa: F401 — fixtures

from cxrxai.pipeline import background
from cxrxai.store.status import process_start

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PLAN = [[1, "", "maps", "tiny-densenet121"], [1, "", "localization", "tiny-densenet121"],
        [1, "", "trust", "tiny-densenet121"], [1, "", "fidelity", "tiny-densenet121"]]


def test_stop_in_the_sidebar_changes_the_pages_own_empty_state_at_once(quick_cache):  # noqa: F811
    """Before: after Stop the sidebar said "stopped" while the page beside it still said the running
    build computes the trust scores at step 3 (and after Resume, "stopped" beside a running build)."""
    store = quick_cache / "demo.duckdb"
    build = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        background.status_path(store).write_text(json.dumps({
            "pid": build.pid, "pid_start": process_start(build.pid), "phase": "evidence", "state": "running",
            "stage": "maps ig", "done": 1, "total": 9, "plan": PLAN, "stages": 4, "rounds": 1, "round": 1,
            "stage_index": 1, "step": "maps", "model": "tiny-densenet121"}))
        with _serve(store, CXRXAI_DATA_CACHE=str(quick_cache), CXRXAI_BACKGROUND="0") as url, \
                _browser() as page:
            page.goto(f"{url}/trust")
            main = page.locator('[data-testid="stMain"]')
            main.get_by_text(re.compile("the background build computes it at step 3 of 4")).first.wait_for(
                timeout=90_000)
            page.locator('[data-testid="stSidebar"]').get_by_role("button", name="Stop").click()
            main.get_by_text(re.compile("the background build stopped at step 1 of 4")).first.wait_for(
                timeout=30_000)
            assert build.wait(timeout=10) < 0  # the stand-in was asked to stop (SIGTERM)
            assert "computes it at step" not in main.inner_text()
    finally:
        build.kill()
        build.wait()
