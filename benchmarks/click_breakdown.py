"""Where a data click's time goes, in a real browser: the explorer's finding, case and explainer
clicks of ``benchmarks/live_latency.py``, each split on one wall clock (the page's and the film's
``performance.timeOrigin + performance.now()``).

    .venv/bin/python -m benchmarks.click_breakdown [--store data_cache/demo.duckdb] [--clicks 10]

The case is picked with a row of the case table and, where the explorer has them, with its
Previous/Next case buttons (``live_latency.steps``). For each click, from the moment the benchmark
asks for it (ms): ``sent`` (the browser sends the rerun request on the websocket), ``first`` (the
server's first answer), ``film`` (the last message before the film's frame is given the new figure:
the film's element, or its cached reference), ``received`` (the film's frame is given the new
figure: the page has rendered it), ``opened`` (the film's data decoded), ``drawn`` (the film
painted, as ``live_latency`` times it) and ``last`` (the rerun's last message); the messages' bytes;
the page's main-thread long tasks (> 50 ms) before the film is drawn; and the film's own parts
(``filmStats.parts``: blend, Plotly, paint). Medians and maxima to
``benchmarks/results/click-breakdown.json``.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

from cxrxai.cli.bench import machine

from . import live_latency as live
from ._browser import open_picker

#: Wraps the page's WebSocket (before Streamlit opens it) and observes its long tasks: every
#: message in and out with its wall-clock time and size, every long task with its start and length.
RECORD = """
(() => {
  const wall = () => performance.timeOrigin + performance.now();
  window.__ws = []; window.__long = [];
  const Socket = window.WebSocket;
  window.WebSocket = class extends Socket {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (e) => window.__ws.push(
        {dir: "in", t: wall(), n: e.data.byteLength ?? e.data.size ?? e.data.length}));
    }
    send(data) {
      window.__ws.push({dir: "out", t: wall(), n: data.byteLength ?? data.length});
      return super.send(data);
    }
  };
  new PerformanceObserver((list) => list.getEntries().forEach((e) => window.__long.push(
    {t: performance.timeOrigin + e.startTime, d: e.duration}))).observe({type: "longtask"});
})();
"""
WALL = "performance.timeOrigin + performance.now()"
#: How long after the film is drawn the rerun's last messages are waited for
TAIL_MS = 1500


def _split(page, act) -> dict:
    """One data click (``act(page)``), split as the module says."""
    page.evaluate("window.__ws = []; window.__long = []")
    before = live._drawn(page)
    t0 = page.evaluate(WALL)
    act(page)
    live._wait_film(page, before)
    page.wait_for_timeout(TAIL_MS)
    frame = live._frame(page)
    ws, long = page.evaluate("window.__ws"), page.evaluate("window.__long")
    marks, parts = frame.evaluate("window.filmStats.marks"), frame.evaluate("window.filmStats.parts")
    ins = [m for m in ws if m["dir"] == "in"]
    film = ([m for m in ins if m["t"] <= marks["received"]] or ins)[-1]
    out = next(m for m in ws if m["dir"] == "out")
    return {"sent": out["t"] - t0, "first": ins[0]["t"] - t0, "film": film["t"] - t0,
            "received": marks["received"] - t0, "opened": marks["opened"] - t0, "drawn": marks["drawn"] - t0,
            "last": ins[-1]["t"] - t0, "film_bytes": film["n"], "bytes": sum(m["n"] for m in ins),
            "messages": len(ins), "requests": sum(m["dir"] == "out" for m in ws),
            "long_tasks_ms": sum(e["d"] for e in long if e["t"] < marks["drawn"]),
            **{f"film_{k}_ms": parts[k] for k in ("blend", "plotly", "paint")}}


def _summary(rows: list[dict]) -> dict:
    def stats(values: list[float]) -> dict:
        return {"median": round(statistics.median(values), 1), "max": round(max(values), 1)}

    return {k: stats([r[k] for r in rows]) for k in rows[0]} | {"n": len(rows)}


def _picks(page, label: str, choices: list[str], clicks: int) -> list[dict]:
    rows = []
    for _ in range(clicks):
        open_picker(page, label)
        selected = page.get_by_role("option", selected=True)
        current = selected.first.inner_text() if selected.count() else None
        name = choices[1] if choices[0] == current else choices[0]
        option = page.get_by_role("option", name=name, exact=True)
        rows.append(_split(page, lambda p, o=option: o.click()))
    return rows


def _cases(page, clicks: int) -> list[dict]:
    live.grid_top(page)
    page.mouse.click(*live.grid_row(page, 0))
    page.wait_for_timeout(live.SETTLE_MS)
    rows = []
    for k in range(clicks):
        at = live.grid_row(page, (k + 1) % 2)
        rows.append(_split(page, lambda p, at=at: p.mouse.click(*at)))
    return rows


def main() -> None:
    parser = live.explorer_parser(__doc__, clicks=10, port=8766)
    parser.add_argument("--explainers", default="Grad-CAM,Grad-CAM++")
    args = parser.parse_args()
    with live.explorer_session(args.store, args.port, init_script=RECORD) as (_, page):
        results = {"finding": _summary(_picks(page, "Finding", live._findings(page), args.clicks))}
        results["case"] = _summary(_cases(page, args.clicks))
        if page.get_by_role("button", name=live.NEXT, exact=True).count():
            results["case, Previous/Next buttons"] = _summary(live.steps(page, args.clicks, _split))
        explainers = args.explainers.split(",")
        results["explainer"] = _summary(_picks(page, "Explainer", explainers, args.clicks))
    for click, parts in results.items():
        print(click, {k: v if k == "n" else v["median"] for k, v in parts.items()})
    out = Path(__file__).parent / "results" / "click-breakdown.json"
    info = {**machine(), "load_average": os.getloadavg()}
    record = {"machine": info, "store": str(args.store), "results": results}
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
