"""The explorer's film component: what the browser draws for a display setting is what
``film_figure`` draws for it, pixel for pixel, and its directory is assembled from the shipped
files and the installed Plotly.

The browser's arithmetic (``pages/_film_component/blend.js``) runs in Node on the data
``browser_film`` sends; the picture it makes is compared with the film in ``film_figure``'s
figure for the same settings. Needs Node (``/usr/bin/node``); skipped without it.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess

import cv2
import numpy as np
import plotly
import pytest

from cxrxai.errors import DataError
from cxrxai.present import film
from cxrxai.present.film_view import browser_film, browser_films, layer_traces
from pages import _film_view

NODE = shutil.which("node")
BLEND_JS = _film_view.SOURCE / "blend.js"
#: Runs blend.js on each setting of the input and prints each picture's RGB bytes, base64.
RUNNER = """
const {blendInto, blender} = require(process.argv[1]);
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const p = input.payload, grey = new Uint8Array(Buffer.from(p.film, "base64"));
const heat = p.heat === null ? null : new Float32Array(new Uint8Array(Buffer.from(p.heat, "base64")).buffer);
const rgb = (data) => Buffer.from(data.filter((_, k) => k % 4 !== 3)).toString("base64");
const fresh = input.settings.map((s) => {
  const data = new Uint8Array(grey.length * 4);
  blendInto(data, grey, heat, p, s);
  return rgb(data);
});
// the component's way: one buffer, each setting after the one before, stages recomputed as needed
const draw = blender(grey, heat, p), buffer = new Uint8Array(grey.length * 4), redone = [];
const reused = input.settings.map((s) => {
  draw(buffer, s);
  redone.push(draw.redone);
  return rgb(buffer);
});
console.log(JSON.stringify({fresh, reused, redone}));
"""
SETTINGS = [{}, {"show_map": False}, {"alpha": 0.85, "floor": 0.35}, {"lo": 40, "hi": 170},
            {"top_k": 10, "colormap": "inferno"}, {"floor": 0.0, "alpha": 1.0, "lo": 99, "hi": 100},
            {"top_k": 1, "floor": 0.05, "colormap": "viridis", "lo": 3, "hi": 250}]


def _drawn(fig) -> np.ndarray:
    return _picture(fig.data[0])


def _picture(trace) -> np.ndarray:
    """An image trace's picture, RGB."""
    source = trace.source.split(",", 1)[1]
    bgr = cv2.imdecode(np.frombuffer(base64.b64decode(source), np.uint8), cv2.IMREAD_COLOR)
    return bgr[..., ::-1]


