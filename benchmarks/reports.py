"""Seconds each paper table takes to compute from the demo store (target: under 2 s each,
bootstrap included).

    .venv/bin/python -m benchmarks.reports [--store data_cache/demo.duckdb]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from cxrxai import paths
from cxrxai.errors import CxrxaiError
from cxrxai.reports import REPORTS, run_report
from cxrxai.store import open_store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=paths.demo_store())
    parser.add_argument("--model", default="demo-densenet121")
    args = parser.parse_args()
    rows = []
    with open_store(args.store) as store:
        for name in REPORTS:
            t = time.perf_counter()
            try:
                n = len(run_report(store, name, args.model))
                status = f"{n} rows"
            except CxrxaiError as err:
                status = f"skipped: {err}"
            sec = time.perf_counter() - t
            rows.append({"report": name, "seconds": round(sec, 3), "status": status})
            print(f"{name:<28} {sec:6.2f} s   {status}")
    out = Path(__file__).parent / "results" / "reports.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
