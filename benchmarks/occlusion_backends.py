"""Exact CPU backends for the part of occlusion every window changes, against Captum, in one run.

    .venv/bin/python -m benchmarks.occlusion_backends [--size 256] [--patch 32] [--stride 16]

The incremental engine (``cxrxai/explain/_incremental.py``) recomputes the stem and dense blocks
1–2 only where a window can change them. Dense blocks 3–4 and the classifier (its ``_tail``)
see a change everywhere for any window of 32 px at 256 px (the changed region has covered the
whole 16×16 grid by the end of block 2), so they run in full for every window and bound the
speed-up. This script runs that tail through each exact CPU backend it finds installed —
eager PyTorch, ``torch.compile`` (inductor), ONNX Runtime and OpenVINO (``pip install
onnxruntime onnx openvino``; neither is a dependency of cxrxai) — and reports, in the same run:

* ms per window of the tail alone, per backend, with the compile/convert time;
* the whole occlusion map with each backend plugged into the incremental engine, its largest
  difference from Captum's map relative to the largest attribution (must stay ≤ 1e-4), and
  the speed-up over Captum's default ``Occlusion``.

Results go to ``benchmarks/results/occlusion-backends-cpu.json``.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from captum.attr import Occlusion

from cxrxai import paths
from cxrxai.cli.bench import bench_image, machine
from cxrxai.explain import _incremental
from cxrxai.explain._common import baseline_tensor
from cxrxai.explain.occlusion import occlusion_grid
from cxrxai.models.registry import load


class Tail(torch.nn.Module):
    """Dense blocks 3–4, norm, pooling and classifier of a torchvision DenseNet."""

    def __init__(self, module: torch.nn.Module):
        super().__init__()
        self.m = module

    def forward(self, t2: torch.Tensor) -> torch.Tensor:
        f = self.m.features
        h = f.norm5(f.denseblock4(f.transition3(f.denseblock3(t2))))
        return self.m.classifier(F.adaptive_avg_pool2d(F.relu(h), 1).flatten(1))


def _backends(tail: Tail, example: torch.Tensor, threads: int) -> dict:
    """name → (callable on a tensor, seconds to build it); missing packages are skipped."""
    out = {"eager": (lambda t: tail(t.contiguous(memory_format=torch.channels_last)), 0.0)}
    t0 = time.perf_counter()
    compiled = torch.compile(tail)
    compiled(example)
    out["inductor"] = (compiled, time.perf_counter() - t0)
    try:
        import onnxruntime as ort

        t0 = time.perf_counter()
        path = Path("/tmp/cxrxai-tail.onnx")
        torch.onnx.export(tail, (example,), str(path), input_names=["t2"], output_names=["y"],
                          dynamic_axes={"t2": {0: "b"}}, opset_version=17, dynamo=False)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        out["onnxruntime"] = (lambda t: torch.from_numpy(session.run(None, {"t2": t.contiguous().numpy()})[0]),
                              time.perf_counter() - t0)
    except ImportError as e:
        print(f"onnxruntime skipped: {e}")
    try:
        import openvino as ov

        t0 = time.perf_counter()
        converted = ov.convert_model(tail, example_input=example, input=[(-1, *example.shape[1:])])
        net = ov.Core().compile_model(converted, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                          "INFERENCE_PRECISION_HINT": "f32",
                                                          "PERFORMANCE_HINT": "LATENCY"})
        out["openvino"] = (lambda t: torch.from_numpy(net(t.contiguous().numpy())[0]), time.perf_counter() - t0)
    except ImportError as e:
        print(f"openvino skipped: {e}")
    return out


def _tail_input(module: torch.nn.Module, x: torch.Tensor, batch: int) -> torch.Tensor:
    f = module.features
    t2 = f.transition2(f.denseblock2(f.transition1(f.denseblock1(f.pool0(f.relu0(f.norm0(f.conv0(x))))))))
    noise = torch.randn(batch, *t2.shape[1:], generator=torch.Generator().manual_seed(0))
    return (t2.expand(batch, -1, -1, -1) + 0.01 * noise).contiguous(memory_format=torch.channels_last)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--patch", type=int, default=32)
    parser.add_argument("--stride", type=int, default=16)
    parser.add_argument("--batch", type=int, default=16, help="windows per tail call (the engine's CPU default)")
    args = parser.parse_args()
    model = load(paths.demo_model_path(), device="cpu")
    module = model.module.float().eval()
    x, target = bench_image(model, args.size)
    threads = torch.get_num_threads()
    rows = []
    with torch.inference_mode():
        example = _tail_input(module, x, args.batch)
        tail = Tail(module).eval()
        backends = _backends(tail, example, threads)
        reference = tail(example)
        for name, (fn, build_s) in backends.items():
            fn(example)
            t0 = time.perf_counter()
            for _ in range(3):
                y = fn(example)
            ms = (time.perf_counter() - t0) / 3 / args.batch * 1000
            rows.append({"backend": name, "build_s": round(build_s, 2), "tail_ms_per_window": round(ms, 2),
                         "tail_max_abs_diff": float((y - reference).abs().max())})
            print(f"tail {name:<12} {ms:6.1f} ms/window (built in {build_s:.1f} s)", flush=True)
    baseline = baseline_tensor("black", x, model.spec)
    plain = copy.deepcopy(module).to(memory_format=torch.contiguous_format)  # as a user hands it to Captum
    t0 = time.perf_counter()
    with torch.no_grad():
        captum_map = Occlusion(plain).attribute(
            x.contiguous(), target=target, sliding_window_shapes=(x.shape[1], args.patch, args.patch),
            strides=(1, args.stride, args.stride), baselines=baseline)[0, 0].numpy()
    captum_s = time.perf_counter() - t0
    scale = float(np.abs(captum_map).max())
    print(f"captum default Occlusion {args.patch}/{args.stride}: {captum_s:.2f} s", flush=True)
    original = _incremental.IncrementalDenseNet._tail
    try:
        for row in rows:
            fn = backends[row["backend"]][0]
            _incremental.IncrementalDenseNet._tail = lambda self, t2, fn=fn: fn(t2)
            t0 = time.perf_counter()
            grid = occlusion_grid(module, x, target, baseline, patch=args.patch, stride=args.stride,
                                  engine="incremental")
            seconds = time.perf_counter() - t0
            ours = grid.to_map()
            row.update(map_s=round(seconds, 2), speedup_vs_captum=round(captum_s / seconds, 2),
                       map_max_abs_diff_rel=float(np.abs(ours - captum_map).max() / scale))
            print(f"map  {row['backend']:<12} {seconds:6.2f} s  {row['speedup_vs_captum']:.2f}× Captum  "
                  f"max|Δ|/max {row['map_max_abs_diff_rel']:.1e}", flush=True)
    finally:
        _incremental.IncrementalDenseNet._tail = original
    info = machine()
    out = Path(__file__).parent / "results" / "occlusion-backends-cpu.json"
    out.write_text(json.dumps({"machine": info, "size": args.size, "patch": args.patch, "stride": args.stride,
                               "captum_default_s": round(captum_s, 2), "backends": rows}, indent=1) + "\n")
    print(f"\n{info}\nwritten to {out}")


if __name__ == "__main__":
    main()
