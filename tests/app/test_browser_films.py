"""Headless Chromium: the compare and grid layouts' films answer a display click in the browser.

The film component's page is opened on its own (no app) with what the app sends for a two-film
compare (two cases of different sizes: zoom per film, one map dimmed as while a new one computes)
and a 2 × 2 grid (one case, four maps: zoom shared). On every film, the colour on its canvas at
the screen point its own Plotly axes give for a film pixel's centre is ``film_grid``'s colour for
that pixel of that panel, at the opening display and after each display click; each click changes
every film's canvas, keeps every film's zoom (one film zoomed, the other not) and sends nothing
to the server (the settings go back once, after the clicks, as one rerun); the panels' titles are
clear of every film; the export is what is on screen, film by film.
"""

from __future__ import annotations

import base64

import cv2
import numpy as np
import pytest
from test_browser import _browser, _chromium  # noqa: F401 — the fixture skips without Chromium

from cxrxai.present import film
from cxrxai.present.film_view import browser_film
from pages import _film_view

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: Film pixels (row, column) sampled: inside the zoomed view below, off the contours (drawn over)
PIXELS = [(40, 40), (41, 40), (40, 41), (52, 63), (66, 47), (70, 70), (45, 58)]
#: Each pixel's centre on the screen by film k's axes and the colour there: on its canvas
#: (device pixels from the plot area's corner) or in the exported PNG (`url`)
PROBE = """async ([k, pixels, url]) => {
  const gd = document.getElementById('film'), n = k ? String(k + 1) : '';
  const xa = gd._fullLayout['xaxis' + n], ya = gd._fullLayout['yaxis' + n];
  const dpr = window.devicePixelRatio || 1;
  const at = pixels.map(([r, c]) => [xa.l2p(c), ya.l2p(r)]);
  let ctx = document.getElementById(k ? `canvas-${k}` : 'canvas').getContext('2d'), left = 0, top = 0;
  let scale = dpr;
  if (url) {
    const img = new Image();
    img.src = url;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.width;
    c.height = img.height;
    ctx = c.getContext('2d');
    ctx.drawImage(img, 0, 0);
    [left, top, scale] = [xa._offset, ya._offset, img.width / gd._fullLayout.width];
  }
  const colour = ([x, y]) => ctx.getImageData(Math.floor((x + left) * scale), Math.floor((y + top) * scale),
                                              1, 1);
  return at.map((p) => Array.from(colour(p).data.slice(0, 3)));
}"""
#: Every film's canvas as a PNG data URL, in film order
CANVASES = "() => [...document.querySelectorAll('#stage > canvas')].map((c) => c.toDataURL())"
#: Every axis's range
RANGES = """() => { const l = document.getElementById('film')._fullLayout;
  return Object.keys(l).filter((k) => /^[xy]axis\\d*$/.test(k)).sort().map((k) => [k, l[k].range]); }"""
#: Screen boxes [left, top, right, bottom] of the panels' titles and of the films' canvases
BOXES = """() => {
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  return [[...document.querySelectorAll('#film .annotation-text')].map(box),
          [...document.querySelectorAll('#stage > canvas')].map(box)]; }"""
#: Longer than the component waits after a display click before it sends the settings (film.js)
SETTLE_MS = 900
#: The settings messages the component sends to Streamlit (each one is a rerun there)
COUNT_SENT = """() => { window.sent = 0; window.addEventListener('message', (e) => {
  if (e.data && e.data.type === 'streamlit:setComponentValue') window.sent += 1; }); }"""


def _panels(layout: str) -> list[dict]:
    rng = np.random.default_rng(7)
    shapes = [(150, 130), (120, 160)] if layout == "compare" else [(140, 140)] * 4
    panels = []
    for k, shape in enumerate(shapes):
        image = rng.integers(0, 256, shape).astype(np.uint8)
        seg = np.zeros(shape, bool)
        seg[90:110, 90:110] = True  # its contour away from the sampled pixels
        panels.append({"image": image, "saliency": rng.random((12, 12)).astype(np.float32),
                       "segmentation": seg, "dim": 0.35 if k == 1 else 1.0,
                       "title": f"panel {k}<br>line two"})  # two lines, as the layouts' titles
    return panels


def _args(panels: list[dict], columns: int) -> dict:
    """What the compare or grid layout sends the component for ``panels`` (pages/_multi.py)."""
    settings = _film_view.browser_settings(None, "cam", 0.2)
    fig = film.film_grid(panels, columns=columns, revision=film.view_revision("c"), height_per_row=420,
                         **_film_view.as_display(settings))
    data = [browser_film(p["image"], p["saliency"], dim=p["dim"]) for p in panels]
    return _film_view.component_args(fig, data, settings)


