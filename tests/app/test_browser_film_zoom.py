"""Headless Chromium: the explorer's zoom across new films (``pages/_film_component/zoom.js``).

Issue 42 item 9: another explainer of the same case kept the zoom only when no widget above the
film changed; to or from an explainer with controls (Occlusion) Streamlit mounts a new frame and
the zoom was lost. Issue 41 item 8: every case change opened at the full film; "Keep zoom" (PACS'
linked views) opens the next case, by Next/Previous or a row of the case grid, on the same
film-relative region, and without it the next case opens whole.
"""

from __future__ import annotations

import time

import pytest
from test_browser import _browser, _chromium, _no_error, app_url, choose  # noqa: F401 — fixtures
from test_browser_film import RANGES, SETTLE_MS, zoom_in
from test_browser_grid import grid_frame, shown, wait_shown

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: The view as fractions of the film's extent (its image trace's pixels times their size; y downwards)
VIEW = """() => { const l = document.getElementById('film')._fullLayout, f = shown.payload.films[0];
  const t = shown.figure.data[f.trace], w = (t.dx || 1) * f.width, h = (t.dy || 1) * f.height;
  return [l.xaxis.range.map((v) => v / w), l.yaxis.range.map((v) => (h - v) / h)]; }"""
WHOLE = [[0.0, 1.0], [0.0, 1.0]]
#: The revision of the film a frame has drawn, else null
DRAWN = "window.filmStats && window.filmStats.applied > 0 ? window.filmStats.rev : null"
NEXT, PREVIOUS = "Next case ▶", "◀ Previous case"


def film(page, other_than: str | None = None, timeout_s: float = 120):
    """The film component's frame once it has drawn a film (other than the revision ``other_than``):
    a rerun may mount a new frame, and the old one may linger a moment."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for frame in [f for f in page.frames if "cxrxai_film" in f.url]:
            try:
                rev = frame.evaluate(DRAWN)
            except Exception:  # noqa: BLE001 — a frame being replaced
                continue
            if rev is not None and rev != other_than:
                return frame
        page.wait_for_timeout(50)
    raise AssertionError(f"no film other than {other_than} drawn within {timeout_s:.0f} s")


def near(a, b, tol: float = 1e-6) -> bool:
    return all(abs(x - y) <= tol for pa, pb in zip(a, b) for x, y in zip(pa, pb))


def after(page, frame, act):
    """``act(page)``, then the frame of the next film drawn."""
    rev = frame.evaluate("window.filmStats.rev")
    act(page)
    return film(page, rev)


def _open(page, app_url, query: str = "", quiet_s: float = 3, timeout_s: float = 180):  # noqa: F811
    """The explorer's film once the page's first runs are done: the same frame with the same film
    for ``quiet_s`` (a zoom made earlier could be lost to a frame those runs mount)."""
    page.goto(f"{app_url}/explorer{query}")
    page.get_by_role("heading", name="Image explorer").first.wait_for(timeout=90_000)
    deadline, last, since = time.monotonic() + timeout_s, None, time.monotonic()
    while time.monotonic() < deadline:
        frame = film(page)
        now = (frame, frame.evaluate("window.filmStats.rev"))
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > quiet_s:
            return frame
        page.wait_for_timeout(250)
    raise AssertionError("the explorer's film never settled")


def test_the_zoom_stays_when_only_the_explainer_changes(app_url):  # noqa: F811
    with _browser() as page:
        frame = _open(page, app_url, "?explainer=gradcam")
        zoom_in(page, frame)
        zoomed = frame.evaluate(RANGES)
        for explainer in ("Occlusion", "Grad-CAM"):  # to an explainer with controls, and back
            frame = after(page, frame, lambda p, e=explainer: choose(p, "Explainer", e))
            page.wait_for_timeout(500)
            frame = film(page)
            assert frame.evaluate(RANGES) == zoomed, explainer
        _no_error(page)


def test_keep_zoom_carries_the_zoom_to_the_next_case_and_without_it_it_opens_whole(app_url):  # noqa: F811
    with _browser() as page:
        frame = _open(page, app_url)
        zoom_in(page, frame)
        view = frame.evaluate(VIEW)
        assert not near(view, WHOLE)
        frame.locator("#keep_zoom").check()
        page.wait_for_timeout(SETTLE_MS + 1500)  # the setting reaches Python, its rerun done
        case = shown(page)
        for step in (NEXT, PREVIOUS):
            frame = after(page, frame, lambda p, s=step: p.get_by_role("button", name=s, exact=True).click())
            assert shown(page) != case and near(frame.evaluate(VIEW), view), step
            case = shown(page)
        grid = grid_frame(page)
        row = grid.locator("tr.row:not(.selected)").first
        frame = after(page, frame, lambda p: row.click())
        assert shown(page) != case and near(frame.evaluate(VIEW), view)  # a row of the case grid
        assert frame.locator("#keep_zoom").is_checked()
        frame.locator("#keep_zoom").uncheck()
        page.wait_for_timeout(SETTLE_MS + 1500)
        case = shown(page)
        frame = after(page, frame, lambda p: p.get_by_role("button", name=NEXT, exact=True).click())
        wait_shown(page, shown(page))
        assert shown(page) != case and near(frame.evaluate(VIEW), WHOLE)
        _no_error(page)
