"""Latency of the app's non-recomputing interactions on a store of NIH size.

    .venv/bin/python -m benchmarks.app_latency [--store /tmp/nih-size.duckdb] [--rebuild]

Builds (once) a synthetic store shaped like NIH ChestX-ray14: 112,120 images of 30,805-ish
patients with NIH's sex and age mix, 15 labels with NIH's prevalences, predictions for every
image × label (1.68 M rows), thresholds, the alternative split (the 880 box images' patients in
test), boxes, Grad-CAM and Grad-CAM++ maps (7×7) and localization rows for the box subset.
Then times, cold and warm, the library calls behind each page interaction (what runs when a
widget changes, not counting Streamlit's own rendering). Target: < 300 ms each. The reader keeps
the last few prediction tables of a published version (the subgroup views slice one table many
ways), so its first fetch is timed on its own line.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cxrxai import reports, summaries
from cxrxai.data import nih_stats
from cxrxai.labels import FINDINGS, age_bin
from cxrxai.models.spec import ModelSpec
from cxrxai.store import open_store, params_key, write_store

LABELS = list(FINDINGS) + ["Consolidation", "Edema", "Emphysema", "Fibrosis", "Pleural_Thickening", "Hernia", "No Finding"]
PREVALENCE = [0.103, 0.025, 0.119, 0.177, 0.052, 0.056, 0.013, 0.047, 0.042, 0.021, 0.022, 0.015, 0.030, 0.002, 0.538]


def build(path: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    n = 112_120
    stats = nih_stats.load()
    patients = rng.integers(0, 30_805, n)
    sex = np.where(rng.random(n) < 0.565, "M", "F")
    edges = np.array(stats["age_edges"])
    hist = np.array(stats["age_hist"]["M"], float) + np.array(stats["age_hist"]["F"], float)
    age = edges[rng.choice(len(hist), n, p=hist / hist.sum())] + rng.integers(0, 5, n)
    ids = [f"{p:08d}_{i:03d}.png" for i, p in enumerate(patients)]
    box_patients = set(rng.choice(30_805, 726, replace=False).tolist())
    split = np.where(np.isin(patients, list(box_patients)), "test", np.where(rng.random(n) < 0.13, "val", "train"))
    images = pd.DataFrame({"image_id": ids, "dataset": "nih-size", "path": [f"images/{i}" for i in ids],
                           "patient_id": patients.astype(str), "sex": sex, "age": age.astype(float),
                           "age_bin": [age_bin(a) for a in age], "view": np.where(rng.random(n) < 0.4, "AP", "PA"),
                           "split": split, "width": 1024, "height": 1024})
    y = (rng.random((n, len(LABELS))) < np.array(PREVALENCE)).astype(int)
    logits = (rng.normal(0, 1, y.shape) + 2.2 * y - 2).astype(np.float32)
    spec = ModelSpec(name="nih-densenet121", arch="densenet121", labels=tuple(LABELS))
    test_idx = np.flatnonzero(split == "test")
    box_images = rng.choice(test_idx, 880, replace=False)
    with write_store(path, fresh=True) as w:
        w.put_dataset("nih-size", source="synthetic, NIH-shaped", labels=LABELS)
        w.put_images(images)
        w.put_labels(pd.DataFrame({"image_id": np.repeat(ids, len(LABELS)), "label": np.tile(LABELS, n),
                                   "value": y.ravel()}))
        w.put_model(spec)
        w.put_predictions(spec.name, ids, spec.labels, logits, 1 / (1 + np.exp(-logits)))
        w.put_thresholds(spec.name, [{"label": lab, "threshold": 0.3, "method": "f1", "criterion": 0.5, "split": "val"}
                                     for lab in LABELS])
        maps, loc, boxes = [], [], []
        for i in box_images:
            label = FINDINGS[int(rng.integers(0, 8))]
            boxes.append({"image_id": ids[i], "label": label, "reader": "gt", "instance": 0, "kind": "box",
                          "x": 300.0, "y": 300.0, "w": 200.0, "h": 150.0})
            for method in ("gradcam", "gradcam++"):
                maps.append({"model_id": spec.name, "image_id": ids[i], "label": label, "method": method,
                             "params": {"layer": "features.norm5", "output": "logit"}, "target": "logit", "kind": "cam",
                             "values": rng.random((7, 7)).astype(np.float32), "seconds": 0.01, "device": "cpu"})
                loc.append({"model_id": spec.name, "image_id": ids[i], "label": label, "method": method,
                            "params_key": params_key({"layer": "features.norm5", "output": "logit"}), "reader": "gt",
                            "prob": float(rng.random()), "gt_positive": True, "predicted": bool(rng.random() < 0.7),
                            "iou": float(rng.random()), "iou_full": float(rng.random()), "hit": float(rng.random() < 0.5),
                            "pla": float(rng.random() < 0.5), "roc_auc": float(rng.random())})
        w.put_annotations(pd.DataFrame(boxes))
        w.put_maps(maps)
        w.put_table("localization", pd.DataFrame(loc))


def timed(fn, repeat: int = 3) -> tuple[float, float]:
    t = time.perf_counter()
    fn()
    cold = time.perf_counter() - t
    warm = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t)
    return cold, min(warm)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=Path("/tmp/nih-size.duckdb"))
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()
    if args.rebuild or not args.store.exists():
        t = time.perf_counter()
        build(args.store)
        print(f"built {args.store} in {time.perf_counter() - t:.1f} s ({args.store.stat().st_size / 1e6:.0f} MB)")
    store = open_store(args.store)
    model = "nih-densenet121"
    cases = summaries.case_table(store, model, method="gradcam")
    some = cases[cases.label == "Mass"].image_id.iloc[0]
    idx = store.map_index(model_id=model, method="gradcam")
    m = idx.iloc[0]
    checks = {
        "open + info (Overview)": lambda: store.info(),
        "prediction table, first fetch": lambda: open_store(args.store).prediction_table(model, split="test"),
        "cohort counts (Overview)": lambda: summaries.cohort_table(store),
        "label counts (Overview)": lambda: summaries.label_table(store),
        "case table for the explorer": lambda: summaries.case_table(store, model, method="gradcam"),
        "filter cases (explorer widget)": lambda: summaries.filter_cases(cases, finding="Mass", sexes=["F"],
                                                                         outcomes=["TP"], prob_range=(0.2, 0.9)),
        "one case's annotations": lambda: store.annotations(image_id=some),
        "one stored map": lambda: store.get_map(model, m.image_id, m.label, "gradcam", m.params_key),
        "TPR by sex (Subgroups)": lambda: reports.subgroup_tpr(store, model, by="sex"),
        "TPR by sex × age (Subgroups)": lambda: reports.subgroup_tpr(store, model, by=["sex", "age_bin"]),
        "No Finding FPR/FNR (Subgroups)": lambda: reports.underdiagnosis(store, model, by="age_bin"),
        "explainer table (Benchmark)": lambda: reports.explainer_table(store, model),
    }
    rows = []
    for name, fn in checks.items():
        cold, warm = timed(fn)
        rows.append({"interaction": name, "cold_ms": round(1000 * cold, 1), "warm_ms": round(1000 * warm, 1)})
        print(f"{name:<40} cold {1000 * cold:8.1f} ms   warm {1000 * warm:8.1f} ms")
    out = Path(__file__).parent / "results" / "app-latency.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
