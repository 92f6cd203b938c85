"""Scoring one map against a ground-truth mask at the film's own resolution: every localization
metric (:func:`cxrxai.metrics.registry.score_map`) against the reference path in the same run.

    .venv/bin/python -m benchmarks.native_scoring [--repeat 3]

Maps and masks are CheXlocalize's own (``tests/fixtures/chexlocalize``: the published Grad-CAM maps
of two validation films at 320 × 320, and their radiologists' segmentations at 2828 × 2320 and
2022 × 2021 px), every one of the 10 tasks of each film. The reference is the ranking as cxrxai
computed it until this benchmark was written: scikit-learn's ``confusion_matrix_at_thresholds``
(an argsort of every pixel) and the trapezoidal ROC and PR areas over its curve; everything else
in ``score_map`` is shared, so the ratio is the ranking's. Every metric of every map must agree
(AUCs to 1e-9, the rest exactly) before any time is reported. The last line projects
CheXlocalize's validation set (234 films × 10 tasks × 2 methods) from the mean over these 20 maps
(tasks with and without a lesion, as in the set).
Results go to ``benchmarks/results/native-scoring.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from unittest import mock

import numpy as np
from sklearn.metrics import auc as trapezoid_auc
from sklearn.metrics import confusion_matrix_at_thresholds

from cxrxai.bench import machine
from cxrxai.data.masks import decode_rle
from cxrxai.metrics import registry
from cxrxai.metrics.registry import score_map

FIX = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "chexlocalize"
OUT = Path(__file__).resolve().parent / "results" / "native-scoring.json"
VALIDATION_SET = 234 * 10 * 2  # films × tasks × methods (Saporta et al.'s validation set)


def reference_ranking(saliency: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """The ranking metrics as computed before (one argsort, curves, trapezoids)."""
    t = np.asarray(truth, bool)
    if not t.any():
        return {"roc_auc": float("nan"), "pr_auc": float("nan"), "ap": float("nan")}
    _, fps, _, tps, _ = confusion_matrix_at_thresholds(t.ravel(), np.asarray(saliency, np.float64).ravel())
    fps, tps = np.asarray(fps, float), np.asarray(tps, float)
    precision = np.r_[(tps / (tps + fps))[::-1], 1.0]
    recall = np.r_[(tps / tps[-1])[::-1], 0.0]
    roc = float("nan") if t.all() else float(trapezoid_auc(np.r_[0.0, fps] / fps[-1], np.r_[0.0, tps] / tps[-1]))
    return {"roc_auc": roc, "pr_auc": float(trapezoid_auc(recall, precision)),
            "ap": float(max(0.0, -np.sum(np.diff(recall) * precision[:-1])))}


def cases() -> list[tuple[str, np.ndarray, np.ndarray]]:
    maps = np.load(FIX / "maps.npz")
    segs = json.loads((FIX / "gt_segmentations_val.json").read_text())
    out = []
    for key in maps.files:
        film, task = key.split("|")
        seg = segs[film].get(task)
        if seg is not None:
            out.append((key, maps[key], decode_rle(seg["counts"], *seg["size"])))
    return out


def _timed(fn) -> tuple[dict, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _same(a: dict, b: dict) -> bool:
    for k, v in a.items():
        if isinstance(v, float) and np.isnan(v):
            if not np.isnan(b[k]):
                return False
        elif abs(float(v) - float(b[k])) > (1e-9 if k in ("roc_auc", "pr_auc", "ap") else 0.0):
            return False
    return True


def run(repeat: int) -> dict:
    rows = []
    for key, native, mask in cases():
        score_map(native, mask)  # warm-up
        new = [_timed(lambda: score_map(native, mask)) for _ in range(repeat)]
        with mock.patch.object(registry, "ranking_metrics", reference_ranking):
            ref = [_timed(lambda: score_map(native, mask)) for _ in range(repeat)]
        if not _same(new[0][0], ref[0][0]):
            raise SystemExit(f"{key}: scores differ\n new {new[0][0]}\n ref {ref[0][0]}")
        rows.append({"case": key, "mask": list(mask.shape), "lesion_share": round(float(mask.mean()), 4),
                     "new_s": statistics.median(s for _, s in new), "reference_s": statistics.median(s for _, s in ref)})
    lesion = [r for r in rows if r["lesion_share"] > 0]  # an empty mask skips the ranking in both paths
    new_med = statistics.median(r["new_s"] for r in lesion)
    ref_med = statistics.median(r["reference_s"] for r in lesion)
    new_mean = statistics.mean(r["new_s"] for r in rows)  # the set's mix of tasks with and without a lesion
    ref_mean = statistics.mean(r["reference_s"] for r in rows)
    return {"machine": machine(), "repeat": repeat, "maps": len(rows), "maps_with_lesion": len(lesion), "rows": rows,
            "median_new_ms": round(1000 * new_med, 1), "median_reference_ms": round(1000 * ref_med, 1),
            "speedup": round(ref_med / new_med, 2),
            "validation_set_min_new": round(VALIDATION_SET * new_mean / 60, 1),
            "validation_set_min_reference": round(VALIDATION_SET * ref_mean / 60, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    result = run(parser.parse_args().repeat)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1))
    print(f"{result['maps']} CheXlocalize maps, every metric equal to the reference; median per map with a lesion "
          f"(n = {result['maps_with_lesion']}) "
          f"{result['median_new_ms']} ms against {result['median_reference_ms']} ms ({result['speedup']}×)")
    print(f"CheXlocalize's validation set ({VALIDATION_SET} maps) on this machine: "
          f"{result['validation_set_min_new']} min against {result['validation_set_min_reference']} min")


if __name__ == "__main__":
    main()
