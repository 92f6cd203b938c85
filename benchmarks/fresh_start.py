"""From a fresh clone to the first chart, then to the whole evidence, timed the way a user meets it.

    .venv/bin/python -m benchmarks.fresh_start [--workdir /tmp/cxrxai-fresh] [--pages] [--evidence] [--port 8765]

Clones this repository (its committed HEAD) into ``--workdir``, installs it (``make install``,
timed apart), then runs ``make app`` there (the quick phase, then the app, which starts the
evidence build in the background) and opens the Overview in Debian's Chromium (Playwright) until
its heading and first chart are drawn. With ``--pages`` it then opens every Explanations page for
every model in the sidebar's picker, as a user clicks through them, and records when all of them
show their charts with a count (n) and none says the store lacks its evidence. With ``--evidence``
it then watches the background build through its status file, the way the sidebar does, recording
when each step of each round starts, and when each model's first look and full evidence are
complete, until the build finishes (``evidence_built_at`` in the store). Nothing else should run
on the machine meanwhile, unless ``--busy N`` asks for it: N processes spinning on a core each from
``make app`` to the first chart (the issue's "2 busy cores": ``--busy 2``), the load averages
recorded. Results go to ``benchmarks/results/fresh-start.json`` (of the checkout that runs the
script).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from cxrxai.cli.bench import machine

from ._browser import chromium, open_picker, pick, wait_healthy

ROOT = Path(__file__).resolve().parents[1]


def _first_chart(port: int, t0: float) -> dict:
    """Seconds (from ``t0``) until the Overview's heading and its first Plotly chart are drawn."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = chromium(p)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"http://127.0.0.1:{port}/", timeout=120_000)
        page.get_by_role("heading", name="Overview").first.wait_for(timeout=300_000)
        heading = time.monotonic() - t0
        page.locator('[data-testid="stPlotlyChart"] .main-svg').first.wait_for(timeout=300_000)
        chart = time.monotonic() - t0
        page.screenshot(path=str(ROOT / "benchmarks" / "results" / "fresh-start-overview.png"))
        browser.close()
    return {"overview_heading_s": round(heading, 1), "overview_first_chart_s": round(chart, 1)}


#: What the app says on a page whose evidence is still to come (pages/_widgets.missing,
#: cxrxai.summaries.fill_hint); a page without charts that says neither tells why (e.g. a model the
#: demo keeps for repeatability, with its CAMs only)
PENDING = ("The store has no", "the background build computes it")
#: "n = 40", "n=40", "0.318n=61" (a heatmap cell's value and count): a number's count beside it
N_SHOWN = r"(?<![A-Za-z])n\s?=\s?\d"


def _idle(page, quiet_ms: int = 1500, limit_s: float = 300) -> None:
    """Wait until the app's script has finished (no running indicator for ``quiet_ms``)."""
    running, since, t = page.locator('[data-testid="stStatusWidget"]'), None, time.monotonic()
    while time.monotonic() - t < limit_s:
        if running.count():
            since = None
        elif since is None:
            since = time.monotonic()
        elif time.monotonic() - since > quiet_ms / 1000:
            return
        page.wait_for_timeout(100)
    raise SystemExit(f"the page was still running after {limit_s:.0f} s")


def _evidence_pages(port: int, t0: float) -> dict:
    """Every Explanations page for every model in the sidebar's picker, the way a user opens them:
    its charts, how many of them show a count (n) in their own text (title, legend, labels), whether
    the page shows one, what it says instead of charts; when every one
    of them was complete (seconds from ``t0``), or None: a page whose evidence is still to come, or
    one with charts and no n."""
    import re

    from playwright.sync_api import sync_playwright

    from pages._shell import SECTIONS

    rows = []
    with sync_playwright() as p:
        browser = chromium(p)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"http://127.0.0.1:{port}/", timeout=120_000)
        page.get_by_role("heading", name="Overview").first.wait_for(timeout=300_000)
        _idle(page)
        models = open_picker(page, "Model")
        page.keyboard.press("Escape")
        for model in models:
            pick(page, "Model", model)
            _idle(page)
            for _, title, _ in SECTIONS["Explanations"]:
                page.get_by_role("link", name=title).first.click()
                _idle(page)
                main = page.locator('[data-testid="stMain"]')
                text = main.inner_text()
                info = main.locator('[data-testid="stAlertContentInfo"]')
                charts = main.locator('[data-testid="stPlotlyChart"]')
                rows.append({"model": model, "page": title, "at_s": round(time.monotonic() - t0, 1),
                             "charts": charts.count(),
                             "charts_with_n": sum(bool(re.search(N_SHOWN, c.inner_text())) for c in charts.all()),
                             "tables": main.locator('[data-testid="stDataFrame"]').count(),
                             "n_shown": bool(re.search(N_SHOWN, text)),
                             "pending": any(p in text for p in PENDING),
                             "says": info.first.inner_text()[:300] if info.count() else ""})
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        browser.close()
    # complete: nothing still to come, and every page with charts shows n (one without says why)
    complete = all(not r["pending"] and (r["n_shown"] if r["charts"] else r["says"]) for r in rows)
    return {"pages": rows, "models": models, "every_page_complete_s": rows[-1]["at_s"] if complete and rows else None}


