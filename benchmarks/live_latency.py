"""How fast the explorer answers a click, in a real browser: display clicks and data clicks, idle and
while a live map computes.

    .venv/bin/python -m benchmarks.live_latency [--store data_cache/demo.duckdb] [--clicks 20]

Serves the app (``streamlit run app.py``, the background build off) on the store, opens the
explorer in Debian's Chromium (Playwright) and times, ``--clicks`` times each:

- display: the film's own "Map" toggle and its "Colour map" (``pages/_film_view.py``: both act in
  the browser, Plotly draws nothing), from the input event to the frame with the film painted (the
  browser's clock, ``window.filmStats.lastMs``);
- data clicks, from the input event (the click's ``pointerdown``, in the page or in the case grid's
  frame) to the frame with the next film painted (a new figure from the server: the film's
  ``window.filmStats.rev`` changes; ``filmStats.marks.drawn``), both on the browser's wall clock
  (``performance.timeOrigin`` + the event's or the frame's time): another finding (the "Finding"
  picker), another case (a row of the case grid, and the Previous/Next case buttons where the
  explorer has them) and another explainer (``--explainers``, two with stored or quick maps);

all with nothing computing; display clicks in the compare and grid layouts (the same component,
one film per panel: a click re-blends every film), with the single film's in the same run as the
reference; then display clicks while a live map computes: occlusion at its
finest stored-free setting and Integrated Gradients with 100 steps. The live worker runs in its
own process with cores − 1 threads (``CXRXAI_LIVE_THREADS``). Targets (issue 26): display clicks
under 100 ms median; data clicks p95 ≤ 300 ms idle on 2 cores. Results (n, median, p95, max, the
ratio to idle in the same run) go to ``benchmarks/results/live-latency.json``; ``--layouts-only``
times the display clicks of the three layouts alone (``live-latency-layouts.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from cxrxai import paths
from cxrxai.cli.bench import machine

from ._browser import chromium, open_picker, pick, wait_healthy

FILM = 'iframe[title*="cxrxai_film"]'
#: The film component's drawn film: its revision once it has drawn one, else null
DRAWN = "() => window.filmStats && window.filmStats.applied > 0 ? window.filmStats.rev : null"
#: The explorer's case grid (pages/_case_grid.py: a component; its rows are ``tr.row`` elements)
GRID = 'iframe[title*="cxrxai_grid"]'
#: Long enough for the film's settings to reach the server after display clicks and that rerun to end
SETTLE_MS = 3000
#: The explorer's case buttons (pages/explorer.py)
PREVIOUS, NEXT = "◀ Previous case", "Next case ▶"
#: In every frame (the page, the case grid's, the film's): the wall-clock time of the last input event
INPUT = """addEventListener("pointerdown", (e) => { window.__input = performance.timeOrigin + e.timeStamp; },
                 true);"""
#: The film's frame: when its last new figure was painted (ms, the browser's wall clock), or null
PAINTED = "() => window.filmStats && window.filmStats.marks ? window.filmStats.marks.drawn : null"


def _serve(store: Path, port: int, *options: str) -> subprocess.Popen:
    """The app on ``store`` (the background build off); ``options``: more of Streamlit's flags."""
    env = {**os.environ, "CXRXAI_STORE": str(store), "CXRXAI_BACKGROUND": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.headless", "true", *options], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            cwd=Path(__file__).resolve().parents[1])
    try:
        wait_healthy(f"http://127.0.0.1:{port}", 120)
    except SystemExit:
        proc.kill()
        raise
    return proc


def open_explorer(browser, port: int, init_script: str | None = None):
    """A page on the explorer of the app at ``port`` once its film is drawn and the live worker warm
    (``init_script``: run in the page before the app's own scripts)."""
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    if init_script:
        page.add_init_script(init_script)
    page.goto(f"http://127.0.0.1:{port}/explorer")
    page.get_by_role("heading", name="Image explorer").first.wait_for(timeout=120_000)
    page.locator(FILM).first.wait_for(timeout=120_000)
    _wait_film(page, None, 120)
    page.wait_for_timeout(3000)  # the worker warmed
    return page


def explorer_parser(doc: str, *, clicks: int, port: int) -> argparse.ArgumentParser:
    """The options of every explorer benchmark: ``--store``, ``--clicks`` and ``--port`` (their
    defaults given: each benchmark its own port)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--store", type=Path, default=paths.demo_store())
    parser.add_argument("--clicks", type=int, default=clicks)
    parser.add_argument("--port", type=int, default=port)
    return parser


@contextmanager
def explorer_session(store: Path, port: int, *options: str, init_script: str | None = None):
    """The app served on ``store`` (:func:`_serve`, with Streamlit's ``options``) and a Chromium page
    on its explorer (:func:`open_explorer`): yields ``(server, page)``, and closes both after."""
    from playwright.sync_api import sync_playwright

    if not store.is_file():
        raise SystemExit(f"no store at {store}: build it with `python -m cxrxai demo --phase quick`")
    server = _serve(store, port, *options)
    try:
        with sync_playwright() as p:
            browser = chromium(p)
            try:
                yield server, open_explorer(browser, port, init_script)
            finally:
                browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


def _frame(page):
    """The film component's frame (a rerun may have mounted a new one)."""
    return next(f for f in page.frames if "cxrxai_film" in f.url)


def _drawn(page) -> str | None:
    try:
        return _frame(page).evaluate(DRAWN)
    except Exception:  # noqa: BLE001 — no frame yet, or one being replaced: nothing drawn there
        return None


def _wait_film(page, other_than: str | None, limit_s: float = 60) -> float:
    """Seconds (perf_counter) at which a film other than ``other_than`` is drawn."""
    deadline = time.perf_counter() + limit_s
    while time.perf_counter() < deadline:
        rev = _drawn(page)
        if rev is not None and rev != other_than:
            return time.perf_counter()
        page.wait_for_timeout(5)
    raise SystemExit(f"no new film within {limit_s:.0f} s")


def _input_at(page) -> float | None:
    """The wall-clock time (ms) of the latest input event in any of the page's frames (:data:`INPUT`)."""
    times = []
    for frame in page.frames:
        try:
            times.append(frame.evaluate("window.__input ?? null"))
        except Exception:  # noqa: BLE001 — a frame being replaced: no input there
            pass
    return max((t for t in times if t is not None), default=None)


def _timed_data_click(page, act) -> float:
    """Seconds from the input event of ``act(page)`` (a click) to the frame with another film painted
    (the browser's clock, :data:`INPUT` and :data:`PAINTED`)."""
    before = _drawn(page)
    for frame in page.frames:
        try:
            frame.evaluate("window.__input = null")
        except Exception:  # noqa: BLE001 — a frame being replaced
            pass
    act(page)
    _wait_film(page, before)
    down, painted = _input_at(page), _frame(page).evaluate(PAINTED)
    if down is None or painted is None:
        raise SystemExit("no input event or no painted film recorded (the film's filmStats.marks)")
    return (painted - down) / 1000


#: The colour maps the colour-map clicks alternate between
COLOUR_MAPS = ("inferno", "jet")


def _display_click(page, control: str = "show_map") -> float:
    """Seconds from an input on the film's Map toggle (``show_map``) or Colour map (``colormap``: the
    one of :data:`COLOUR_MAPS` not shown) to the film painted (the browser's clock)."""
    frame = _frame(page)  # one that has drawn its film (another explainer's controls mount a new one)
    frame.wait_for_function("window.filmStats && window.filmStats.applied > 0", timeout=120_000)
    before = frame.evaluate("window.filmStats.applied")
    if control == "colormap":
        other = COLOUR_MAPS[1] if frame.locator("#colormap").input_value() == COLOUR_MAPS[0] else COLOUR_MAPS[0]
        frame.locator("#colormap").select_option(other)
    else:
        frame.locator(f"#{control}").click()
    frame.wait_for_function(f"window.filmStats.applied > {before}", polling=5, timeout=30_000)
    return frame.evaluate("window.filmStats.lastMs") / 1000


def _display(page, clicks: int) -> dict:
    """The Map toggle and the colour map, ``clicks`` times each, a pause between clicks."""
    results = {}
    for name, control in (("display: Map toggle", "show_map"), ("display: colour map", "colormap")):
        times = []
        for _ in range(clicks):
            times.append(_display_click(page, control))
            page.wait_for_timeout(100)
        results[name] = _summary(times)
    return results


def _picks(page, label: str, choices: list[str], clicks: int) -> list[float]:
    """Data clicks: pick one of two ``choices`` in the selectbox labelled ``label``, each time the
    one that is not its value (so that every pick draws another film)."""
    times = []
    for _ in range(clicks):
        open_picker(page, label)
        selected = page.get_by_role("option", selected=True)
        current = selected.first.inner_text() if selected.count() else None
        name = choices[1] if choices[0] == current else choices[0]
        option = page.get_by_role("option", name=name, exact=True)
        times.append(_timed_data_click(page, lambda p, o=option: o.click()))
        page.wait_for_timeout(300)
    return times


def _grid_frame(page):
    """The case grid component's frame (a rerun may have mounted a new one)."""
    return next(f for f in page.frames if "cxrxai_grid" in f.url)


def grid_top(page) -> None:
    """The case grid in view on the page, scrolled to its first row (it opens scrolled to the case)."""
    page.locator(GRID).first.scroll_into_view_if_needed()
    _grid_frame(page).evaluate("document.getElementById('grid').scrollTop = 0")
    page.wait_for_timeout(100)


def grid_row(page, k: int) -> tuple[float, float]:
    """Where to click row ``k`` of the case grid (the grid at its top: :func:`grid_top`), on the page."""
    box = _grid_frame(page).locator("tr.row").nth(k).bounding_box()
    return box["x"] + 15, box["y"] + box["height"] / 2


def _cases(page, clicks: int) -> list[float]:
    """Data clicks: the case grid's second and first rows in turn, after a first (untimed) click
    on the first row, so that each click selects a case other than the one shown."""
    grid_top(page)
    page.mouse.click(*grid_row(page, 0))
    page.wait_for_timeout(SETTLE_MS)
    times = []
    for k in range(clicks):
        at = grid_row(page, (k + 1) % 2)
        times.append(_timed_data_click(page, lambda p, at=at: p.mouse.click(*at)))
        page.wait_for_timeout(300)
    return times


def steps(page, clicks: int, timed=None) -> list:
    """Data clicks: the explorer's Previous/Next case buttons. After one untimed Next (off the grid's
    two rows), two Next clicks onto cases the session has not shown, then Previous and Next in turn: as with the finding and explainer
    clicks, the first two draw new films and the others films the session holds. ``timed(page,
    act)`` times one click (``_timed_data_click``; click_breakdown splits it)."""
    timed = timed or _timed_data_click

    def press(name: str):
        return lambda p: p.get_by_role("button", name=name, exact=True).click()

    press(NEXT)(page)
    page.wait_for_timeout(SETTLE_MS)
    order = [NEXT, NEXT] + [PREVIOUS if k % 2 == 0 else NEXT for k in range(max(0, clicks - 2))]
    times = []
    for name in order[:clicks]:
        times.append(timed(page, press(name)))
        page.wait_for_timeout(300)
    return times


def _slider(page, label: str, key: str) -> None:
    slider = page.locator('[data-testid="stSlider"]').filter(has_text=label).first.get_by_role("slider")
    slider.focus()
    slider.press(key)


def _during(page, clicks: int) -> list[float]:
    """Display clicks while a live map computes (up to ``clicks``, until it is done)."""
    cancel = page.get_by_role("button", name="Cancel")
    cancel.wait_for(timeout=120_000)
    times = []
    while len(times) < clicks and cancel.count():
        times.append(_display_click(page))
        page.wait_for_timeout(300)
    return times


def _summary(times: list[float], idle: float | None = None) -> dict:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    out = {"n": len(times), "median_s": round(statistics.median(times), 3), "p95_s": round(p95, 3),
           "max_s": round(max(times), 3)}
    if idle:
        out["median_vs_idle"] = round(out["median_s"] / idle, 2)
    return out


def _findings(page) -> list[str]:
    """Two labelled findings of the Finding picker (the picker closed again)."""
    labelled = [f for f in open_picker(page, "Finding") if "not labelled" not in f]
    page.keyboard.press("Escape")
    if len(labelled) < 2:
        raise SystemExit(f"the store's explorer offers fewer than two labelled findings: {labelled}")
    return labelled[:2]


def _idle(page, clicks: int, explainers: list[str]) -> dict:
    """Each kind of click, ``clicks`` times, with nothing computing."""
    results = _display(page, clicks)
    print(results, flush=True)
    page.wait_for_timeout(SETTLE_MS)  # the film's settings sent to the server, and that rerun done
    results["data: finding"] = _summary(_picks(page, "Finding", _findings(page), clicks))
    print(results["data: finding"], flush=True)
    results["data: case"] = _summary(_cases(page, clicks))
    print(results["data: case"], flush=True)
    if page.get_by_role("button", name=NEXT, exact=True).count():  # the explorer has them
        results["data: case, Previous/Next buttons"] = _summary(steps(page, clicks))
        print(results["data: case, Previous/Next buttons"], flush=True)
    results["data: explainer"] = _summary(_picks(page, "Explainer", explainers, clicks))
    print(results["data: explainer"], flush=True)
    return results


def _settled(page, quiet_ms: int = 3000, limit_s: float = 600) -> None:
    """Until no map computes (no Cancel) and the drawn films stay the same for ``quiet_ms``."""
    deadline, last, since = time.perf_counter() + limit_s, None, time.perf_counter()
    while time.perf_counter() < deadline:
        now = (_drawn(page), page.get_by_role("button", name="Cancel").count())
        if now != last:
            last, since = now, time.perf_counter()
        elif now[0] is not None and not now[1] and time.perf_counter() - since > quiet_ms / 1000:
            return
        page.wait_for_timeout(250)
    raise SystemExit(f"the films never settled within {limit_s:.0f} s")


def _layouts(page, port: int, clicks: int, idle: float) -> dict:
    """Display clicks (the Map toggle) in the compare and grid layouts, their maps drawn."""
    results = {}
    for layout in ("compare", "grid"):
        page.goto(f"http://127.0.0.1:{port}/explorer?layout={layout}")
        page.locator(FILM).first.wait_for(timeout=120_000)
        _settled(page)
        films, maps = _frame(page).evaluate("[shown.films.length, shown.payload.films.filter((f) => f.heat).length]")
        name = f"display ({layout}, {films} films, {maps} with a map): Map toggle"
        results[name] = _summary([_display_click(page) for _ in range(clicks)], idle)
        print({name: results[name]}, flush=True)
        page.wait_for_timeout(SETTLE_MS)
    page.goto(f"http://127.0.0.1:{port}/explorer")  # back to the single film (a new session)
    page.locator(FILM).first.wait_for(timeout=120_000)
    _settled(page)
    return results


def _live(page, clicks: int, idle: float) -> dict:
    """Display clicks while occlusion 8/4, then Integrated Gradients with 100 steps, compute."""
    results = {}
    pick(page, "Explainer", "Occlusion")
    page.get_by_text("Patch (px)").first.wait_for(timeout=60_000)
    _slider(page, "Patch (px)", "Home")  # 8 px windows: minutes of work on 2 cores
    page.wait_for_timeout(500)
    _slider(page, "Stride (px)", "Home")
    results["display during occlusion 8/4"] = _summary(_during(page, clicks), idle)
    print(results, flush=True)
    pick(page, "Explainer", "Integrated Gradients")
    page.get_by_text("Integration steps").first.wait_for(timeout=60_000)
    _slider(page, "Integration steps", "End")  # 100 steps
    results["display during IG 100 steps"] = _summary(_during(page, clicks), idle)
    print(results, flush=True)
    return results


def main() -> None:
    parser = explorer_parser(__doc__, clicks=20, port=8765)
    parser.add_argument("--explainers", default="Grad-CAM,Grad-CAM++",
                        help="two explainers (their titles) whose maps are stored or quick, comma-separated")
    parser.add_argument("--no-live", action="store_true", help="idle clicks only")
    parser.add_argument("--layouts-only", action="store_true",
                        help="display clicks only: the single film, then the compare and grid layouts")
    args = parser.parse_args()
    with explorer_session(args.store, args.port, init_script=INPUT) as (_, page):
        if args.layouts_only:
            results = _display(page, args.clicks)
        else:
            results = _idle(page, args.clicks, args.explainers.split(","))
        results |= _layouts(page, args.port, args.clicks, results["display: Map toggle"]["median_s"])
        if not args.no_live and not args.layouts_only:
            results |= _live(page, args.clicks, results["display: Map toggle"]["median_s"])
    info = {**machine(), "live_threads": os.environ.get("CXRXAI_LIVE_THREADS", "cores - 1"),
            "load_average": os.getloadavg()}
    out = Path(__file__).parent / "results" / ("live-latency-layouts.json" if args.layouts_only else "live-latency.json")
    record = {"machine": info, "store": str(args.store), "interaction": "input event → film painted",
              "results": results}
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"\n{info}\nwritten to {out}")


if __name__ == "__main__":
    main()
