"""The explorer server's memory over many data clicks, with Streamlit's full garbage collection
after every run off (this app's ``.streamlit/config.toml``: ``runner.postScriptGC = false``, for
the clicks' latency) and on (Streamlit's default), one after the other in one run.

    .venv/bin/python -m benchmarks.server_memory [--store data_cache/demo.duckdb] [--clicks 40]

Serves the app on the store, opens the explorer in Debian's Chromium and makes ``--clicks`` finding
clicks and as many case clicks (each drawing another film), reading the server's resident memory
(VmRSS) before, every 10 clicks and after. Results go to ``benchmarks/results/server-memory.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from cxrxai.cli.bench import machine

from . import live_latency as live


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise SystemExit(f"no VmRSS for process {pid}")


def _session(store: Path, port: int, clicks: int, collect: bool) -> dict:
    with live.explorer_session(store, port, "--runner.postScriptGC", "true" if collect else "false") as (server,
                                                                                                        page):
        live._settled(page)
        rss, findings = [_rss_mb(server.pid)], live._findings(page)
        for _ in range(0, clicks, 10):
            live._picks(page, "Finding", findings, 5)
            live._cases(page, 5)
            rss.append(_rss_mb(server.pid))
            print(f"postScriptGC={collect}: {rss}", flush=True)
    return {"rss_mb": rss, "growth_mb": round(rss[-1] - rss[0], 1), "peak_mb": max(rss)}


def main() -> None:
    parser = live.explorer_parser(__doc__, clicks=40, port=8767)
    args = parser.parse_args()
    result = {"machine": machine(), "clicks": args.clicks, "store": str(args.store),
              "off (the app's setting)": _session(args.store, args.port, args.clicks, False),
              "on (Streamlit's default)": _session(args.store, args.port, args.clicks, True)}
    out = Path(__file__).resolve().parent / "results" / "server-memory.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