def _expected(panels: list[dict], columns: int, settings: dict) -> list[list[list[int]]]:
    """``film_grid``'s colour of each sampled pixel of each panel for the component's ``settings``."""
    fig = film.film_grid(panels, columns=columns, **_film_view.as_display(settings))
    out = []
    for trace in (t for t in fig.data if t.type == "image"):
        source = base64.b64decode(trace.source.split(",", 1)[1])
        rgb = cv2.imdecode(np.frombuffer(source, np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
        out.append([rgb[r, c].tolist() for r, c in PIXELS])
    return out


def _shown(page, count: int, url: str | None = None) -> list:
    return [page.evaluate(PROBE, [k, PIXELS, url]) for k in range(count)]


def _click(page, control: str, value: str) -> None:
    before = page.evaluate("window.filmStats.applied")
    if control == "show_map":
        page.locator("#show_map").click()
    elif control == "colormap":
        page.locator("#colormap").select_option(value)
    else:
        page.locator(f"#{control}").fill(value)
    page.wait_for_function(f"window.filmStats.applied > {before}", timeout=10_000)


def _drag(page, k: int, start: tuple[int, int], end: tuple[int, int]) -> None:
    """Drag a zoom box on the ``k``-th film from film pixel (column, row) ``start`` to ``end``, as
    a user does (Plotly's zoom)."""
    at = page.evaluate("""([n, points]) => { const l = document.getElementById('film')._fullLayout;
      const xa = l['xaxis' + n], ya = l['yaxis' + n];
      return points.map(([c, r]) => [xa._offset + xa.l2p(c), ya._offset + ya.l2p(r)]); }""",
                      [str(k + 1) if k else "", [start, end]])
    page.mouse.move(*at[0])
    page.mouse.down()
    page.mouse.move(*at[1], steps=8)
    page.mouse.up()
    page.wait_for_timeout(400)


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("layout,columns,zoomed", [("compare", 2, 1), ("grid", 2, 0)])
def test_a_display_click_changes_every_film_in_the_browser_and_keeps_each_zoom(layout, columns, zoomed):
    panels = _panels(layout)
    args = _args(panels, columns)
    with _browser() as page:
        page.goto((_film_view.component_dir() / "index.html").as_uri())
        page.evaluate(COUNT_SENT)
        page.evaluate("a => window.postMessage({type: 'streamlit:render', args: a}, '*')", args)
        page.wait_for_function("window.filmStats && window.filmStats.applied > 0", timeout=60_000)
        assert page.evaluate("document.querySelectorAll('#stage > canvas').length") == len(panels)
        titles, canvases = page.evaluate(BOXES)
        assert len(titles) == len(panels) and all(t[1] >= 0 for t in titles)
        assert not any(_overlap(t, c) for t in titles for c in canvases)  # no title behind a film
        _drag(page, zoomed, (30, 32), (82, 80))  # on one film
        ranges = dict(page.evaluate(RANGES))
        assert ranges[f"xaxis{zoomed + 1 if zoomed else ''}"] != [0, panels[zoomed]["image"].shape[1]]
        full = [[0, p["image"].shape[1]] for p in panels]
        if layout == "compare":  # the other case's film keeps its own (full) view
            assert ranges["xaxis"] == full[0]
        else:  # one case: every film follows the zoom
            assert all(ranges[f"xaxis{k or ''}"] == ranges["xaxis"] != full[0] for k in (2, 3, 4))
        ranges = page.evaluate(RANGES)
        settings = dict(args["settings"])
        assert _shown(page, len(panels)) == _expected(panels, columns, settings)
        for control, value in (("lo", "40"), ("colormap", "inferno"), ("alpha", "0.9"), ("show_map", "")):
            page.wait_for_timeout(SETTLE_MS)  # the settings of the click before have gone to Python
            before, sent = page.evaluate(CANVASES), page.evaluate("window.sent")
            _click(page, control, value)
            after = page.evaluate(CANVASES)
            assert all(a != b for a, b in zip(after, before)), control  # every film repainted
            assert page.evaluate("window.sent") == sent, control  # no rerun for the click
            assert page.evaluate(RANGES) == ranges, control  # every film's zoom kept
            settings[control] = (value if control == "colormap" else not settings[control]
                                 if control == "show_map" else float(value))
            assert _shown(page, len(panels)) == _expected(panels, columns, settings), control
        page.wait_for_timeout(SETTLE_MS)
        sent = page.evaluate("window.sent")
        for value in ("41", "42", "43"):  # clicks in a row: one rerun for all, once they end
            _click(page, "lo", value)
        assert page.evaluate("window.sent") == sent
        page.wait_for_timeout(SETTLE_MS)
        assert page.evaluate("window.sent") == sent + 1 and page.evaluate(RANGES) == ranges
        shown = _shown(page, len(panels))
        exported = page.evaluate("() => window.filmExport(1)")
        assert _shown(page, len(panels), exported) == shown  # the export is what is on screen
