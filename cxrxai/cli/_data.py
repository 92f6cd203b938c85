"""Commands about data: precompute, import-predictions, reroot, info, export.

One module though past 300 lines: each command here is its argument parser and what it prints;
the work is the library's (pipeline, store, present), and the commands share the dataset, model
and store options, which change together.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path

from .. import paths
from ..errors import CxrxaiError
from . import Bars, _add_model_spec, _only_model, _param, command
from ._paths import given

# --------------------------------------------------------------------------- real data

def _add_dataset(p: argparse.ArgumentParser) -> None:
    from ..data.adapters import ADAPTERS

    p.add_argument("--dataset", required=True, choices=sorted(ADAPTERS), help="published layout of --root")
    p.add_argument("--root", action=given("folder"), required=True, help="the dataset folder as downloaded")
    p.add_argument(
        "--data-option",
        type=_param,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="adapter option, repeatable; VALUE is read as JSON, else as text. Each adapter's "
        f"options and defaults: {adapter_help()}; any of them dicom_headers=false: do not read "
        "sex, age and view a CSV lacks from DICOM headers",
    )
    p.add_argument("--store", action=given("store to write"), required=True, help="store to write")
    p.add_argument("--fresh", action="store_true", help="start the store from scratch")
    p.add_argument("--strict", action="store_true", help="stop at the first bad row instead of reporting it")


def adapter_help(adapters: dict | None = None) -> str:
    """Each adapter's keyword options with their defaults (as JSON), read from its signature
    (``adapters``: name → adapter function; every registered one by default)."""
    from ..data.adapters import ADAPTERS, signature_options

    def one(param: inspect.Parameter) -> str:
        if param.default is inspect.Parameter.empty:
            return f"{param.name} (required)"
        return f"{param.name}={json.dumps(param.default, default=str)}"

    parts = []
    for name, load in sorted((adapters or ADAPTERS).items()):
        params = [p for p in signature_options(load).values() if p.name != "strict"]
        parts.append(f"{name}: {', '.join(one(p) for p in params) or 'none'}")
    return "; ".join(parts)


def _tables(args):
    from ..data.adapters import load_dataset

    return load_dataset(args.dataset, args.root, strict=args.strict, **dict(args.data_option))


def _add_precompute(p: argparse.ArgumentParser) -> None:
    _add_dataset(p)
    _add_model_spec(p, required=True)
    p.add_argument("--model-name", default=None,
                   help="model id in the store (default: the checkpoint's file name less .pth.tar, .pt, "
                        ".ckpt…)")
    from ..explain import method_names

    p.add_argument("--explainers", default="gradcam,gradcam++",
                   help=f"comma-separated, any of: {', '.join(method_names())} (cheap ones — "
                        f"{', '.join(method_names(cost='cheap'))} — for every image × label, the others on "
                        "--per-label positives)")
    p.add_argument(
        "--per-label", type=int, default=None, help="costly explainers on this many positives per label"
    )
    p.add_argument(
        "--split", default="test", help="split to precompute (default test; 'all' for every image)"
    )
    p.add_argument("--thresholds", action=given("file"), default=None,
                   help="CSV of per-label decision thresholds (label + threshold, or bestthr, columns; "
                        "labels in the model's or the dataset's spelling), stored as method file:NAME — for "
                        "a validation split too small or one-class to choose them on")
    p.add_argument(
        "--workers", type=int, default=None, help="image decoding processes (default: CPU count, ≤ 8)"
    )
    from ..pipeline.launch import ENGINES
    from ..pipeline.stages import analysis_help

    p.add_argument("--analyses", default="", help=analysis_help().replace("%", "%%"))
    p.add_argument("--cases", type=int, default=30, help="positive cases for each of --analyses (default 30)")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="where predictions and maps are computed: here (local) or on Ray, sharded over workers that "
        "write Parquet parts beside the store (STORE.parts/) for the driver to ingest",
    )
    p.add_argument("--address", default=None,
                   help="Ray cluster to join (ray://HOST:10001 or HOST:6379); default: start a local Ray")
    p.add_argument("--ray-cpus", type=int, default=None, help="CPUs of the local Ray (default: all)")


@command("precompute", "predict, explain and score a real dataset into a store (resumable)", _add_precompute)
def _precompute(args) -> int:
    from ..models.from_text import load_model_text, model_files
    from ..models.thresholds import read_threshold_file
    from ..pipeline.dataset import dataset_plan
    from ..pipeline.launch import precompute

    for path in model_files(args.model):  # like every path option (_paths), before any work
        paths.check_path(path, "file", option="--model")
    tables = _tables(args)
    model, weights = load_model_text(args.model, input_size=args.input_size, name=args.model_name,
                                     trust_pickle=args.trust_pickle)
    plan = dataset_plan(explainers=args.explainers.split(","), per_label=args.per_label,
                        split=None if args.split == "all" else args.split,
                        analyses=[a for a in args.analyses.split(",") if a], cases=args.cases)
    thresholds = (args.thresholds.name, read_threshold_file(args.thresholds)) if args.thresholds else None
    bars = Bars()
    try:
        report = precompute(args.store, tables, model, plan, engine=args.engine, address=args.address,
                            ray_cpus=args.ray_cpus, progress=bars, workers=args.workers, strict=args.strict,
                            thresholds=thresholds, fresh=args.fresh, model_path=weights)
    finally:
        bars.close()
    source = model.spec.card.get("labels_source", "")
    if source and not source.startswith("labels="):  # not typed by the user: say where they were read
        print(f"labels of {model.spec.name} read from {source}", file=sys.stderr)
    _print_label_matches(report["labels"], model.spec.name, tables.name)
    print(json.dumps(report, indent=1, default=str))
    return 0


def _print_label_matches(labels: dict, model_id: str, dataset: str) -> None:
    """The label matching, on stderr (stdout stays the JSON report); loud when nothing matched."""
    out = sys.stderr
    if not labels["matched"]:
        print(f"WARNING: no output of {model_id} matches a label of {dataset}: nothing it predicts can be "
              "compared with ground truth (see `info` problems, stage labels)", file=out)
    exact = [o for o, label in labels["matched"].items() if label == f"{o} (exact)"]
    if exact:
        print(f"label  same name in {dataset}: {', '.join(exact)}", file=out)
    for output, label in labels["matched"].items():
        if output not in exact:
            print(f"label  {output} → {label}", file=out)
    if labels["outputs_matching_no_label"]:
        extra = ", ".join(labels["outputs_matching_no_label"])
        print(f"label  outputs matching no {dataset} label (stored, never scored): {extra}", file=out)
    if labels["labels_no_output_scores"]:
        print(f"label  {dataset} labels no output scores: {', '.join(labels['labels_no_output_scores'])}",
              file=out)


def _add_import(p: argparse.ArgumentParser) -> None:
    _add_dataset(p)
    p.add_argument(
        "--predictions", action=given("file"), required=True,
        help="CSV with an id column and prob_<label> columns"
    )
    p.add_argument("--id-column", default=None, help="id column of --predictions (default: its first column)")
    p.add_argument("--thresholds", action=given("file"), default=None,
                   help="CSV of per-label thresholds: label + threshold (or bestthr) columns")
    p.add_argument("--name", default="imported", help="model id for these predictions")


@command(
    "import-predictions", "store predictions made elsewhere, joined to a dataset's metadata", _add_import
)
def _import(args) -> int:
    from ..data.adapters._base import read_csv, sniff_delimiter
    from ..models.thresholds import read_threshold_file
    from ..pipeline import import_predictions

    tables = _tables(args)
    preds = read_csv(args.predictions)
    id_column = args.id_column or preds.columns[0]
    thresholds = None
    _say_delimiter(args.predictions, preds.attrs.get("delimiter", ","))
    if args.thresholds:
        _say_delimiter(args.thresholds, sniff_delimiter(args.thresholds))
        thresholds = read_threshold_file(args.thresholds)
    report = import_predictions(args.store, tables, preds, model_name=args.name, id_column=id_column,
                                thresholds=thresholds, fresh=args.fresh,
                                source=str(paths.absolute(args.predictions)),
                                thresholds_source=str(args.thresholds and paths.absolute(args.thresholds)))
    print(json.dumps(report, indent=1, default=str))
    return 0


# --------------------------------------------------------------------------- reroot

def _add_reroot(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", action=given("store to write"), required=True,
                   help="store to change (nothing is recomputed)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--dataset", help="dataset whose images moved (`python -m cxrxai info --store S` "
                                         "lists them)")
    what.add_argument("--model", help="model id whose weights file moved")
    p.add_argument("--root", action=given("folder"), help="with --dataset: the folder its images are in now")
    p.add_argument("--weights", action=given("file"), help="with --model: the weights file where it is now")
    p.add_argument("--force", action="store_true",
                   help="with --dataset: re-root even when none of its first images is under --root")


@command("reroot", "point a store at a dataset folder (or weights file) that moved; relative paths are "
                   "taken from the current folder and stored absolute", _add_reroot)
def _reroot(args) -> int:
    from ..store import reroot_dataset, reroot_model, write_store

    if args.dataset is not None and args.root is None or args.model is not None and args.weights is None:
        raise CxrxaiError("--dataset needs --root NEWDIR, and --model needs --weights NEWFILE")
    if not args.store.is_file():
        raise CxrxaiError(f"no store at {args.store}")
    with write_store(args.store) as writer:
        if args.dataset is not None:
            report = reroot_dataset(writer, args.dataset, args.root, force=args.force)
        else:
            report = reroot_model(writer, args.model, args.weights)
    print(json.dumps(report, indent=1, default=str))
    return 0


def _say_delimiter(path: Path, sep: str) -> None:
    if sep != ",":
        print(f"note: {path}: columns separated by {sep!r}, not commas; read with {sep!r} as the delimiter",
              file=sys.stderr)


# --------------------------------------------------------------------------- info / export

def _add_info(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store", action=given("store to read"), default=None,
        help="store to describe (default data_cache/demo.duckdb)"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


@command("info", "what a store holds: counts per table, datasets, models, labels, explainers", _add_info)
def _info(args) -> int:
    import pandas as pd

    from ..store import open_store

    with open_store(args.store or paths.demo_store()) as store:
        info = store.info()
        first = store.problems().head(10) if info["problems"] else None
    if args.json:
        print(json.dumps(info, indent=1, default=str))
        return 0
    print(f"store      {args.store or paths.demo_store()} (schema v{info['schema_version']}, "
          f"built {info['built_at']})")
    print("tables     " + ", ".join(f"{k} {v:,}" for k, v in info["counts"].items()))
    print("datasets   " + (", ".join(f"{d['dataset']} ({d['source']})" for d in info["datasets"]) or "none"))
    print("models     " + (", ".join(f"{m['model_id']} ({m['arch']}, weights sha256 {_short(m)})"
                                     for m in info["models"]) or "none"))
    print("labels     " + (", ".join(info["labels"]) or "none"))
    print("explainers " + (", ".join(info["explainers"]) or "none"))
    counts = info["problems"]
    print("problems   " + (", ".join(f"{c['dataset']} {c['stage']} {c['n']:,}" for c in counts) or "none"))
    if counts:
        for r in first.itertuples(index=False):
            parts = (
                None if pd.isna(r.file) else Path(r.file).name,
                None if pd.isna(r.row) else f"row {int(r.row)}",
                None if pd.isna(r.image_id) else r.image_id,
            )
            print(f"  {r.stage:<12} {', '.join(p for p in parts if p)}: {r.problem}")
        if sum(c["n"] for c in counts) > len(first):
            print("  … `python -m cxrxai export table problems --out problems.csv` lists them all")
    return 0


def _short(model: dict) -> str:
    """A model's weights hash as ``info`` prints it (:class:`~cxrxai.models.stored.ModelIdentity`)."""
    from ..models.stored import ModelIdentity

    return ModelIdentity.of(model["model_id"], model.get("weights_sha256"), None).short


