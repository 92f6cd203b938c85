"""Headless Chromium: the explorer's film answers display clicks in the browser and keeps the zoom.

Zoom into the film by dragging, then flick the map off and on and move the opacity in the film's
own controls: the axis ranges stay, the map's colour bar and contour hide with it, the picture
changes, and no click reruns the page (the settings reach the server once, after the clicks, for
the PNG export, and that rerun draws nothing again).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from test_browser import ARTIFACTS, _browser, _chromium, _no_error, _serve, app_url  # noqa: F401 — fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RANGES = "() => { const l = document.getElementById('film')._fullLayout; return [l.xaxis.range, l.yaxis.range]; }"
#: The film as shown (the canvas under the plot area, see pages/_film_component/canvas.js)
SOURCE = "() => document.getElementById('canvas').toDataURL()"
#: Whether each of the map's layers is drawn: the colour bar, the scored contour (layers.js hides
#: them on the page, Plotly keeps them)
LAYERS = """() => { const gd = document.getElementById('film');
  const bars = [...gd.querySelectorAll('.colorbar')].map((e) => getComputedStyle(e).visibility !== 'hidden');
  const contour = [...gd.querySelectorAll('.scatterlayer .trace')]
    .filter((g) => g.__data__[0].trace.name.startsWith('Otsu'))
    .map((g) => getComputedStyle(g).display !== 'none');
  return [...bars, ...contour]; }"""


def film_frame(page, timeout_ms: int = 120_000):
    """The film component's frame once it has drawn the film."""
    page.locator('iframe[title*="cxrxai_film"]').first.wait_for(timeout=timeout_ms)
    frame = next(f for f in page.frames if "cxrxai_film" in f.url)
    frame.wait_for_function("window.filmStats && window.filmStats.applied > 0", timeout=timeout_ms)
    return frame


def zoom_in(page, frame) -> None:
    """Drag a box over the middle of the film (Plotly's zoom)."""
    page.locator('iframe[title*="cxrxai_film"]').first.scroll_into_view_if_needed()
    box = frame.locator(".nsewdrag").first.bounding_box()
    x0, y0 = box["x"] + 0.35 * box["width"], box["y"] + 0.3 * box["height"]
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x0 + 0.25 * box["width"], y0 + 0.3 * box["height"], steps=8)
    page.mouse.up()
    page.wait_for_timeout(300)


def click_and_wait(frame, act) -> float:
    """Do ``act(frame)`` and wait for the film to be redrawn for it (not for an earlier repaint still
    due, e.g. a zoom's under load: only a click's own drawing sets ``lastMs``); the click-to-drawn
    milliseconds."""
    frame.evaluate("window.filmStats.lastMs = null")
    act(frame)
    frame.wait_for_function("window.filmStats.lastMs !== null", timeout=10_000)
    return frame.evaluate("window.filmStats.lastMs")


def test_display_clicks_act_in_the_browser_and_keep_the_zoom(app_url):  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    with _browser() as page:
        page.goto(f"{app_url}/explorer")
        page.get_by_role("heading", name="Image explorer").first.wait_for(timeout=90_000)
        frame = film_frame(page)
        full = frame.evaluate(RANGES)
        zoom_in(page, frame)
        zoomed = frame.evaluate(RANGES)
        assert zoomed != full  # the drag zoomed in
        runs = page.evaluate("performance.getEntriesByType('resource').length")
        on, shown = frame.evaluate(SOURCE), frame.evaluate(LAYERS)
        assert shown and all(v is True for v in shown)  # colour bar and scored contour with the map
        click_and_wait(frame, lambda f: f.locator("#show_map").click())
        off = frame.evaluate(SOURCE)
        assert off != on and all(v is False for v in frame.evaluate(LAYERS))  # the map and its layers gone
        assert frame.evaluate(RANGES) == zoomed
        click_and_wait(frame, lambda f: f.locator("#show_map").click())
        assert frame.evaluate(SOURCE) == on and frame.evaluate(LAYERS) == shown  # the same picture back
        click_and_wait(frame, lambda f: f.locator("#alpha").fill("0.2"))
        assert frame.evaluate(SOURCE) not in (on, off) and frame.evaluate(RANGES) == zoomed
        # no request went to the server for the clicks (a rerun would fetch nothing either, but the
        # settings are sent once after them): the zoom survives that rerun too
        assert page.evaluate("performance.getEntriesByType('resource').length") == runs
        page.wait_for_timeout(2500)
        assert frame.evaluate(RANGES) == zoomed and frame.evaluate("document.getElementById('alpha').value") == "0.2"
        _no_error(page)
        page.screenshot(path=str(ARTIFACTS / "explorer-film-zoomed.png"), full_page=True)


