"""Throughput of ``precompute``: the local engine against Ray with 1 and 2 workers, in one run.

    .venv/bin/python -m benchmarks.ray_engine [--images 48] [--per-label 2]

Writes a phantom dataset in the folder layout (``--images`` radiographs at 224 px, PNG), then
precomputes it three times into fresh stores with the demo DenseNet-121: predictions, Grad-CAM for
every image × finding, occlusion 32/16 on ``--per-label`` positives per finding. Reports images/s
(predictions) and maps/s (Grad-CAM, occlusion) per engine, and the ratio to the local engine.
Results go to ``benchmarks/results/ray-engine.json``. On 2 cores, 2 Ray workers with one thread
each compete with the driver (which ingests parts and scores): the point of the engine is a
cluster, and this measures its overhead where there is none.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import pandas as pd

from cxrxai import paths
from cxrxai.cli import main
from cxrxai.cli.bench import machine
from cxrxai.data.phantom import PhantomConfig, render, sample_cohort
from cxrxai.data.phantom_files import write_radiograph
from cxrxai.labels import DEMO_LABELS

FINDINGS = [lab for lab in DEMO_LABELS if lab != "No Finding"]


def _dataset(root: Path, n: int) -> list[str]:
    """``n`` phantom radiographs + cases.csv (path, 0/1 per finding, sex, age, split=test)."""
    config = PhantomConfig(n_images=max(n, 64), seed=42)
    rows = []
    for k, spec in enumerate(sample_cohort(config)[:n]):
        rel = f"films/{k:04d}.png"
        write_radiograph(render(spec, config).image, root / rel, fmt="png8")
        rows.append({"path": rel, "patient_id": spec.patient_id, "sex": spec.sex, "age": spec.age, "view": spec.view,
                     "split": "test", **{lab: int(lab in spec.findings) for lab in FINDINGS}})
    pd.DataFrame(rows).to_csv(root / "cases.csv", index=False)
    return ["--dataset", "folder", "--root", str(root), "--data-option", f"csv={root / 'cases.csv'}",
            "--data-option", "labels=" + ",".join(FINDINGS)]


def _run(args: list[str], store: Path, engine: list[str]) -> dict:
    import contextlib
    import io

    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = main(["precompute", *args, "--store", str(store), *engine])
    wall = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"precompute {' '.join(engine) or 'local'} failed ({code})")
    text = out.getvalue()
    report = json.loads(text[text.index("{"):])
    return {"wall_s": round(wall, 1), "report": report}


def main_(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=48)
    p.add_argument("--per-label", type=int, default=2)
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cxrxai-ray-bench-"))
    data = _dataset(work / "data", args.images)
    common = [*data, "--model", str(paths.demo_model_path()), "--split", "all",
              "--explainers", "gradcam,occlusion", "--per-label", str(args.per_label)]
    runs = {}
    for name, engine in (("local", []), ("ray-1", ["--engine", "ray", "--ray-cpus", "1"]),
                         ("ray-2", ["--engine", "ray", "--ray-cpus", "2"])):
        store = work / f"{name}.duckdb"
        shutil.rmtree(f"{store}.parts", ignore_errors=True)
        r = _run(common, store, engine)
        rep = r["report"]
        occl = rep["maps"]["occlusion"]["computed"]
        n_cams = rep["cams"]["pairs"]
        runs[name] = {
            "wall_s": r["wall_s"],
            "images_per_s": round(args.images / rep["predictions"]["seconds"], 2),
            "gradcam_maps_per_s": round(n_cams / rep["cams"]["seconds"], 2),
            "occlusion_maps_per_s": round(occl / rep["maps"]["seconds"], 3) if occl else None,
            "units": rep.get("engine", {}).get("units"), "workers": rep.get("engine", {}).get("workers"),
        }
        print(name, runs[name], flush=True)
    for name in ("ray-1", "ray-2"):
        runs[name]["vs_local"] = {k: round(runs[name][k] / runs["local"][k], 2) for k in
                                  ("images_per_s", "gradcam_maps_per_s", "occlusion_maps_per_s") if runs["local"][k]}
    out = {"machine": machine(), "images": args.images, "per_label": args.per_label, "model": "demo-densenet121",
           "runs": runs}
    target = Path(__file__).resolve().parent / "results" / "ray-engine.json"
    target.write_text(json.dumps(out, indent=1) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main_())
