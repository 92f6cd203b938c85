"""Scoring one map against a ground-truth mask at the film's own resolution: every localization
metric (:func:`cxrxai.metrics.registry.segment_and_score`) against the previous path in the same run.

    .venv/bin/python -m benchmarks.native_scoring [--repeat 10] [--set-maps 4680] [--workers 2]

Part 1, per map: CheXlocalize's own maps and masks (``tests/fixtures/chexlocalize``: the published
Grad-CAM maps of two validation films at 320 × 320, and their radiologists' segmentations at
2828 × 2320 and 2022 × 2021 px), every one of the 10 tasks of each film. The reference is the path
as it was before the shared sort, frozen in ``benchmarks/reference_scoring.py`` (Otsu on a uint8
copy of the map, the ranking's two classes sorted apart, IoU with an OR and an AND). Every metric of
every map must agree (AUCs to 1e-9, the rest exactly, the segmentation pixel for pixel) before any
time is reported; the two paths alternate, ``--repeat`` times each, and the median counts.

Part 2, CheXlocalize's validation set at its size (234 films × 10 tasks × 2 methods = 4,680 maps):
synthetic films of native sizes (2000–3000 px a side), each scored with a 320 × 320 map (the
published maps, cycled) against an elliptic lesion, or no lesion in the fixtures' share of tasks,
on ``--workers`` processes. ``--set-maps`` below 4,680 measures that many and projects the set.

The machine is shared: the load average before and after is recorded with the times. Results go to
``benchmarks/results/native-scoring.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import torch

from benchmarks.reference_scoring import reference_scores
from cxrxai.cli.bench import machine
from cxrxai.data.masks import decode_rle
from cxrxai.metrics.registry import segment_and_score

FIX = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "chexlocalize"
OUT = Path(__file__).resolve().parent / "results" / "native-scoring.json"
VALIDATION_SET = 234 * 10 * 2  # films × tasks × methods (Saporta et al.'s validation set)
RANKING = ("roc_auc", "pr_auc", "ap")


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


def _timed(fn) -> tuple[float, float]:
    """(wall, CPU) seconds of ``fn()``: on a shared machine the CPU time is the one other processes
    inflate least (this process's own threads count in it, waiting for a core does not)."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def _same(new, ref: tuple[np.ndarray, dict]) -> bool:
    if not np.array_equal(new.mask, ref[0]):
        return False
    for k, v in ref[1].items():
        got = new.scores[k]
        if isinstance(v, float) and np.isnan(v):
            if not np.isnan(got):
                return False
        elif abs(float(v) - float(got)) > (1e-9 if k in RANKING else 0.0):
            return False
    return True


def per_map(repeat: int) -> list[dict]:
    """Both paths on every fixture map, alternating, after checking they agree."""
    rows = []
    for key, native, mask in _CASES:
        if not _same(segment_and_score(native, mask), reference_scores(native, mask)):
            raise SystemExit(f"{key}: the scores or the segmentation differ from the reference")
        new, ref = [], []
        for _ in range(repeat):
            new.append(_timed(lambda: segment_and_score(native, mask)))
            ref.append(_timed(lambda: reference_scores(native, mask)))
        rows.append({"case": key, "mask": list(mask.shape), "lesion_share": round(float(mask.mean()), 4),
                     **{f"{path}_{clock}_ms": round(1000 * statistics.median(t[i] for t in times), 1)
                        for path, times in (("new", new), ("reference", ref))
                        for i, clock in enumerate(("wall", "cpu"))}})
    return rows


def _ellipse(shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    h, w = shape
    cy, cx = rng.uniform(0.2, 0.8) * h, rng.uniform(0.2, 0.8) * w
    ry, rx = rng.uniform(0.03, 0.25) * h, rng.uniform(0.03, 0.25) * w
    y, x = np.ogrid[:h, :w]
    return ((y - cy) / ry) ** 2 + ((x - cx) / rx) ** 2 <= 1.0


def _score_synthetic(i: int) -> tuple[float, float]:
    """(wall, CPU) seconds to score synthetic map ``i`` of the set (film, map and lesion from seed i)."""
    rng = np.random.default_rng(i)
    maps = _FIXTURE_MAPS
    shape = (int(rng.integers(2000, 3001)), int(rng.integers(2000, 3001)))
    truth = _ellipse(shape, rng) if rng.random() >= _EMPTY_SHARE else np.zeros(shape, bool)
    return _timed(lambda: segment_and_score(maps[i % len(maps)], truth))


_CASES = cases()
_FIXTURE_MAPS = [m for _, m, _ in _CASES]
_EMPTY_SHARE = float(np.mean([not t.any() for _, _, t in _CASES]))


def validation_set(n_maps: int, workers: int) -> dict:
    """Wall time of ``n_maps`` synthetic maps of the set on ``workers`` processes (mask drawing
    included), projected to the whole set."""
    start = time.perf_counter()
    # a core each: one process per core, one torch thread per process
    with Pool(workers, initializer=torch.set_num_threads, initargs=(1,)) as pool:
        seconds = pool.map(_score_synthetic, range(n_maps), chunksize=8)
    wall = time.perf_counter() - start
    cpu = sum(c for _, c in seconds) / workers  # each process's scoring CPU time, one core each
    return {"maps": n_maps, "workers": workers, "wall_min": round(wall / 60, 2),
            "median_scoring_wall_ms": round(1000 * statistics.median(w for w, _ in seconds), 1),
            "median_scoring_cpu_ms": round(1000 * statistics.median(c for _, c in seconds), 1),
            "projected_set_min": round(wall * VALIDATION_SET / n_maps / 60, 2),
            "projected_set_cpu_min": round(cpu * VALIDATION_SET / n_maps / 60, 2),
            "lesion_free_share": round(_EMPTY_SHARE, 2)}


def run(repeat: int, set_maps: int, workers: int) -> dict:
    load_before = os.getloadavg()
    rows = per_map(repeat)
    lesion = [r for r in rows if r["lesion_share"] > 0]
    result = {"machine": machine(), "repeat": repeat, "maps": len(rows), "maps_with_lesion": len(lesion),
              "rows": rows, "load_before": [round(x, 2) for x in load_before]}
    for clock in ("wall", "cpu"):
        for subset, chosen in (("", rows), ("_with_lesion", lesion)):
            for path in ("new", "reference"):
                median = statistics.median(r[f"{path}_{clock}_ms"] for r in chosen)
                result[f"median_{path}_{clock}_ms{subset}"] = median
        ratio = result[f"median_reference_{clock}_ms"] / result[f"median_new_{clock}_ms"]
        result[f"speedup_{clock}"] = round(ratio, 2)
    if set_maps:
        result["validation_set"] = validation_set(set_maps, workers)
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--set-maps", type=int, default=VALIDATION_SET, help="0 skips part 2")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    result = run(args.repeat, args.set_maps, args.workers)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1))
    print(f"{result['maps']} CheXlocalize maps, every metric and segmentation equal to the reference")
    for clock in ("wall", "cpu"):
        r = {k.replace(f"_{clock}", ""): v for k, v in result.items() if f"_{clock}" in k}
        print(f"{clock}: median per map {r['median_new_ms']} ms against {r['median_reference_ms']} ms "
              f"({r['speedup']}×); with a lesion (n = {result['maps_with_lesion']}) "
              f"{r['median_new_ms_with_lesion']} ms against {r['median_reference_ms_with_lesion']} ms")
    if "validation_set" in result:
        v = result["validation_set"]
        print(f"CheXlocalize's validation set: {v['maps']} synthetic maps in {v['wall_min']} min on "
              f"{v['workers']} processes (median {v['median_scoring_wall_ms']} ms a map, CPU "
              f"{v['median_scoring_cpu_ms']} ms): the set's {VALIDATION_SET} in {v['projected_set_min']} min "
              f"({v['projected_set_cpu_min']} min of CPU a core)")
    print(f"load average before {result['load_before']}, after {result['load_after']}")


if __name__ == "__main__":
    main()