def _watch_evidence(store: Path, t0: float, limit_s: float) -> dict:
    """Follow the build's status file until the store says its evidence is complete."""
    from cxrxai.pipeline import background
    from cxrxai.store import open_store

    steps, last = [], None
    while time.monotonic() - t0 < limit_s:
        status = background.read_status(store) or {}
        key = (status.get("round"), status.get("stage_index"))
        if status.get("stage_index") is not None and key != last:
            last = key
            steps.append({"at_s": round(time.monotonic() - t0, 1), "round": status.get("round"),
                          "round_name": status.get("round_name"), "step": status.get("stage_index"),
                          "of": status.get("stages"), "name": status.get("step"), "model": status.get("model")})
            print(json.dumps(steps[-1]), file=sys.stderr, flush=True)
        if status.get("state") in ("finished", "failed", "stopped"):
            break
        time.sleep(5)
    done = time.monotonic() - t0
    with open_store(store) as s:
        built = s.meta("evidence_built_at")
    return {"steps": steps, "finished_s": round(done, 1), "state": (background.read_status(store) or {}).get("state"),
            "evidence_built_at": built}


def _milestones(steps: list[dict], finished_s: float) -> dict:
    """When each (round, model) was complete: the start of the next (round, model), or the end."""
    out, starts = {}, []
    for s in steps:
        if not starts or (starts[-1]["round"], starts[-1]["model"]) != (s["round"], s["model"]):
            starts.append(s)
    for k, s in enumerate(starts):
        end = starts[k + 1]["at_s"] if k + 1 < len(starts) else finished_s
        out[f"{s['round_name']} · {s['model']}"] = {"started_s": s["at_s"], "complete_s": end,
                                                   "minutes": round((end - s["at_s"]) / 60, 1)}
    return out


def _stop_build(store: Path) -> None:
    """The background build ends with the app's server (unless CXRXAI_BACKGROUND=keep is in the
    environment); the benchmark stops it explicitly all the same, and waits for it."""
    from cxrxai.pipeline import background

    background.stop(store, wait_s=60.0)


@contextmanager
def _busy(n: int):
    """``n`` processes spinning on a core each while the block runs: a machine busy with other work."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/cxrxai-fresh"))
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--pages", action="store_true",
                    help="then open every Explanations page for every model, timing when all are complete")
    ap.add_argument("--evidence", action="store_true", help="also time the background evidence build to its end")
    ap.add_argument("--limit-h", type=float, default=6.0, help="give up on the evidence after this many hours")
    ap.add_argument("--busy", type=int, default=0, metavar="N",
                    help="N processes spinning from `make app` to the first chart (a busy machine)")
    args = ap.parse_args(argv)
    if args.workdir.exists():
        shutil.rmtree(args.workdir)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(args.workdir)], check=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.workdir, capture_output=True, text=True,
                            check=True).stdout.strip()
    t = time.monotonic()
    subprocess.run(["make", "install"], cwd=args.workdir, check=True, stdout=subprocess.DEVNULL)
    result = {"commit": commit, "machine": machine(), "install_s": round(time.monotonic() - t, 1)}
    env = {**os.environ, "STREAMLIT_SERVER_PORT": str(args.port), "STREAMLIT_SERVER_HEADLESS": "true"}
    log = open(args.workdir / "make-app.log", "wb")
    t0 = time.monotonic()
    app = subprocess.Popen(["make", "app"], cwd=args.workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
                           start_new_session=True)
    try:
        with _busy(args.busy):
            wait_healthy(f"http://127.0.0.1:{args.port}", 900)
            result["server_answers_s"] = round(time.monotonic() - t0, 1)
            result.update(_first_chart(args.port, t0))
            result["busy"] = {"spinning": args.busy, "load_average": [round(x, 1) for x in os.getloadavg()]}
        if args.pages:
            result["evidence_pages"] = _evidence_pages(args.port, t0)
        if args.evidence:
            ev = _watch_evidence(args.workdir / "data_cache" / "demo.duckdb", t0, args.limit_h * 3600)
            result["evidence"] = {**ev, "milestones": _milestones(ev["steps"], ev["finished_s"])}
    finally:
        os.killpg(app.pid, signal.SIGTERM)
        log.close()
        _stop_build(args.workdir / "data_cache" / "demo.duckdb")
    out = ROOT / "benchmarks" / "results" / "fresh-start.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("evidence", "evidence_pages")}, indent=1))
    if "evidence_pages" in result:
        print("every Explanations page of every model complete at", result["evidence_pages"]["every_page_complete_s"], "s")
    if "evidence" in result:
        print(json.dumps(result["evidence"]["milestones"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
