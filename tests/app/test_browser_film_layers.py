"""Headless Chromium: map on/off, the contour and the colour map act on the film without Plotly drawing.

The film component's page is opened on its own (no app) with what the app sends for one film with
its colour bar, its scored contour and a reader's outline. Issue 41 item 7: the map toggle and the
colour map cost a Plotly redraw each (restyle: 40–60 ms idle, over 100 ms at p95 under load) and
the plot area moved by the colour bar's width when the map went off. Now they hide or recolour
the layers Plotly has already drawn: no Plotly redraw, the film stays where it is, the colour bar's
gradient is the chosen colour map's scale, a later redraw (a zoom) keeps what the settings say, and
the export is the figure as shown.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_browser import _browser, _chromium  # noqa: F401 — the fixture skips without Chromium
from test_browser_films import CANVASES

from cxrxai.present import film
from cxrxai.present.film_view import browser_film
from pages import _film_view

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: What is drawn of the map's layers: the colour bar (shown, its gradient's colours), the scored
#: contour's lines and its legend entry's opacity; the plot area's box; Plotly's redraws since
#: COUNT_PLOTS ran
DRAWN = """() => {
  const bar = gd.querySelector('.colorbar'), fill = gd.querySelector('.colorbar .cbfill');
  const id = fill && fill.style.fill.match(/#([^"')]+)/)[1];
  const stops = id ? [...document.getElementById(id).querySelectorAll('stop')] : [];
  const contour = [...gd.querySelectorAll('.scatterlayer .trace')]
    .filter((g) => g.__data__[0].trace.name.startsWith('Otsu'));
  const entry = [...gd.querySelectorAll('.legend .traces')]
    .filter((g) => g.__data__[0].trace.name.startsWith('Otsu'));
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  return {bar: bar !== null && getComputedStyle(bar).visibility !== 'hidden',
          stops: stops.map((s) => [parseFloat(s.getAttribute('offset')) / 100,
                                  s.getAttribute('stop-color').replaceAll(' ', '')]),
          contour: contour.length === 1 && getComputedStyle(contour[0]).display !== 'none',
          entry: entry.length === 1 ? Number(getComputedStyle(entry[0]).opacity) : null,
          box: [xa._offset, xa._length, ya._offset, ya._length], plots: window.plots}; }"""
COUNT_PLOTS = "() => { window.plots = 0; gd.on('plotly_afterplot', () => { window.plots += 1; }); }"
#: The export's map layers: whether the colour bar and the contour are drawn, the bar's colour scale
EXPORTED = """() => { const {data} = exportFigure(), L = shown.payload.layers;
  const drawn = (k) => data[k].visible === undefined || data[k].visible === true;
  return {bar: drawn(L.bar[0]), contour: drawn(L.contour[0]), scale: data[L.bar[0]].marker.colorscale}; }"""


def _args(seed: int = 4, kind: str = "cam", floor: float = 0.2) -> dict:
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 256, (160, 200)).astype(np.uint8)
    saliency = rng.random((10, 10)).astype(np.float32)
    seg = np.zeros(image.shape, bool)
    seg[40:90, 60:120] = True
    fig = film.film_figure(image, saliency, segmentation=seg, masks={"gt": np.roll(seg, 9, 1)},
                           revision=film.view_revision("c"))
    settings = _film_view.browser_settings(None, kind, floor)
    return _film_view.component_args(fig, browser_film(image, saliency), settings)


def _click(page, control: str, value: str | None = None) -> None:
    before = page.evaluate("window.filmStats.applied")
    if value is None:
        page.locator(f"#{control}").click()
    else:
        page.locator(f"#{control}").select_option(value)
    page.wait_for_function(f"window.filmStats.applied > {before}", timeout=10_000)
    page.wait_for_timeout(200)  # anything Plotly would draw after the click has been drawn


def _scale(bars: dict, name: str) -> list:
    """A colour map's colour-bar scale as the gradient's stops are read: offset, ``rgb(r,g,b)``."""
    return [[pos, colour.replace(" ", "")] for pos, colour in bars[name]]


def test_map_off_contour_and_colour_map_draw_nothing_with_plotly_and_keep_the_film_in_place():
    args = _args()
    bars = args["payload"]["bars"]
    with _browser() as page:
        page.goto((_film_view.component_dir() / "index.html").as_uri())
        page.evaluate("a => window.postMessage({type: 'streamlit:render', args: a}, '*')", args)
        page.wait_for_function("window.filmStats && window.filmStats.applied > 0", timeout=60_000)
        page.wait_for_timeout(300)
        page.evaluate(COUNT_PLOTS)
        opening = page.evaluate(DRAWN)
        assert opening["bar"] and opening["contour"] and opening["entry"] == 1
        assert opening["stops"] == _scale(bars, "jet")
        films = page.evaluate(CANVASES)
        _click(page, "show_map")
        off = page.evaluate(DRAWN)
        assert off["box"] == opening["box"] and off["plots"] == 0  # the film in place, no redraw
        assert not off["bar"] and not off["contour"] and off["entry"] < 1  # the map's layers hidden
        assert page.evaluate(CANVASES) != films
        assert page.evaluate(EXPORTED)["bar"] is False and page.evaluate(EXPORTED)["contour"] is False
        _click(page, "show_map")
        _click(page, "otsu")
        no_contour = page.evaluate(DRAWN)
        assert no_contour["bar"] and not no_contour["contour"] and no_contour["plots"] == 0
        _click(page, "otsu")
        _click(page, "colormap", "inferno")
        inferno = page.evaluate(DRAWN)
        assert inferno["stops"] == _scale(bars, "inferno") and inferno["bar"] and inferno["contour"]
        assert inferno["box"] == opening["box"] and inferno["plots"] == 0
        assert page.evaluate(EXPORTED) == {"bar": True, "contour": True, "scale": bars["inferno"]}
        _click(page, "show_map")
        page.evaluate("() => Plotly.relayout(gd, {'xaxis.range': [50, 150]})")  # a zoom: Plotly redraws
        page.wait_for_timeout(300)
        zoomed = page.evaluate(DRAWN)
        assert zoomed["plots"] >= 1 and not zoomed["bar"] and not zoomed["contour"]
        _click(page, "show_map")
        shown = page.evaluate(DRAWN)
        assert shown["bar"] and shown["contour"] and shown["stops"] == _scale(bars, "inferno")


#: The values the component sends to Streamlit (its settings), kept in window.sent
KEEP_SENT = """() => { window.sent = []; window.addEventListener('message', (e) => {
  if (e.data && e.data.type === 'streamlit:setComponentValue') window.sent.push(e.data.value); }); }"""


#: The colour map chosen (an input event, as a user's), then at once a new figure from Python
CHOOSE_THEN_RENDER = """(a) => { const c = document.getElementById('colormap');
  c.value = 'inferno';
  c.dispatchEvent(new Event('input'));
  window.postMessage({type: 'streamlit:render', args: a}, '*'); }"""


def test_a_choice_made_just_before_a_data_click_is_kept_and_reaches_python():
    """A colour map chosen, then an explainer of another kind of map before the choice went to
    Python (its settle): the new figure comes with Python's older settings and the new kind's floor,
    yet opens in the chosen colour map at that floor, and both reach Python."""
    first, second = _args(), _args(seed=5, kind="pixel", floor=0.05)
    assert first["rev"] != second["rev"] and second["settings"]["colormap"] == "jet"
    with _browser() as page:
        page.goto((_film_view.component_dir() / "index.html").as_uri())
        page.evaluate(KEEP_SENT)
        page.evaluate("a => window.postMessage({type: 'streamlit:render', args: a}, '*')", first)
        page.wait_for_function("window.filmStats && window.filmStats.applied > 0", timeout=60_000)
        page.wait_for_timeout(300)
        before = page.evaluate("window.filmStats.applied")
        page.evaluate(CHOOSE_THEN_RENDER, second)  # well within the settle, whatever the load
        page.wait_for_function(f"window.filmStats.applied > {before + 1}", timeout=10_000)
        assert page.evaluate("window.filmStats.rev") == second["rev"]
        assert page.locator("#colormap").input_value() == "inferno"
        assert page.locator("#floor").input_value() == "0.05"
        assert page.evaluate(DRAWN)["stops"] == _scale(second["payload"]["bars"], "inferno")
        page.wait_for_timeout(1500)  # the settle
        assert [(v["colormap"], v["floor"], v["kind"]) for v in page.evaluate("window.sent")] == [
            ("inferno", 0.05, "pixel")]
