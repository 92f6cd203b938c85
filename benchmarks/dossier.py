"""Seconds the audit dossier takes to build (the time a reviewer's `cxrxai dossier` waits), per section:
the demo store (both demo models, ``--vs``; target ≤ 30 s on 2 cores) and a store of MIMIC-CXR's size
made here (377,110 images × 14 findings = 5.28 M prediction rows per model, two models, sex and age;
target ≤ 2 min). Also the DeLong test (midranks) against its pairwise definition on the same cases,
the reference computation the test suite checks it with, as a ratio.

    .venv/bin/python -m benchmarks.dossier [--store data_cache/demo.duckdb] [--images 377110]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cxrxai import paths
from cxrxai.dossier import SECTIONS, Context, build_dossier
from cxrxai.labels import age_bin
from cxrxai.metrics.comparison import delong_paired
from cxrxai.models.spec import ModelSpec
from cxrxai.store import open_store, write_store

#: CheXpert's 14 observations, as MIMIC-CXR-JPG labels them.
FINDINGS = ("Atelectasis", "Cardiomegaly", "Consolidation", "Edema", "Enlarged Cardiomediastinum", "Fracture",
            "Lung Lesion", "Lung Opacity", "No Finding", "Pleural Effusion", "Pleural Other", "Pneumonia",
            "Pneumothorax", "Support Devices")


def _timed(store, model: str, vs: str | None) -> dict:
    """The whole build, then each section alone on a fresh context (what it costs by itself)."""
    start = time.perf_counter()
    html = build_dossier(store, model, vs=vs, generated="Generated (benchmark)")
    total = time.perf_counter() - start
    sections = {}
    for key, sec in sorted(SECTIONS.items(), key=lambda kv: kv[1].order):
        t = time.perf_counter()
        sec.build(Context(store, model, vs))
        sections[key] = round(time.perf_counter() - t, 2)
    return {"seconds": round(total, 1), "bytes": len(html.encode()), "sections_alone_s": sections}


def mimic_size_store(path: Path, n_images: int, seed: int = 0) -> Path:
    """Two models' predictions on ``n_images`` images × 14 findings, labels at MIMIC-like prevalence
    (5–40 %), sex and age for every image; the new model is the old with noise on its logits."""
    rng = np.random.default_rng(seed)
    ids = np.char.add("m", np.arange(n_images).astype(str))
    age = rng.integers(18, 95, n_images)
    images = pd.DataFrame({"image_id": ids, "dataset": "mimic-size", "split": "test", "patient_id": ids,
                           "sex": rng.choice(["F", "M"], n_images), "age": age,
                           "age_bin": [age_bin(a) for a in age]})
    truth = (rng.random((n_images, len(FINDINGS))) < rng.uniform(0.05, 0.4, len(FINDINGS))).astype(np.int8)
    old = rng.normal(truth * 1.5 - 0.75, 1.0).astype(np.float32)
    new = (old + rng.normal(0, 0.3, old.shape)).astype(np.float32)
    with write_store(path) as w:
        w.put_dataset("mimic-size", source="folder", labels=list(FINDINGS))
        w.put_images(images)
        w.put_labels(pd.DataFrame({"image_id": np.repeat(ids, len(FINDINGS)),
                                   "label": np.tile(FINDINGS, n_images), "value": truth.ravel()}))
        for name, z in (("old", old), ("new", new)):
            w.put_model(ModelSpec(name=name, arch="densenet121", labels=FINDINGS, thresholds={}))
            w.put_predictions(name, list(ids), FINDINGS, z, 1 / (1 + np.exp(-z)))
            w.put_thresholds(name, [{"label": f, "threshold": 0.5, "method": "fixed", "criterion": None,
                                     "split": None} for f in FINDINGS])
    return path


def delong_ratio(n: int = 4000, seed: int = 0) -> dict:
    """Midrank DeLong against the pairwise definition (O(m·n)) on the same ``n`` cases."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    a, b = rng.normal(y, 1.0), rng.normal(y * 0.8, 1.0)
    t = time.perf_counter()
    fast = delong_paired(y, a, b)
    t_fast = time.perf_counter() - t
    t = time.perf_counter()
    for s in (a, b):
        x, w = s[y == 1], s[y == 0]
        psi = (x[:, None] > w[None, :]) + 0.5 * (x[:, None] == w[None, :])
        psi.mean(axis=1), psi.mean(axis=0)
    t_ref = time.perf_counter() - t
    return {"cases": n, "midranks_s": round(t_fast, 4), "pairwise_s": round(t_ref, 4),
            "speedup": round(t_ref / t_fast, 1), "p": fast["p"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=paths.demo_store())
    parser.add_argument("--images", type=int, default=377_110, help="images of the MIMIC-size store (0: skip)")
    args = parser.parse_args()
    result = {"machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores", "delong": delong_ratio()}
    with open_store(args.store) as store:
        result["demo"] = _timed(store, "demo-densenet121", "demo-resnet18")
    print(json.dumps({"demo": result["demo"]}, indent=1))
    if args.images:
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            path = mimic_size_store(Path(tmp) / "mimic.duckdb", args.images)
            built = round(time.perf_counter() - t, 1)
            with open_store(path) as store:
                rows = store.info()["counts"].get("predictions", 0)
                result["mimic_size"] = {"images": args.images, "prediction_rows": rows, "store_built_s": built,
                                        **_timed(store, "new", "old")}
    print(json.dumps(result, indent=1))
    out = Path(__file__).parent / "results" / "dossier.json"
    out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