def _add_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=["predictions", "table", "segmentations", "maps"],
                   help="predictions → CSV; table NAME → CSV; segmentations → CheXlocalize JSON; maps → .npz")
    p.add_argument(
        "name",
        nargs="?",
        help="for 'table': images, labels, thresholds, localization, geometry, trust, fidelity, problems",
    )
    p.add_argument("--store", action=given("store to read"), default=None,
                   help="store to read (default data_cache/demo.duckdb)")
    p.add_argument("--out", action=given("output"), required=True, help="file to write")
    p.add_argument("--model", default=None, help="model id (default: the store's only model)")
    p.add_argument("--split", default=None, help="only this split (predictions)")
    p.add_argument("--method", default="gradcam", help="explainer (segmentations, maps)")


@command(
    "export",
    "export store contents: predictions / tables (CSV), segmentations (CheXlocalize JSON), maps (.npz)",
    _add_export,
)
def _export(args) -> int:
    from ..present.exports import export_maps, export_segmentations, export_table
    from ..store import open_store

    with open_store(args.store or paths.demo_store()) as store:
        if args.what == "table":
            if not args.name:
                raise CxrxaiError(
                    "export table needs a table name, e.g. `export table localization --out loc.csv`"
                )
            n = export_table(store, args.name, args.out)
            print(json.dumps({"rows": n, "table": args.name, "out": str(args.out)}))
            return 0
        model_id = args.model or _only_model(store)
        if args.what == "predictions":
            table = store.prediction_table(model_id, split=args.split)
            cols = ["image_id", "split", "sex", "age", "label", "prob", "threshold", "ground_truth"]
            table[cols].rename(columns={"prob": "probability"}).to_csv(args.out, index=False)
            print(json.dumps({"rows": len(table), "model": model_id, "out": str(args.out)}))
        elif args.what == "segmentations":
            n = export_segmentations(store, model_id, args.method, args.out)
            print(json.dumps({"cxrs": n, "model": model_id, "method": args.method, "out": str(args.out)}))
        else:
            n = export_maps(store, model_id, args.method, args.out)
            print(json.dumps({"maps": n, "model": model_id, "method": args.method, "out": str(args.out)}))
    return 0
