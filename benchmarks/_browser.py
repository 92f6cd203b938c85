"""What the benchmarks that time the app in a real browser share: waiting for the server, and
Debian's Chromium driven by Playwright (never ``playwright install``)."""

from __future__ import annotations

import time
import urllib.request

CHROMIUM = "/usr/bin/chromium"
#: Headless in a container: no sandbox, no GPU, and none of Chromium's own traffic.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def wait_healthy(url: str, limit_s: float) -> float:
    """Seconds until the Streamlit server at ``url`` answers its health check; SystemExit after ``limit_s``."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return time.monotonic() - t0
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the app at {url} did not answer within {limit_s:.0f} s")


def chromium(playwright):
    """A headless Chromium from a ``sync_playwright()`` context."""
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


def open_picker(page, label: str, tries: int = 4) -> list[str]:
    """Open the selectbox labelled ``label``; its options' texts. A rerun closes an open dropdown
    (the film's settings reach the server after display clicks), so opening it is retried."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    options, box = page.get_by_role("option"), page.locator('[data-testid="stSelectbox"]').filter(has_text=label)
    for _ in range(tries - 1):
        box.first.click()
        try:
            options.first.wait_for(timeout=5_000)
            return options.all_inner_texts()
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    box.first.click()
    options.first.wait_for(timeout=20_000)
    return options.all_inner_texts()


def pick(page, label: str, option: str) -> None:
    """Choose ``option`` in the selectbox labelled ``label``."""
    open_picker(page, label)
    page.get_by_role("option", name=option, exact=True).click()