#: How long after the last display click the film sends its settings to Python (film.js's own)
SETTLE_MS = int(re.search(r"const SETTLE_MS = (\d+);", (Path(__file__).resolve().parents[2] / "pages"
                          / "_film_component" / "film.js").read_text()).group(1))

#: Every film's canvas (compare, grid: one per panel) and every axis's range
CANVASES = "() => [...document.querySelectorAll('#stage > canvas')].map((c) => c.toDataURL())"
ALL_RANGES = """() => { const l = document.getElementById('film')._fullLayout;
  return Object.keys(l).filter((k) => /^[xy]axis\\d*$/.test(k)).sort().map((k) => [k, l[k].range]); }"""


def repainted(frame, before: list[str], timeout_s: float = 5) -> list[str]:
    """The films' canvases once each differs from ``before`` (every film painted for the click, under
    load a frame or two apart), or as they are after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        after = frame.evaluate(CANVASES)
        if all(a != b for a, b in zip(after, before)) or time.monotonic() > deadline:
            return after
        frame.wait_for_timeout(100)


def settled(page, frame, quiet_ms: int = 3000, timeout_s: float = 180, *, maps: bool = False) -> None:
    """Wait until no map computes (no Cancel) and the drawn films stay the same for ``quiet_ms``
    (``maps``: and every film has its map: a live one may not have started yet, under load)."""
    deadline, last, since = time.monotonic() + timeout_s, None, time.monotonic()
    missing = "shown.payload.films.filter((f) => !f.heat).length" if maps else "0"
    while time.monotonic() < deadline:
        now = (frame.evaluate("window.filmStats.rev"), page.get_by_role("button", name="Cancel").count(),
               frame.evaluate(missing))
        if now != last:
            last, since = now, time.monotonic()
        elif not now[1] and not now[2] and time.monotonic() - since > quiet_ms / 1000:
            return
        page.wait_for_timeout(250)
    raise AssertionError(f"the films never settled: {last}")


@pytest.mark.parametrize("layout,films", [("compare", 2), ("grid", 4)])
def test_compare_and_grid_answer_display_clicks_in_the_browser_for_every_film(app_url, layout, films):  # noqa: F811
    with _browser() as page:
        sent: list = []  # what the page sends the server (a rerun is one of these)
        page.on("websocket", lambda ws: ws.on("framesent", lambda frame: sent.append(frame)))
        page.goto(f"{app_url}/explorer?layout={layout}&explainer=gradcam")
        page.get_by_role("heading", name="Image explorer").first.wait_for(timeout=90_000)
        frame = film_frame(page)
        settled(page, frame, maps=True)
        assert len(frame.evaluate(CANVASES)) == films  # one component, a canvas per panel
        zoom_in(page, frame)
        zoomed, drawn = frame.evaluate(ALL_RANGES), frame.evaluate("window.filmStats.rev")
        count, posted, changes = len(sent), frame.evaluate("window.filmStats.values.length"), {}
        # the grey window changes every film's picture; opacity and map off change the films whose
        # map colours pixels over the floor (the same films for both; at least one)
        for name, act in (("window", lambda f: f.locator("#lo").fill("30")),
                          ("opacity", lambda f: f.locator("#alpha").fill("0.2")),
                          ("map off", lambda f: f.locator("#show_map").click())):
            before = frame.evaluate(CANVASES)
            click_and_wait(frame, act)
            after = repainted(frame, before)
            changes[name] = [a != b for a, b in zip(after, before)]
            assert frame.evaluate(ALL_RANGES) == zoomed, name  # the zoom kept
        assert all(changes["window"]), changes
        assert any(changes["opacity"]) and changes["opacity"] == changes["map off"], changes
        page.wait_for_timeout(2500)  # the settings reach the server, for the PNG downloads
        # what went to the server: the film's settled settings only, never a message per click (each
        # value left SETTLE_MS or more after the last click), and nothing else reran the page
        values = frame.evaluate("window.filmStats.values")[posted:]
        assert SETTLE_MS >= 300 and values and all(ms >= SETTLE_MS for ms in values), values  # debounced
        assert count < len(sent) <= count + len(values), (count, len(sent), values)
        assert frame.evaluate(ALL_RANGES) == zoomed
        assert frame.evaluate("window.filmStats.rev") == drawn and frame.evaluate(CANVASES) == after
        _no_error(page)
        page.locator('iframe[title*="cxrxai_film"]').first.screenshot(path=str(ARTIFACTS / f"explorer-{layout}.png"))
