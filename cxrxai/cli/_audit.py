"""``audit-data``: what cxrxai did to each dataset of a store, as text, CSV or JSON."""

from __future__ import annotations

import argparse
import json
import sys

from .. import paths
from . import command
from ._paths import given


def _add_audit(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", action=given("store to read"), default=None,
                   help="store to audit (default data_cache/demo.duckdb)")
    p.add_argument("--dataset", default=None, help="only this dataset of the store (default: every one)")
    p.add_argument("--format", choices=["text", "csv", "json"], default="text",
                   help="text: sentences and tables, problems by kind with examples; csv: every section's "
                        "rows in one table (dataset, section, ...), section 'problems' lists every problem "
                        "row; json: the same per dataset and section, with each section's sentences and "
                        "why it is empty")
    p.epilog = ("Exit status 0 when a dataset was audited, 1 when the store holds no dataset, 2 on an error "
                "(no store, unknown dataset).")


@command("audit-data", "what cxrxai did to your data: films read and skipped (why), bit depth and "
                       "rescaling, orientation fixes, demographic coverage and sources, label matches, "
                       "splits, every problem",
         _add_audit)
def _audit(args) -> int:
    from ..audit import audit_store, to_frame, to_records, to_text
    from ..store import open_store

    with open_store(args.store or paths.demo_store()) as store:
        audit = audit_store(store, dataset=args.dataset)
    if args.format == "json":
        print(json.dumps(to_records(audit), indent=1, ensure_ascii=False))
    elif args.format == "csv":
        to_frame(audit).to_csv(sys.stdout, index=False)
    else:
        print(to_text(audit), end="")
    return 0 if audit.datasets else 1
