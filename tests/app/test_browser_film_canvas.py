"""Headless Chromium: the film's canvas is in line with Plotly's axes, and the export is what it shows.

The component's page is opened on its own (no app) with what the app would send for a film whose
pixels all differ from their neighbours, larger than the display grid. After a zoom, the colour on the canvas at the screen
point Plotly's own axes give for a film pixel's centre is ``film_figure``'s colour for that pixel,
for the opening display and after display clicks (window/level, colour map); the export (the
figure with the film as shown) has the same colour there, at the screen's scale and as the
toolbar's camera saves it.
"""

from __future__ import annotations

import base64
from pathlib import Path

import cv2
import numpy as np
import pytest
from test_browser import _browser, _chromium  # noqa: F401 — the fixture skips without Chromium
from test_browser_films import PROBE

from cxrxai.present import film
from cxrxai.present.film_view import browser_film
from pages import _film_view

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: Film pixels (row, column) sampled, inside the zoomed view below and off the contour (drawn over)
PIXELS = [(70, 60), (71, 60), (70, 61), (95, 88), (110, 120), (84, 101), (120, 75), (88, 92)]


def probe(page, size, url=None) -> list[list[int]]:
    """Each of :data:`PIXELS`' centre on the screen by Plotly's axes (x = c·dx, y = r·dy) and the
    colour there, on the canvas or in the exported PNG ``url`` (test_browser_films' probe, film 0)."""
    dx, dy = size
    return page.evaluate(PROBE, [0, [[r * dy, c * dx] for r, c in PIXELS], url])



def _film(shape=(1100, 1300)):
    """A film larger than the display grid (a display pixel spans more than one image pixel) whose
    display pixels differ from their neighbours, a signed map, the component's page args and the
    display pixel's size in image pixels."""
    rng = np.random.default_rng(11)
    image = rng.integers(0, 256, shape).astype(np.uint8)
    saliency = rng.normal(size=(40, 40)).astype(np.float32)
    seg = np.zeros(shape, bool)
    seg[700:900, 600:1000] = True  # its contour (drawn over the film) away from the sampled pixels
    fig = film.film_figure(image, saliency, segmentation=seg, mode="raw", revision=film.view_revision("c"))
    settings = _film_view.browser_settings(None, "cam", 0.2)
    args = _film_view.component_args(fig, browser_film(image, saliency, mode="raw"), settings)
    return image, saliency, args, (fig.data[0].dx, fig.data[0].dy)


def _expected(image, saliency, settings: dict) -> list[list[int]]:
    """``film_figure``'s colour of each sampled pixel for the component's ``settings``."""
    fig = film.film_figure(image, saliency, mode="raw", **_film_view.as_display(settings))
    source = fig.data[0].source.split(",", 1)[1]
    rgb = cv2.imdecode(np.frombuffer(base64.b64decode(source), np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
    return [rgb[r, c].tolist() for r, c in PIXELS]


def _open(page, args: dict) -> None:
    page.goto((_film_view.component_dir() / "index.html").as_uri())
    page.evaluate("a => window.postMessage({type: 'streamlit:render', args: a}, '*')", args)
    page.wait_for_function("window.filmStats && window.filmStats.applied > 0", timeout=60_000)


def _zoom(page, dx: float, dy: float) -> None:
    """Zoom on the sampled pixels (Plotly's relayout, as a drag): each film pixel several screen px."""
    ranges = {"xaxis.range": [40 * dx, 140 * dx], "yaxis.range": [130 * dy, 55 * dy]}
    page.evaluate("r => Plotly.relayout('film', r)", ranges)
    page.wait_for_timeout(200)


def test_the_canvas_shows_film_figure_s_pixel_at_plotly_s_coordinate_after_zoom_and_clicks():
    image, saliency, args, size = _film()
    assert min(size) > 1  # the display grid is coarser than the image
    with _browser() as page:
        _open(page, args)
        _zoom(page, *size)
        settings = dict(args["settings"])
        assert probe(page, size) == _expected(image, saliency, settings)
        for control, value in (("lo", "40"), ("colormap", "inferno"), ("floor", "0.5")):
            before = page.evaluate("window.filmStats.applied")
            if control == "colormap":
                page.locator(f"#{control}").select_option(value)
            else:
                page.locator(f"#{control}").fill(value)
            page.wait_for_function(f"window.filmStats.applied > {before}", timeout=10_000)
            settings[control] = value if control == "colormap" else float(value)
            assert probe(page, size) == _expected(image, saliency, settings), control
        shown = probe(page, size)
        exported = page.evaluate("() => window.filmExport(1)")
        assert probe(page, size, exported) == shown  # the export is what is on screen
        with page.expect_download() as download:  # the toolbar's camera saves that picture (at its scale)
            page.locator('[data-title="Download the film as shown (PNG)"]').click()
        saved = "data:image/png;base64," + base64.b64encode(Path(download.value.path()).read_bytes()).decode()
        assert probe(page, size, saved) == shown
