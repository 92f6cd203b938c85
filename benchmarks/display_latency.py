"""How fast the explorer's film answers a display click, in a real browser, and that it keeps the zoom.

    .venv/bin/python -m benchmarks.display_latency [--store data_cache/demo.duckdb] [--clicks 24]

Display clicks (map on/off, opacity, floor, top-k, colour map, window/level) act in the film
component (``pages/_film_view.py``) without the server. Timed from the click's event to the
film redrawn (the browser's own clock: the event's timestamp to the frame with the canvas
painted and the map's layers shown), cycling through the controls, zoomed in, and the axis ranges are
checked unchanged after every click. Films: synthetic ones at the display's full size
(``film.DISPLAY_SIDE`` square) and at the demo's (``DEMO_SIDE``), a signed map, the component page
opened on its own, and, with ``--store``, the explorer's first case served by the app
(``streamlit run app.py``).
Results (median, p95, max per film) go to ``benchmarks/results/display-latency.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

from cxrxai.cli.bench import machine
from cxrxai.present import film
from cxrxai.present.film_view import browser_film

from ._browser import chromium, wait_healthy
from .live_latency import _summary

#: The demo's films (its images' side, px).
DEMO_SIDE = 224
RANGES = "() => { const l = document.getElementById('film')._fullLayout; return [l.xaxis.range, l.yaxis.range]; }"
#: The clicks, in turn: (control, value) — a checkbox is clicked, anything else filled.
CLICKS = [("show_map", None), ("show_map", None), ("alpha", "0.3"), ("floor", "0.4"), ("top_k", "10"),
          ("colormap", "inferno"), ("lo", "40"), ("hi", "200"), ("alpha", "0.8"), ("floor", "0.1"),
          ("top_k", "100"), ("colormap", "jet"), ("otsu", None), ("otsu", None)]


def _click(frame, control: str, value: str | None) -> float:
    """Milliseconds from the click to the film redrawn (the browser's clock)."""
    before = frame.evaluate("window.filmStats.applied")
    el = frame.locator(f"#{control}")
    if value is None:
        el.click()
    elif control in ("top_k", "colormap"):
        el.select_option(value)
    else:
        el.fill(value)
    frame.wait_for_function(f"window.filmStats.applied > {before}", polling=5, timeout=30_000)
    return frame.evaluate("window.filmStats.lastMs")


def _zoom(page, frame) -> list:
    box = frame.locator(".nsewdrag").first.bounding_box()
    x0, y0 = box["x"] + 0.3 * box["width"], box["y"] + 0.3 * box["height"]
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x0 + 0.3 * box["width"], y0 + 0.3 * box["height"], steps=8)
    page.mouse.up()
    page.wait_for_timeout(300)
    return frame.evaluate(RANGES)


def _timed(page, frame, clicks: int) -> dict:
    zoomed = _zoom(page, frame)
    times, parts, kept = [], [], True
    for k in range(clicks):
        times.append(_click(frame, *CLICKS[k % len(CLICKS)]) / 1000)
        parts.append(frame.evaluate("window.filmStats.parts"))
        kept &= frame.evaluate(RANGES) == zoomed
    if not kept:
        raise SystemExit("a display click lost the zoom")
    # where the time goes: the blend's stages, Plotly's restyle, the canvas's paint (medians, ms)
    split = {k: round(statistics.median(p[k] for p in parts), 1) for k in parts[0] if k != "redone"}
    return {**_summary(times), "zoom_kept": kept, "median_parts_ms": split}


def _synthetic(browser, clicks: int, side: int) -> dict:
    """A ``side`` px film: the component's page on its own, given what the app would send."""
    from pages import _film_view

    rng = np.random.default_rng(0)
    image = np.clip(rng.normal(120, 50, (side, side)), 0, 255).astype(np.uint8)
    saliency = rng.normal(size=(32, 32)).astype(np.float32)
    seg = np.zeros((side, side), bool)
    seg[side // 3:side // 2, side // 5:2 * side // 3] = True
    fig = film.film_figure(image, saliency, segmentation=seg, mode="raw", revision=film.view_revision("x"))
    settings = _film_view.browser_settings(None, "cam", 0.2)
    args = _film_view.component_args(fig, browser_film(image, saliency, mode="raw"), settings)
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.goto((_film_view.component_dir() / "index.html").as_uri())
    page.evaluate("a => window.postMessage({type: 'streamlit:render', args: a}, '*')", args)
    page.wait_for_function("window.filmStats && window.filmStats.applied > 0", timeout=60_000)
    return _timed(page, page.main_frame, clicks)


def _served(browser, store: Path, port: int, clicks: int) -> dict:
    env = {**os.environ, "CXRXAI_STORE": str(store), "CXRXAI_BACKGROUND": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.headless", "true"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, cwd=Path(__file__).resolve().parents[1])
    try:
        wait_healthy(f"http://127.0.0.1:{port}", 120)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        page.goto(f"http://127.0.0.1:{port}/explorer")
        page.locator('iframe[title*="cxrxai_film"]').first.wait_for(timeout=120_000)
        page.locator('iframe[title*="cxrxai_film"]').first.scroll_into_view_if_needed()
        frame = next(f for f in page.frames if "cxrxai_film" in f.url)
        frame.wait_for_function("window.filmStats && window.filmStats.applied > 0", timeout=120_000)
        shape = frame.evaluate("() => document.getElementById('film')._fullData[0]._hasSource && "
                               "[document.getElementById('film')._fullLayout.xaxis.range[1]]")
        return {**_timed(page, frame, clicks), "film_width_px": shape}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument("--clicks", type=int, default=24)
    parser.add_argument("--port", type=int, default=8766)
    args = parser.parse_args()
    info = machine()
    results = {}
    with sync_playwright() as p:
        browser = chromium(p)
        try:
            for side in (film.DISPLAY_SIDE, DEMO_SIDE):
                results[f"synthetic {side} px film"] = _synthetic(browser, args.clicks, side)
                print(results, flush=True)
            if args.store is not None:
                results[f"app: {args.store.name}"] = _served(browser, args.store, args.port, args.clicks)
                print(results, flush=True)
        finally:
            browser.close()
    info["load_average"] = os.getloadavg()
    out = Path(__file__).parent / "results" / "display-latency.json"
    out.write_text(json.dumps({"machine": info, "interaction": "display click in the film → film redrawn",
                               "results": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
