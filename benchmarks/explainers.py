"""Explainer speed against the reference implementations, in one run on this machine.

    .venv/bin/python -m benchmarks.explainers [--size 256] [--quick]

Occlusion: Captum's default ``Occlusion`` (one copy per forward) vs ours, over the thesis's
patch/stride grid at 256 px, with the maps' largest difference; then seconds per map for
Grad-CAM (ours, Captum, closed form), Grad-CAM++, IG (50 steps) and GradientSHAP; predictions
and image decoding in images/s. Ratios, not absolute seconds, are what carries across machines. Results also go to
``benchmarks/results/explainers-<device>.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cxrxai import paths
from cxrxai.cli.bench import bench_decoding, bench_explainers, bench_occlusion, bench_predictions, machine
from cxrxai.models.registry import load
from cxrxai.pipeline.maps import SWEEP


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--quick", action="store_true", help="only 32/32 and 32/16")
    args = parser.parse_args()
    model = load(paths.demo_model_path())
    settings = SWEEP[:2] if args.quick else SWEEP
    occ = bench_occlusion(model, size=args.size, settings=settings, engines=("batched", "auto"), low_precision="bf16",
                          progress=lambda line: print(line, flush=True))
    exp = bench_explainers(model, size=args.size)
    pred = bench_predictions(model, size=model.spec.input_size)
    dec = bench_decoding(size=model.spec.input_size)
    info = machine()
    print(f"\n{info}\n")
    print(f"{'patch/stride':>12} {'positions':>9} {'captum s':>9} {'batched s':>9} {'ours s':>8} {'speed-up':>8} "
          f"{'max|Δ|/max':>10} {'bf16 s':>7} {'bf16 Δ':>8}")
    for r in occ:
        ours = min(v for k, v in r.items() if k.startswith("ours_"))
        print(f"{r['patch']:>6}/{r['stride']:<5} {r['positions']:>9} {r['captum_default_s']:>9.2f} "
              f"{r.get('ours_batched_s', float('nan')):>9.2f} {ours:>8.2f} {r['speedup']:>7.1f}× {r['max_abs_diff_rel']:>10.1e} "
              f"{r.get('bf16_s', float('nan')):>7.2f} {r.get('bf16_max_abs_diff_rel', float('nan')):>8.1e}")
    print()
    for r in exp:
        print(f"{r['method']:<48} {r['seconds']:>8.3f} s")
    print(f"{'predictions':<48} {pred['images_per_s']:>8.1f} images/s at {pred['size']} px")
    print(f"{'decoding 1024 px PNG, one worker':<48} {dec['one_worker_images_per_s']:>8.1f} images/s")
    print(f"{'decoding 1024 px PNG, worker pool':<48} {dec['pool_images_per_s']:>8.1f} images/s")
    out = Path(__file__).parent / "results" / f"explainers-{info['device'].split(':')[0]}-{args.size}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"machine": info, "size": args.size, "occlusion": occ, "explainers": exp,
                               "predictions": pred, "decoding": dec}, indent=1) + "\n")
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