def _run(payload: dict, settings: list[dict]) -> dict:
    out = subprocess.run([NODE, "-e", RUNNER, str(BLEND_JS)], input=json.dumps(
        {"payload": payload, "settings": settings}), capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def _pictures(encoded: list[str], shape: tuple[int, int]) -> list[np.ndarray]:
    return [np.frombuffer(base64.b64decode(b), np.uint8).reshape(*shape, 3) for b in encoded]


def _browser(payload: dict, settings: list[dict], shape: tuple[int, int]) -> list[np.ndarray]:
    return _pictures(_run(payload, settings)["fresh"], shape)


@pytest.mark.skipif(NODE is None, reason="needs Node to run the component's JavaScript")
@pytest.mark.parametrize("mode,shape,dim", [("normalized", (90, 120), 1.0), ("raw", (90, 120), 1.0),
                                            ("captum", (1300, 700), 0.35)])
def test_the_browser_draws_what_film_figure_draws_for_every_setting(mode, shape, dim):
    rng = np.random.default_rng(3)
    image = np.clip(rng.normal(120, 60, shape), 0, 255).astype(np.uint8)
    saliency = rng.normal(size=(14, 11)).astype(np.float32)
    payload = browser_film(image, saliency, mode=mode, dim=dim)
    settings = [_film_view.browser_settings(s, "cam", 0.2) for s in SETTINGS]
    size = (payload["height"], payload["width"])
    for s, seen in zip(settings, _browser(payload, settings, size)):
        display = _film_view.as_display(s)
        fig = film.film_figure(image, saliency, mode=mode, **{**display, "alpha": display["alpha"] * dim})
        assert np.array_equal(seen, _drawn(fig)), (mode, s)


@pytest.mark.skipif(NODE is None, reason="needs Node to run the component's JavaScript")
@pytest.mark.parametrize("mode", ["normalized", "raw"])
def test_a_click_recomputes_only_what_it_changes_and_draws_what_film_figure_draws(mode):
    rng = np.random.default_rng(5)
    image = np.clip(rng.normal(110, 50, (64, 80)), 0, 255).astype(np.uint8)
    saliency = rng.normal(size=(9, 7)).astype(np.float32)
    payload = browser_film(image, saliency, mode=mode)
    # one control at a time, as a user clicks: each setting is the one before with one change
    steps = [{}, {"lo": 30}, {"hi": 200}, {"colormap": "inferno"}, {"alpha": 0.9}, {"top_k": 10},
             {"lo": 0, "hi": 255}, {"show_map": False}, {"lo": 60}, {"show_map": True}, {"colormap": "viridis"}]
    settings, current = [], {}
    for step in steps:
        current = {**current, **step}
        settings.append(_film_view.browser_settings(current, "cam", 0.2))
    out = _run(payload, settings)
    assert out["redone"][1:4] == [["table"], ["table"], ["colours"]]  # window/level, colour map alone
    assert out["redone"][4] == ["weights", "colours"] and out["redone"][8] == ["table"]
    for s, seen in zip(settings, _pictures(out["reused"], image.shape)):
        display = _film_view.as_display(s)
        assert np.array_equal(seen, _drawn(film.film_figure(image, saliency, mode=mode, **display))), (mode, s)


@pytest.mark.skipif(NODE is None, reason="needs Node to run the component's JavaScript")
def test_every_film_of_a_grid_is_drawn_as_film_grid_draws_its_panel():
    rng = np.random.default_rng(8)
    panels = [{"image": np.clip(rng.normal(120, 60, shape), 0, 255).astype(np.uint8), "dim": dim,
               "saliency": rng.normal(size=(9, 7)).astype(np.float32) + k} for k, (shape, dim) in
              enumerate([((60, 70), 1.0), ((48, 90), 0.35), ((75, 40), 1.0)])]
    settings = [_film_view.browser_settings(s, "cam", 0.2) for s in SETTINGS[:5]]
    opening = film.film_grid(panels, columns=2, **_film_view.as_display(settings[0]))
    payload = browser_films(opening, [browser_film(p["image"], p["saliency"], dim=p["dim"]) for p in panels])
    # each setting's grid, its panels' pictures in order (their traces' indices depend on the setting)
    grids = [film.film_grid(panels, columns=2, **_film_view.as_display(s)) for s in settings]
    grids = [[t for t in grid.data if t.type == "image"] for grid in grids]
    assert [(f["xaxis"], f["yaxis"]) for f in payload["films"]] == [("x", "y"), ("x2", "y2"), ("x3", "y3")]
    for k, each in enumerate(payload["films"]):  # what film.js gives blend.js for one film
        assert opening.data[each["trace"]].xaxis == each["xaxis"]
        data = {**each, "signed": payload["signed"], "luts": payload["luts"]}
        for s, grid, seen in zip(settings, grids, _browser(data, settings, (each["height"], each["width"]))):
            assert np.array_equal(seen, _picture(grid[k])), (k, s)
    with pytest.raises(DataError, match="one browser_film per image trace"):
        browser_films(opening, [browser_film(p["image"], p["saliency"]) for p in panels[:2]])


def test_the_layers_the_browser_hides_with_the_map_are_the_bar_and_the_scored_contour():
    image = np.full((40, 40), 90, np.uint8)
    segmentation = np.zeros((40, 40), bool)
    segmentation[10:20, 10:20] = True
    fig = film.film_figure(image, np.eye(8), segmentation=segmentation, masks={"gt": segmentation})
    layers = layer_traces(fig)
    assert [fig.data[k].name for k in layers["contour"]] == [film.SEGMENTATION_NAME]
    assert len(layers["bar"]) == 1 and fig.data[layers["bar"][0]].marker.showscale and not layers["note"]
    flat = film.film_figure(image, np.zeros((8, 8)))  # nothing to colour: a note instead of a bar
    assert layer_traces(flat) == {"bar": [], "contour": [], "note": [1]}


def test_a_map_that_differs_only_under_the_opening_floor_is_a_new_revision():
    """The browser opens the films afresh only when the revision changes: two maps whose figures
    are the same (their difference is under the floor the figure is drawn at) must still differ."""
    image = np.full((40, 40), 90, np.uint8)
    one = np.zeros((8, 8), np.float32)
    one[0, 0], one[4, 4] = 1.0, 0.05
    two = one.copy()
    two[4, 4] = 0.1  # both under the opening floor: the same picture at the opening settings
    settings = _film_view.browser_settings(None, "cam", 0.2)
    figs = [film.film_figure(image, m, **_film_view.as_display(settings)) for m in (one, two)]
    assert figs[0].to_json() == figs[1].to_json()
    a, b = (_film_view.component_args(f, browser_film(image, m), settings) for f, m in zip(figs, (one, two)))
    assert a["payload"]["films"][0]["heat"] != b["payload"]["films"][0]["heat"]
    assert a["rev"] != b["rev"]
    again = _film_view.component_args(figs[0], browser_film(image, one), settings)
    assert again["rev"] == a["rev"]  # the same film and map: the browser keeps its zoom


def test_the_component_directory_has_the_shipped_files_and_plotly(tmp_path, monkeypatch):
    monkeypatch.setenv("CXRXAI_HOME", str(tmp_path))
    built = _film_view.component_dir()
    assert built.parent == tmp_path / "components"
    assert sorted(p.name for p in built.iterdir()) == sorted([*_film_view.FILES, "plotly.min.js"])
    shipped = built / "plotly.min.js"
    assert shipped.read_bytes() == (_film_view.PLOTLY_JS).read_bytes() and plotly.__version__
    assert _film_view.component_dir() == built  # assembled once
    html = (built / "index.html").read_text()
    assert "cdn" not in html.lower() and all(f'src="{n}"' in html for n in ("plotly.min.js", "blend.js", "film.js"))
