"""Commands of the demo world: train, train-shortcut, demo, phantom.

One module though past 300 lines: each command here is its argument parser and what it prints
(progress, the build's report); the work is the library's (models, pipeline), and the commands
share the demo's model, phantom and store paths, which change together.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import paths
from ..errors import CxrxaiError
from ..pipeline.background import BuildStopped, stoppable
from ..pipeline.phases import PHASES
from . import Bars, _add_phantom, _phantom_config, _schedule, command
from ._paths import given

# --------------------------------------------------------------------------- train

def _add_train(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", default="demo-densenet121", help="model name = weights file stem")
    p.add_argument(
        "--arch", default="densenet121", help="architecture (densenet121, resnet18, resnet50, resnet152)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed for initialisation, batches and augmentation")
    p.add_argument("--schedule", type=_schedule, default=None,  # TrainConfig's (torch: imported to train)
                   help="progressive resizing as resolution:epochs pairs (default 128:5,224:3)")
    p.add_argument("--max-minutes", type=float, default=None, help="stop early after this many minutes")
    p.add_argument("--batch-size", type=int, default=32)
    _add_phantom(p)
    p.add_argument(
        "--models-dir", type=Path, default=None, help="where weights + card go (default data_cache/models)"
    )
    p.add_argument(
        "--data-dir", type=Path, default=None, help="phantom image cache (default data_cache/demo)"
    )


@command("train", "train a demo model from scratch on the phantom training split", _add_train)
def _train(args) -> int:
    from ..models.demo_model import train_demo_model
    from ..models.train import TrainConfig

    bars = Bars()
    tc = TrainConfig(arch=args.arch, seed=args.seed, schedule=args.schedule or TrainConfig().schedule,
                     max_minutes=args.max_minutes, batch_size=args.batch_size)

    def on_step(p):
        bars("train", p.step, p.total_steps)
        if p.val_auroc is not None:
            print(
                f"epoch {p.epoch} @{p.resolution}px: loss {p.loss:.4f}, val mean AUROC {p.val_auroc:.4f}",
                file=sys.stderr,
            )

    model, path = train_demo_model(
        name=args.name, config=_phantom_config(args), train_config=tc,
        models_dir=args.models_dir or paths.models_dir(), data_dir=args.data_dir or paths.demo_data_dir(),
        progress=on_step, render_progress=lambda d, n: bars("render phantoms", d, n))
    bars.close()
    card = model.spec.card
    print(
        json.dumps(
            {
                "weights": str(path),
                "test_auroc": {k: v["auroc"] for k, v in card["test_auroc"].items()},
                "test_mean_auroc_findings": card["test_mean_auroc_findings"],
                "thresholds": model.spec.thresholds,
                "wall_minutes": card["wall_minutes"],
            },
            indent=1,
        )
    )
    return 0


# --------------------------------------------------------------------------- train-shortcut

def _add_train_shortcut(p: argparse.ArgumentParser) -> None:
    p.add_argument("--control", action=given("file"), default=None,
                   help="weights to fine-tune (default data_cache/models/demo-resnet18.pt, the control)")
    p.add_argument(
        "--name", default=None, help="model name = weights file stem (default demo-resnet18-shortcut)"
    )
    p.add_argument(
        "--epochs", type=int, default=None, help="fine-tuning epochs at the input size (default 2)"
    )
    p.add_argument(
        "--models-dir", type=Path, default=None, help="where weights + card go (default data_cache/models)"
    )
    p.add_argument(
        "--data-dir", type=Path, default=None, help="phantom image cache (default data_cache/demo)"
    )


@command(
    "train-shortcut",
    "fine-tune the control model on a cohort where a marker goes with Nodule (the planted "
    "shortcut; about 6 min on 2 CPU cores)",
    _add_train_shortcut,
)
def _train_shortcut(args) -> int:
    from dataclasses import replace

    from ..models.shortcut_model import SHORTCUT_MODEL, SHORTCUT_TRAIN, shortcut_config, train_shortcut_model

    bars = Bars()
    tc = SHORTCUT_TRAIN if args.epochs is None else replace(SHORTCUT_TRAIN, schedule=((224, args.epochs),))
    path = train_shortcut_model(
        args.control or paths.demo_model_path("demo-resnet18"),
        config=shortcut_config(),
        models_dir=args.models_dir or paths.models_dir(),
        data_dir=args.data_dir or paths.demo_data_dir(),
        name=args.name or SHORTCUT_MODEL,
        train_config=tc,
        progress=lambda p: bars("fine-tune", p.step, p.total_steps),
    )
    bars.close()
    print(json.dumps({"weights": str(path)}))
    return 0


# --------------------------------------------------------------------------- demo

def _add_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", action=given("store to write"), default=None,
                   help="store to build (default data_cache/demo.duckdb)")
    p.add_argument(
        "--model",
        action=given("file"),
        default=None,
        help="weights file (default data_cache/models/demo-densenet121.pt)",
    )
    p.add_argument(
        "--train", action="store_true", help="train the demo model first (about an hour on 2 CPU cores)"
    )
    p.add_argument("--fresh", action="store_true", help="start the store from scratch instead of resuming")
    p.add_argument("--recompute-predictions", action="store_true",
                   help="predict every image instead of using the verified cache shipped with the weights")
    p.add_argument("--full", action="store_true",
                   help="compute IG, GradientSHAP and occlusion for every positive test case, not a sample "
                        "(hours on a 2-core CPU, minutes on a GPU)")
    p.add_argument(
        "--phase",
        choices=PHASES,
        default="all",
        help="quick: what the app needs to open (cases, predictions, thresholds, Grad-CAM/Grad-CAM++; "
        "under a minute from the shipped snapshot, without rendering the phantoms); evidence: the "
        "phantoms rendered, their scores, then in two rounds over both models (the demo's "
        "DenseNet-121, then its ResNet-18) a first look (the costly explainers on 10 positives per "
        "finding, the occlusion sweep on 8 shared cases, fidelity on 15, trust on 10) and the full "
        "evidence (30 per finding, 20 sweep cases, fidelity on 50, trust on 30); run in the "
        "background by the app; all: both",
    )
    p.add_argument(
        "--status",
        action=given("output"),
        default=None,
        help="keep this JSON file current with the build's stage, progress and ETA (the app reads it)",
    )
    p.add_argument(
        "--data-dir", type=Path, default=None, help="phantom image cache (default data_cache/demo)"
    )
    p.add_argument("--snapshot", action=given("folder"), default=None,
                   help="evidence snapshot a new store starts from "
                        "(default: the shipped data_cache/evidence)")
    p.add_argument("--no-snapshot", action="store_true", help="compute every number; import no snapshot")
    p.add_argument("--export-snapshot", type=Path, default=None, metavar="DIR",
                   help="then export the store's result tables (of the maps, those at their explainer's "
                        "grid) and their provenance to DIR as an evidence snapshot "
                        "(`make demo-evidence`: into the shipped data_cache/evidence)")
    _add_phantom(p)


@command(
    "demo", "build (or resume) the demo store: phantoms, predictions, thresholds, maps, metrics", _add_demo
)
def _demo(args) -> int:
    from ..data.demo import lazy_demo
    from ..pipeline import build_demo, demo_stages
    from ..pipeline.demo import evidence_rounds
    from ..pipeline.evidence import PHANTOMS, shipped_dir, snapshot_stage, with_snapshot
    from ..pipeline.launch import reporting

    model = args.model or paths.demo_model_path()
    data_dir = args.data_dir or paths.demo_data_dir()
    if args.train:
        _train(
            argparse.Namespace(
                name=model.stem,
                arch="densenet121",
                seed=0,
                schedule=None,  # TrainConfig's
                max_minutes=None,
                batch_size=32,
                n_images=args.n_images,
                size=args.size,
                models_dir=model.parent,
                data_dir=data_dir,
            )
        )
    extra = [
        p
        for p in (model.with_name(f"{model.stem}-seed1.pt"), model.with_name("demo-resnet18.pt"))
        if p.is_file()
    ]
    cache = model.with_suffix(".predictions.npz")
    quick = args.phase == "quick"
    snapshot = None if args.no_snapshot else args.snapshot or shipped_dir()
    first = [snapshot_stage(snapshot, model.parent)] if quick and snapshot is not None else []
    rounds = None if quick else with_snapshot(evidence_rounds(full=args.full, phase=args.phase), snapshot,
                                              model.parent)
    config = _phantom_config(args)
    # The quick phase on a snapshot renders no cohort: its cases' truth is the snapshot's copy of the
    # annotations, a film is drawn only if a stage computes on it (none: the snapshot holds the
    # predictions and CAMs); the background build renders the cohort once, after the server answers.
    data = lazy_demo(config, data_dir, annotations=Path(snapshot) / PHANTOMS) if first else None
    bars = Bars()
    try:
        with reporting(args.status, phase=args.phase, progress=bars) as rep, stoppable(rep.status):
            # SIGTERM (the sidebar's Stop) or the app's server exiting: stop cleanly
            report = build_demo(args.store or paths.demo_store(), model_path=model, data_dir=data_dir,
                                config=config, progress=rep, fresh=args.fresh, data=data,
                                stages=[*first, *demo_stages(phase="quick")] if quick else None,
                                extra_models=extra,
                                prediction_cache=None if args.recompute_predictions else cache,
                                write_prediction_cache=not args.n_images and not args.size, phase=args.phase,
                                rounds=rounds, on_stage=rep.stage)
    except BuildStopped as err:  # the status says so (stoppable); the store stays as last published
        print(f"stopped: {err}; `python -m cxrxai demo --phase {args.phase}` resumes", file=sys.stderr)
        return 3
    finally:
        bars.close()
    if args.export_snapshot is not None:
        report["exported snapshot"] = _export(args.store or paths.demo_store(), args.export_snapshot)
    print(json.dumps(report, indent=1))
    return 0


def _export(store: Path, folder: Path) -> dict:
    """The store's evidence snapshot written to ``folder``
    (:func:`~cxrxai.pipeline.evidence.export_snapshot`): its size, steps, tables and models."""
    from ..pipeline.evidence import export_snapshot

    prov = export_snapshot(store, folder)
    return {"folder": str(folder), "bytes": sum(f.stat().st_size for f in folder.iterdir() if f.is_file()),
            "steps": len(prov["steps"]), "evidence_complete": prov["evidence_complete"],
            "tables": prov["tables"], "models": {m: w["sha256"][:12] for m, w in prov["models"].items()}}


# --------------------------------------------------------------------------- phantom

def _add_phantom_cmd(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", action=given("output"), required=True, help="PNG file to write")
    p.add_argument("--ids", default=None, help="comma-separated image ids (default: one case per finding)")
    p.add_argument("--columns", type=int, default=4)
    p.add_argument("--no-masks", action="store_true", help="the radiographs only")
    _add_phantom(p)


@command("phantom", "render phantom cases with their ground-truth masks to a PNG", _add_phantom_cmd)
def _phantom(args) -> int:
    import cv2

    from ..data.phantom import render, sample_cohort
    from ..labels import FINDINGS
    from ..present.overlay import draw_masks, tile, to_rgb

    config = _phantom_config(args)
    specs = sample_cohort(config)
    if args.ids:
        wanted = args.ids.split(",")
        by_id = {s.image_id: s for s in specs}
        missing = [i for i in wanted if i not in by_id]
        if missing:
            raise CxrxaiError(f"unknown image ids {missing}; ids look like {specs[0].image_id}")
        chosen = [by_id[i] for i in wanted]
    else:
        chosen = []
        for f in FINDINGS:  # one test case per finding: alone if possible, never twice the same
            pool = [s for s in specs if f in s.findings and s.split == "test" and s not in chosen]
            chosen.append(min(pool, key=lambda s: len(s.findings)))
    panels = []
    for spec in chosen:
        case = render(spec, config)
        rgb = to_rgb(case.image)
        panels.append(rgb if args.no_masks else draw_masks(rgb, [(i.label, i.mask) for i in case.instances]))
    cv2.imwrite(str(args.out), tile(panels, args.columns)[..., ::-1])
    print(
        json.dumps(
            {
                "out": str(args.out),
                "cases": [
                    {
                        "image_id": s.image_id,
                        "findings": s.findings,
                        "sex": s.sex,
                        "age": s.age,
                        "view": s.view,
                    }
                    for s in chosen
                ],
            },
            indent=1,
        )
    )
    return 0
