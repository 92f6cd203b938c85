"""The ``demo-evidence`` command: export a built demo store's result tables as the shipped snapshot."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .. import paths
from . import command


def _add(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", type=Path, default=None,
                   help="the built store to export (default data_cache/demo.duckdb); which build steps are "
                        "complete comes from its build status file (--status of `demo`)")
    p.add_argument("--out", type=Path, default=None,
                   help="snapshot folder (default: the shipped data_cache/evidence); "
                        "its Parquet files are replaced")


@command("demo-evidence", "export a demo store's result tables (not its maps) and their provenance as the "
         "evidence snapshot a new demo store starts from (`make demo-evidence` builds the store first)", _add)
def _demo_evidence(args) -> int:
    from ..pipeline.evidence import export_snapshot, shipped_dir

    out = args.out or shipped_dir()
    prov = export_snapshot(args.store or paths.demo_store(), out)
    size = sum(f.stat().st_size for f in out.iterdir() if f.is_file())
    print(json.dumps({"out": str(out), "bytes": size, "steps": len(prov["steps"]),
                      "evidence_complete": prov["evidence_complete"], "tables": prov["tables"],
                      "models": {m: w["sha256"][:12] for m, w in prov["models"].items()}}, indent=1))
    return 0
