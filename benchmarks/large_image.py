"""Time to first overlay on a large real radiograph, as the explorer's live path does it.

    .venv/bin/python -m benchmarks.large_image [--repeat 3]

The film is CheXlocalize's 2828 × 2320 px validation radiograph (``tests/fixtures/chexlocalize``);
the model a DenseNet-121 with CheXpert's 14 labels at 224 px (weights random: speed does not
depend on them). Steps, each timed: decode the JPEG, preprocess to the model's input, compute
the map (Grad-CAM, saliency, occlusion 32/16's coarse 32/32 grid and its full grid), and draw
the overlay with the ground-truth outline at display size. Median of ``--repeat`` runs after
one warm-up. Results also go to ``benchmarks/results/large-image-<device>.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
import torchvision

from cxrxai.cli.bench import machine
from cxrxai.data.adapters.chexpert import CHEXPERT_LABELS
from cxrxai.data.io import read_image
from cxrxai.data.masks import decode_rle
from cxrxai.explain import explain
from cxrxai.models.registry import LoadedModel, best_device
from cxrxai.models.spec import ModelSpec, preprocess
from cxrxai.present import overlay

FIX = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "chexlocalize"
FILM = FIX / "valid" / "patient64541" / "study1" / "view1_frontal.jpg"
CASE = "patient64541_study1_view1_frontal"
METHODS = (("gradcam", {}), ("saliency", {}), ("occlusion", {"patch": 32, "stride": 32}),
           ("occlusion", {"patch": 32, "stride": 16}))


def _model() -> LoadedModel:
    torch.manual_seed(0)
    dev = best_device()
    net = torchvision.models.densenet121(num_classes=len(CHEXPERT_LABELS)).eval()
    spec = ModelSpec(name="densenet121-chexpert", arch="densenet121", labels=tuple(CHEXPERT_LABELS))
    return LoadedModel(net.to(dev, memory_format=torch.channels_last), spec, dev)


def _time(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def run(repeat: int) -> list[dict]:
    model = _model()
    seg = json.loads((FIX / "gt_segmentations_val.json").read_text())[CASE]["Cardiomegaly"]
    mask = decode_rle(seg["counts"], *seg["size"])
    target = model.spec.label_index("Cardiomegaly")
    rows = []
    for method, params in METHODS:
        runs = []
        for k in range(repeat + 1):
            film, t_read = _time(lambda: read_image(FILM))
            x, t_pre = _time(lambda: preprocess(film, model.spec).to(model.device))
            m, t_map = _time(lambda: explain(model, x, target, method, **params))
            _, t_draw = _time(lambda: overlay.render_case(film, m, masks=[("Cardiomegaly", mask)]))
            if k:  # the first run warms up
                runs.append({"read": t_read, "preprocess": t_pre, "map": t_map, "overlay": t_draw,
                             "total": t_read + t_pre + t_map + t_draw})
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rows.append({"method": method, "params": params, "film": f"{film.shape[1]}x{film.shape[0]}", **med})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = run(args.repeat)
    info = machine()
    print(f"{info}\n")
    print(f"{'method':<22} {'read s':>7} {'prep s':>7} {'map s':>7} {'overlay s':>9} {'total s':>8}")
    for r in rows:
        name = r["method"] + (f" {r['params']['patch']}/{r['params']['stride']}" if r["params"] else "")
        print(f"{name:<22} {r['read']:>7.3f} {r['preprocess']:>7.3f} {r['map']:>7.3f} {r['overlay']:>9.3f} {r['total']:>8.3f}")
    out = Path(__file__).parent / "results" / f"large-image-{info['device'].split(':')[0]}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"machine": info, "rows": rows}, indent=1) + "\n")
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
