"""How soon a live map paints and finishes on the demo model, as the explorer computes it.

    .venv/bin/python -m benchmarks.live_occlusion [--repeats 2] [--only 32/16,IG]

The demo DenseNet-121 (224 px, shipped weights) in the app's worker: ``LiveWorker(process=True)``,
a spawned child with cores − 1 torch threads (``CXRXAI_LIVE_THREADS``), warmed first as the
explorer warms it. Per setting, seconds from submitting the job until the coarse grid
(stride = patch) arrives, until the first partial map of the fine pass (occlusion paints the
windows it has about every second), and until the final map, in wall seconds and in CPU seconds
of the child (what the map costs, less sensitive to a shared machine's load). "after 16/16" runs 16/16 first in
the same worker, so its windows are reused; the other rows start from a fresh worker. The image
is a fixed smooth random film (a map's cost does not depend on its pixels). Results go to
``benchmarks/results/live-occlusion.json`` with the machine and its load (``os.getloadavg``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from pathlib import Path

import numpy as np
import torch

from cxrxai import paths
from cxrxai.cli.bench import machine
from cxrxai.live import JobState, LiveWorker, explain_job, warm_job
from cxrxai.models.spec import ModelSpec, preprocess
from cxrxai.models.stored import load_stored

#: (row, method, params, settings computed first in the same worker)
ROWS = (
    ("32/16", "occlusion", {"patch": 32, "stride": 16}, ()),
    ("16/8 after 16/16", "occlusion", {"patch": 16, "stride": 8}, ({"patch": 16, "stride": 16},)),
    ("IG", "ig", {}, ()),
    ("XRAI", "xrai", {}, ()),
    ("16/8", "occlusion", {"patch": 16, "stride": 8}, ()),
    ("8/4 after 8/8", "occlusion", {"patch": 8, "stride": 4}, ({"patch": 8, "stride": 8},)),
    ("8/4", "occlusion", {"patch": 8, "stride": 4}, ()),
)


def _film(size: int) -> np.ndarray:
    import cv2

    noise = np.random.default_rng(0).random((size, size)).astype(np.float32)
    return cv2.GaussianBlur(noise, (0, 0), sigmaX=size / 20)


def _cpu_s() -> float:
    """CPU seconds the worker's child has used (Linux ``/proc``): what a map costs, whatever else runs."""
    (child,) = multiprocessing.active_children()
    fields = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(worker, model, x, method: str, params: dict, weights: str) -> dict:
    """Wall and child-CPU seconds to the coarse grid, the first fine-pass partial map and the final map."""
    job = worker.submit(explain_job(model, x, 4, method, params, owner="bench", case_key=("bench",),
                                    weights_path=weights))
    t0, c0, seen = time.perf_counter(), _cpu_s(), {}

    def mark(name: str) -> None:
        if name not in seen:
            seen[name] = (round(time.perf_counter() - t0, 2), round(_cpu_s() - c0, 2))

    while not job.finished:
        if job.stage == "coarse":
            mark("coarse")
            if job.partial is not None and not hasattr(job.partial, "scores"):
                mark("first fine paint")  # a partial map after the coarse grid
        time.sleep(0.005)
    if job.state != JobState.DONE:
        raise RuntimeError(f"{method} {params}: {job.state} {job.error}")
    mark("final")
    return {f"{k} {unit}": v[i] for k, v in seen.items() for i, unit in enumerate(("s", "cpu s"))}


def _row(model, x, weights: str, method: str, params: dict, before: tuple) -> dict:
    worker = LiveWorker(process=True)
    try:
        warm = worker.submit(warm_job(model.spec.to_json(), weights))
        warm.wait(300)
        for earlier in before:
            _timed(worker, model, x, method, earlier, weights)
        return _timed(worker, model, x, method, params, weights)
    finally:
        worker.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated row names (default: every row)")
    args = ap.parse_args()
    weights = str(paths.demo_model_path("demo-densenet121"))
    spec = ModelSpec.from_json(Path(weights).with_suffix(".json").read_text())
    model = load_stored(spec, weights, device="cpu")
    x = preprocess(_film(spec.input_size)[None], spec).to(torch.device("cpu"))
    wanted = [r for r in ROWS if not args.only or r[0] in args.only.split(",")]
    info = {**machine(), "live_threads": os.environ.get("CXRXAI_LIVE_THREADS", "cores - 1")}
    out = Path(__file__).parent / "results" / "live-occlusion.json"
    results = []
    for name, method, params, before in wanted:
        for repeat in range(args.repeats):
            load = os.getloadavg()[0]
            timing = _row(model, x, weights, method, params, before)
            results.append({"setting": name, "repeat": repeat, "load_1min": round(load, 2), **timing})
            print(json.dumps(results[-1]), flush=True)
            out.write_text(json.dumps({"machine": info, "model": spec.name, "rows": results}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
