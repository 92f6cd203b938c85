"""Re-take the README's screenshots (the image explorer and the subgroups page) on the demo store.

    .venv/bin/python data_cache/readme/capture.py      # needs Debian's chromium and the demo store

Starts the app, opens the explorer on a true-positive case, switches the explainer to occlusion,
moves the patch slider (a live recompute on this machine's CPU or GPU), waits for the
recomputed map and saves ``explorer.png``; then saves the subgroups page as ``subgroups.png``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)],
                            cwd=ROOT, env=dict(os.environ), stdout=open("/tmp/capture_server.log", "w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                        args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1500, "height": 1450}, device_scale_factor=1)
            page.goto(f"{url}/explorer")
            page.get_by_role("heading", name="Image explorer").first.wait_for(timeout=120_000)
            page.locator('[data-testid="stSelectbox"]').filter(has_text="Finding").first.click()
            page.get_by_role("option", name="Pneumonia", exact=True).click()
            page.wait_for_timeout(1500)
            page.locator('[data-testid="stMultiSelect"]').filter(has_text="Outcome").first.click()
            page.get_by_role("option", name="TP", exact=True).click()
            page.keyboard.press("Escape")
            page.wait_for_timeout(2000)
            page.locator('[data-testid="stSelectbox"]').filter(has_text="Explainer").first.click()
            page.get_by_role("option", name="occlusion", exact=True).click()
            page.get_by_text("Patch (px)").first.wait_for(timeout=60_000)
            slider = page.locator('[data-testid="stSlider"]').filter(has_text="Stride (px)").first.get_by_role("slider")
            slider.focus()
            slider.press("ArrowLeft")
            live = page.get_by_text("recomputed live").first
            live.wait_for(timeout=300_000)
            page.wait_for_timeout(2000)
            page.get_by_text("Patch (px)").first.scroll_into_view_if_needed()
            page.mouse.wheel(0, 560)
            page.wait_for_timeout(1000)
            page.screenshot(path=str(HERE / "explorer.png"), full_page=False)
            page.goto(f"{url}/subgroups")
            page.get_by_role("heading", name="Subgroups").first.wait_for(timeout=120_000)
            page.wait_for_timeout(4000)
            page.screenshot(path=str(HERE / "subgroups.png"), full_page=False)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    print(f"written {HERE / 'explorer.png'} and {HERE / 'subgroups.png'}")


if __name__ == "__main__":
    main()
