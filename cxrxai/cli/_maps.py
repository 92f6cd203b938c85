"""Commands about maps and tables: explain, bench, score, report."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .. import paths
from . import _add_model_spec, _load_model, _only_model, _param, command
from ._paths import given

# --------------------------------------------------------------------------- explain / bench

def _add_explain(p: argparse.ArgumentParser) -> None:
    p.add_argument("--image", required=True, help="an image id of --store, or a PNG/JPEG file")
    p.add_argument("--label", required=True, help="label to explain (one of the model's labels)")
    from ..explain import METHODS

    p.add_argument(
        "--method",
        required=True,
        help="explainer and the parameters --param sets: "
        + "; ".join(
            f"{m.name} ({', '.join(q.name for q in m.params if not q.runtime and q.from_text)})"
            for m in METHODS.values()
        ),
    )
    p.add_argument("--param", type=_param, action="append", default=[], metavar="NAME=VALUE",
                   help="explainer parameter, repeatable (e.g. --param patch=32 --param stride=16)")
    p.add_argument(
        "--store", action=given("store to read"), default=None,
        help="store holding --image (default data_cache/demo.duckdb)"
    )
    _add_model_spec(p, required=False, default="; or a model id of --store (default: the store's model)")
    p.add_argument("--out", action=given("output"), required=True,
                   help=".npy file for the raw map (native resolution)")


@command(
    "explain",
    "compute one saliency map and save it as .npy (prints the parameters and seconds)",
    _add_explain,
)
def _explain(args) -> int:
    import numpy as np

    from ..data.cases import case_image
    from ..data.io import read_image
    from ..explain import Setting, explain
    from ..models.spec import preprocess
    from ..store import open_store

    params = dict(args.param)
    if Path(args.image).is_file():
        pixels = read_image(args.image)
        model = _load_model(args.model, input_size=args.input_size, trust_pickle=args.trust_pickle)
    else:
        with open_store(args.store or paths.demo_store()) as store:
            row = store.image(args.image)
            dataset = store.datasets().set_index("dataset").loc[row["dataset"]].to_dict()
            dataset["dataset"] = row["dataset"]
            pixels = case_image(row, dataset)
            model = _load_model(args.model, store, input_size=args.input_size, trust_pickle=args.trust_pickle)
    x = preprocess(pixels, model.spec).to(model.device)
    t = time.perf_counter()
    m = explain(model, x, model.spec.label_index(args.label), args.method, **params)
    seconds = time.perf_counter() - t
    np.save(args.out, m)
    setting = Setting.split(args.method, params, spec=model.spec)[0]
    print(json.dumps({"image": args.image, "label": args.label, "method": args.method,
                      "params": dict(setting.params), "key": setting.key,
                      "model": model.spec.name, "device": model.device.type, "shape": list(m.shape),
                      "seconds": round(seconds, 4), "out": str(args.out)}, indent=1, default=str))
    return 0


def _add_bench(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="weights file or name (default: the demo DenseNet-121)")
    p.add_argument("--size", type=int, default=256, help="input size in pixels (the thesis used 256)")
    p.add_argument(
        "--settings", default=None, help="patch/stride list, e.g. 32/32,32/16 (default: the thesis grid)"
    )
    p.add_argument("--no-captum", action="store_true", help="skip the (slow) Captum reference")
    p.add_argument("--engines", default="auto", help="occlusion engines to time: auto,batched,incremental")
    p.add_argument("--low-precision", choices=["bf16", "fp16"], default=None,
                   help="also time occlusion under this autocast and report its deviation from fp32")
    p.add_argument("--json", action=given("output"), default=None,
                   help="also write the results to this JSON file")


@command(
    "bench",
    "time explainers against Captum's defaults on this machine (occlusion grid of the thesis)",
    _add_bench,
)
def _bench(args) -> int:
    from ..pipeline.maps import SWEEP
    from .bench import bench_decoding, bench_explainers, bench_occlusion, bench_predictions, machine

    model = _load_model(args.model)
    settings = (
        SWEEP
        if not args.settings
        else [tuple(int(v) for v in s.split("/")) for s in args.settings.split(",")]
    )
    result = {
        "machine": machine(),
        "size": args.size,
        "occlusion": bench_occlusion(
            model,
            size=args.size,
            settings=settings,
            captum=not args.no_captum,
            engines=tuple(args.engines.split(",")),
            low_precision=args.low_precision,
            progress=lambda line: print(line, file=sys.stderr),
        ),
        "explainers": bench_explainers(model, size=args.size),
        "predictions": bench_predictions(model, size=model.spec.input_size),
        "decoding": bench_decoding(size=model.spec.input_size),
    }
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


# --------------------------------------------------------------------------- score / report

def _add_score(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--map", action=given("file"), required=True,
        help=".npy saliency map (any resolution; upsampled bilinearly)"
    )
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--mask", action=given("file"),
                       help="ground-truth mask: .npy, or PNG (non-zero = inside)")
    group.add_argument("--box", help="ground-truth box x,y,w,h in image pixels (needs --size)")
    p.add_argument("--size", help="image size HxW for --box (e.g. 1024x1024)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


@command(
    "score",
    "score an external saliency map against a mask or box (IoU, hit, PLA, AUCs, geometry)",
    _add_score,
)
def _score(args) -> int:
    import numpy as np

    from ..data.io import read_image
    from ..data.masks import box_mask
    from ..errors import DataError
    from ..metrics.geometry import features
    from ..metrics.registry import score_map

    m = np.load(args.map)
    if args.mask is not None:
        truth = np.load(args.mask) if args.mask.suffix == ".npy" else read_image(args.mask)
        truth = np.asarray(truth) > 0
    else:
        if not args.size:
            raise DataError("--box needs --size HxW (the image size the box lives in)")
        try:
            h, w = (int(v) for v in args.size.lower().split("x"))
            box = tuple(float(v) for v in args.box.split(","))
        except ValueError:
            raise DataError(
                f"--size must be HxW and --box x,y,w,h; got {args.size!r} and {args.box!r}"
            ) from None
        if len(box) != 4:
            raise DataError(f"--box needs four numbers x,y,w,h, got {args.box!r}")
        truth = box_mask(box, h, w)
    result = {**score_map(m, truth), **{f"gt_{k}": v for k, v in features(truth).items()}}
    result = {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in result.items()}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for k, v in result.items():
            print(f"{k:22} {v}")
    return 0


def _add_report(p: argparse.ArgumentParser) -> None:
    from ..reports import REPORTS, metric_choices

    def described(k: str) -> str:  # a report's metric choices come from the metric registry
        choices = metric_choices(k)
        return f"{k}: {REPORTS[k].reproduces}" + (f" (metric: {', '.join(choices)})" if choices else "")

    p.add_argument(
        "name",
        choices=sorted(REPORTS),
        help="; ".join(described(k) for k in REPORTS).replace("%", "%%"),
    )
    p.add_argument("--store", action=given("store to read"), default=None,
                   help="store to read (default data_cache/demo.duckdb)")
    p.add_argument("--model", default=None,
                   help="model id (default: the store's only model with predictions; with several, name one)")
    p.add_argument("--option", type=_param, action="append", default=[], metavar="NAME=VALUE",
                   help="report option, repeatable (e.g. --option by=age_bin --option method=occlusion)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true", help="print CSV")
    out.add_argument("--json", action="store_true", help="print JSON records")
    out.add_argument(
        "--out",
        action=given("output"),
        default=None,
        help="write CSV with a provenance header (# model, thresholds, explainer parameters, seed, "
        "interval method)",
    )


@command("report", "print one of the papers' tables from a store", _add_report)
def _report(args) -> int:
    import pandas as pd

    from ..reports import REPORTS, run_report
    from ..store import open_store

    with open_store(args.store or paths.demo_store()) as store:
        models = store.models()
        if args.model is None and REPORTS[args.name].needs_model:
            model_id = _only_model(store)  # several: refused, listed, as explain does
        else:  # a report reading its own models' rows (the planted shortcut)
            model_id = args.model or (str(models["model_id"].iloc[0]) if len(models) else "")
        table = run_report(store, args.name, model_id, **dict(args.option))
        if args.out is not None:
            from ..present.provenance import report_provenance, with_header

            head = report_provenance(store, args.name, model_id, table, **dict(args.option))
            args.out.write_text(with_header(table, head))
            print(
                json.dumps({"rows": len(table), "report": args.name, "model": model_id, "out": str(args.out)})
            )
            return 0
    if args.csv:
        print(table.to_csv(index=False), end="")
    elif args.json:
        print(table.to_json(orient="records", indent=1))
    else:
        with pd.option_context("display.max_rows", 500, "display.max_columns", 50, "display.width", 200):
            print(table.round(4).to_string(index=False))
    return 0
