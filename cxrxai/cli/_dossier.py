"""``dossier``: the audit dossier of one model (against the one it replaces, ``--vs``) as one
self-contained HTML file (:mod:`cxrxai.dossier`)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from .. import paths
from . import _only_model, command


def _add_dossier(p: argparse.ArgumentParser) -> None:
    from ..metrics.comparison import CORRECTIONS

    p.add_argument("--store", type=Path, default=None, help="store to read (default data_cache/demo.duckdb)")
    p.add_argument("--model", default=None,
                   help="the model audited (default: the store's only model with predictions)")
    p.add_argument("--vs", default=None, metavar="OLD_MODEL",
                   help="the model it replaces: paired comparison on the images both predicted (DeLong for "
                        "AUROC, McNemar for TPR / FPR, per finding, overall and by sex and age bin)")
    p.add_argument("--correction", choices=sorted(CORRECTIONS), default="holm",
                   help="the family's multiple-comparison correction: holm (family-wise error, default) or "
                        "fdr_bh (Benjamini-Hochberg false discovery rate)")
    p.add_argument("--out", type=Path, default=Path("audit.html"),
                   help="the HTML file to write (default audit.html); it opens offline and prints on A4")


@command("dossier", "the audit dossier: one self-contained HTML file with every analysis, its n, CIs, "
                    "computed findings and provenance; --vs OLD audits a model update against the model "
                    "it replaces", _add_dossier)
def _dossier(args) -> int:
    from ..dossier import write_dossier
    from ..store import open_store

    start = time.perf_counter()
    with open_store(args.store or paths.demo_store()) as store:
        model_id = args.model or _only_model(store)
        out = write_dossier(store, model_id, args.out, vs=args.vs, correction=args.correction)
    print(json.dumps({"out": str(out), "model": model_id, "vs": args.vs, "bytes": out.stat().st_size,
                      "seconds": round(time.perf_counter() - start, 1)}))
    return 0
