"""Speed of the explainers against their reference implementations, on one machine, in one run.

Occlusion: Captum's ``Occlusion`` with its defaults (one occluded copy per forward, the model
as a user loads it: eval, NCHW) against ours (batched; incremental on CPU), for the thesis grid
at 256 px — positions, seconds for each, their ratio and the maps' largest difference relative
to the largest attribution. Grad-CAM (ours, closed form, and Captum's LayerGradCam),
Grad-CAM++, IG (50 steps) and GradientSHAP: seconds per map. Results are returned as data;
``python -m cxrxai bench`` and ``benchmarks/explainers.py`` print them.
"""

from __future__ import annotations

import copy
import platform
import time
from collections.abc import Callable

import numpy as np
import torch
from captum.attr import LayerGradCam, Occlusion

from ..data.phantom import PhantomConfig, render, sample_cohort
from ..explain import explain
from ..explain._common import baseline_tensor
from ..explain.cam import linear_head_cams
from ..explain.occlusion import grid_shape, occlusion_grid, pick_engine
from ..models.registry import LoadedModel
from ..models.spec import preprocess
from ..pipeline.maps import SWEEP

__all__ = [
    "bench_decoding",
    "bench_explainers",
    "bench_image",
    "bench_occlusion",
    "bench_predictions",
    "machine",
]


def machine() -> dict:
    dev = "cuda: " + torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    return {
        "device": dev,
        "cpu": platform.processor() or platform.machine(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }


def _phantom(size: int, label: str) -> np.ndarray:
    config = PhantomConfig(size=size)
    spec = next(s for s in sample_cohort(config) if s.split == "test" and label in s.findings)
    return render(spec, config).image


def bench_image(model: LoadedModel, size: int, *, label: str = "Cardiomegaly") -> tuple[torch.Tensor, int]:
    """A phantom test image with ``label``, rendered at ``size`` px, and the label's index."""
    x = preprocess(_phantom(size, label), model.spec.with_(input_size=size)).to(model.device)
    return x, model.spec.label_index(label)


def _timed(fn: Callable, repeat: int = 1):
    best, out = float("inf"), None
    for _ in range(repeat):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        t = time.perf_counter()
        out = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best, out


def bench_occlusion(model: LoadedModel, *, size: int = 256, settings=SWEEP, captum: bool = True,
                    engines=("auto",), low_precision: str | None = None, repeat: int = 1,
                    progress: Callable[[str], None] | None = None) -> list[dict]:
    """One row per (patch, stride): positions, seconds per engine and Captum, ratios, max
    difference; with ``low_precision`` ("bf16"/"fp16") also that autocast's time and deviation."""
    x, target = bench_image(model, size)
    b = baseline_tensor("black", x, model.spec)
    # as a user hands it to Captum
    plain = copy.deepcopy(model.module).to(memory_format=torch.contiguous_format)
    rows = []
    for patch, stride in settings:
        rows_, cols_ = grid_shape(size, size, patch, stride)
        row = {"patch": patch, "stride": stride, "positions": rows_ * cols_}
        ours_map = None
        for engine in engines:
            name = pick_engine(model.module, x.device, "fp32", engine)
            sec, grid = _timed(lambda: occlusion_grid(model.module, x, target, b, patch=patch, stride=stride,
                                                      engine=engine), repeat)
            row[f"ours_{name}_s"] = round(sec, 3)
            ours_map = grid.to_map()
        if low_precision:
            sec, low = _timed(lambda: occlusion_grid(model.module, x, target, b, patch=patch, stride=stride,
                                                     precision=low_precision), repeat)
            row[f"{low_precision}_s"] = round(sec, 3)
            row[f"{low_precision}_max_abs_diff_rel"] = float(np.abs(low.to_map() - ours_map).max()
                                                            / max(np.abs(ours_map).max(), 1e-12))
        if captum:
            sec, ref = _timed(lambda: Occlusion(plain).attribute(
                x.contiguous(), sliding_window_shapes=(x.shape[1], patch, patch), strides=(1, stride, stride),
                baselines=b, target=target)[0, 0].cpu().numpy())
            row["captum_default_s"] = round(sec, 3)
            fastest = min(v for k, v in row.items() if k.startswith("ours_"))
            row["speedup"] = round(sec / fastest, 2)
            row["max_abs_diff_rel"] = float(np.abs(ours_map - ref).max() / max(np.abs(ref).max(), 1e-12))
        rows.append(row)
        if progress:
            progress(f"occlusion {patch}/{stride}: {row}")
    return rows


def bench_predictions(
    model: LoadedModel, *, size: int = 224, n: int = 128, batch_size: int | None = None
) -> dict:
    """Images per second of batched prediction (inference mode, channels_last) at ``size``."""
    from ..models.inference import predict_logits

    grey = np.repeat(_phantom(size, "Cardiomegaly")[None], n, axis=0)
    spec = model.spec
    model.spec = spec.with_(input_size=size)
    try:
        predict_logits(model, grey[:8], batch_size=batch_size)  # warm-up
        sec, _ = _timed(lambda: predict_logits(model, grey, batch_size=batch_size))
    finally:
        model.spec = spec
    return {"size": size, "images": n, "seconds": round(sec, 3), "images_per_s": round(n / sec, 1)}


def bench_decoding(*, n: int = 96, source: int = 1024, size: int = 224, workers: int | None = None) -> dict:
    """Images per second of :func:`~cxrxai.data.decode.decode_images` on ``n`` 8-bit PNGs of
    ``source`` px (NIH's size) resized to ``size``, with one worker and with the default pool."""
    import tempfile
    from pathlib import Path

    import cv2

    from ..data.decode import decode_images

    big = cv2.resize(_phantom(256, "Cardiomegaly"), (source, source), interpolation=cv2.INTER_CUBIC)
    noise = np.random.default_rng(0).integers(0, 12, (n, source, source), dtype=np.uint8)
    out = {"images": n, "source_px": source, "size": size}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for k in range(n):
            cv2.imwrite(str(root / f"{k:05d}.png"), cv2.add(big, noise[k]))
        for name, w in (("one_worker", 1), ("pool", workers)):
            items = [(f"{name}{k}", f"{k:05d}.png") for k in range(n)]  # new ids: no cache reuse
            t = time.perf_counter()
            decode_images(root, items, size, root / "cache", workers=w)
            out[f"{name}_images_per_s"] = round(n / (time.perf_counter() - t), 1)
    return out


def bench_explainers(model: LoadedModel, *, size: int = 256, repeat: int = 2) -> list[dict]:
    """Seconds per map for the CAM and gradient explainers (and Captum's Grad-CAM)."""
    x, target = bench_image(model, size)
    layer = model.layer()
    rows = []
    for name, fn in [
        ("gradcam (ours)", lambda: explain(model, x, target, "gradcam")),
        (
            "gradcam (captum LayerGradCam)",
            lambda: LayerGradCam(model.module, layer).attribute(x, target=target),
        ),
        ("gradcam + gradcam++, all labels (closed form)", lambda: linear_head_cams(model.module, x)),
        ("gradcam++", lambda: explain(model, x, target, "gradcam++")),
        ("ig (50 steps)", lambda: explain(model, x, target, "ig", steps=50)),
        ("gradientshap (5 samples)", lambda: explain(model, x, target, "gradientshap")),
    ]:
        sec, _ = _timed(fn, repeat)
        rows.append({"method": name, "seconds": round(sec, 3)})
    return rows
