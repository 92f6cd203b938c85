"""Precompute orchestration: fill a store in resumable stages, publishing as it goes.

A build is a list of :class:`Stage` s run in order against one :class:`BuildContext`. Every stage
first asks the store what is already done and computes only the rest, so re-running a build
skips finished work; long stages publish every ``publish_every`` seconds, so an interrupted
build loses at most that much. :func:`demo_stages` lists the demo build: predictions,
thresholds, then the explainer stages (:mod:`cxrxai.explain.stage`) and metric stages.

Progress goes to a callback ``progress(task, done, total)`` — the CLI draws bars from it; the
library never prints.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .data.adapters._base import clip_boxes, unit_interval
from .data.decode import decode_images
from .data.demo import DemoData, label_matrix, load_demo
from .data.phantom import PhantomConfig
from .data.second_reader import synthetic_reader
from .errors import DataError, UnknownNameError
from .explain.stage import DEMO_PLAN, MapPlan, cam_stage, default_config, maps_stage, sweep_stage
from .labels import DEMO_LABELS
from .metrics.model_stages import TRUST_IG, FidelityPlan, TrustPlan, fidelity_stage, trust_stage
from .metrics.stage import baseline_stage, geometry_stage, localization_stage, reader_stage
from .models.inference import predict_logits, sigmoid
from .models.registry import LoadedModel, load
from .models.spec import ModelSpec
from .models.thresholds import choose_threshold
from .store import StoreWriter, write_store

__all__ = [
    "DEMO_DATASET",
    "BuildContext",
    "ProgressFn",
    "Stage",
    "build_dataset",
    "build_demo",
    "dataset_stages",
    "demo_stages",
    "import_predictions",
]

ProgressFn = Callable[[str, int, int], None]
DEMO_DATASET = "demo"


def _quiet(task: str, done: int, total: int) -> None:
    return None


@dataclass
class BuildContext:
    """What stages share: the writer, the dataset, the model and how to load images."""

    writer: StoreWriter
    dataset: str
    model: LoadedModel
    load_images: Callable[[list[str]], np.ndarray]
    progress: ProgressFn = _quiet
    publish_every: float = 60.0
    options: dict = field(default_factory=dict)
    _last_publish: float = field(default_factory=time.monotonic)

    def maybe_publish(self) -> None:
        if time.monotonic() - self._last_publish >= self.publish_every:
            self.writer.publish()
            self._last_publish = time.monotonic()


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[BuildContext], dict]


# --------------------------------------------------------------------------- stages

def predictions_stage(ctx: BuildContext, *, batch_size: int | None = None, verify: int = 32) -> dict:
    """Predict every image of the dataset that has no prediction from this model yet.

    With ``ctx.options["prediction_cache"]`` (an ``.npz`` of image ids and logits written next to
    the weights), cached logits are used when the cache names this model's weights hash and a
    live forward of ``verify`` random images agrees within 1e-3; otherwise everything is
    predicted, and the cache is (re)written when the option asks for it. ``batch_size``: see
    :func:`~cxrxai.models.inference.predict_logits`.
    """
    model_id = ctx.model.spec.name
    all_ids = ctx.options.get("image_ids") or ctx.writer.images(dataset=ctx.dataset)["image_id"].tolist()
    done = ctx.writer.predicted_image_ids(model_id)
    todo = [i for i in all_ids if i not in done]
    if not todo:
        return {"predicted": 0, "skipped": len(done)}
    t0 = time.monotonic()
    cache = ctx.options.get("prediction_cache")
    cached = _read_cache(cache, ctx.model) if cache else None
    if cached is not None:
        rng = np.random.default_rng(0)
        sample = [todo[i] for i in rng.choice(len(todo), min(verify, len(todo)), replace=False)]
        live = predict_logits(ctx.model, ctx.load_images(sample), batch_size=batch_size)
        if all(i in cached for i in todo) and np.abs(live - np.stack([cached[i] for i in sample])).max() <= 1e-3:
            for start in range(0, len(todo), 2048):
                ids = todo[start:start + 2048]
                logits = np.stack([cached[i] for i in ids])
                ctx.writer.put_predictions(model_id, ids, ctx.model.spec.labels, logits, sigmoid(logits))
            return {"predicted": len(todo), "skipped": len(done), "from_cache": str(cache), "verified_on": len(sample)}
    chunk = 256  # images decoded, predicted and written per step
    for start in range(0, len(todo), chunk):
        ids = todo[start:start + chunk]
        logits = predict_logits(ctx.model, ctx.load_images(ids), batch_size=batch_size)
        ctx.writer.put_predictions(model_id, ids, ctx.model.spec.labels, logits, sigmoid(logits))
        ctx.progress("predictions", start + len(ids), len(todo))
        ctx.maybe_publish()
    seconds = time.monotonic() - t0
    if cache and ctx.options.get("write_prediction_cache") and not done:
        table = ctx.writer.predictions(model_id)
        wide = table.pivot(index="image_id", columns="label", values="logit")[list(ctx.model.spec.labels)]
        np.savez_compressed(cache, image_ids=wide.index.to_numpy(str), logits=wide.to_numpy(np.float32),
                            weights_sha256=ctx.model.spec.card.get("weights_sha256", ""))
    return {"predicted": len(todo), "skipped": len(done), "images_per_s": round(len(todo) / seconds, 2)}


#: Optional analyses of a real-data precompute (``precompute --analyses``).
ANALYSES = ("sweep", "trust", "fidelity")


def dataset_stages(*, explainers=("gradcam", "gradcam++"), per_label: int | None = None, split: str | None = "test",
                   analyses=(), cases: int = 30) -> list[Stage]:
    """Stages of a real-data precompute: predictions, thresholds, maps of ``explainers`` (CAMs for
    every image × label; others for ``per_label`` positive cases per label, or all) on ``split``
    (``None``: every image), then the metrics: localization against the reference reader, the
    second readers (human benchmark), Arun et al.'s average-mask and random baselines (when the
    training split has masks), and lesion geometry — each image at its own size.

    ``analyses`` adds any of :data:`ANALYSES` on ``cases`` positive cases: the thesis's occlusion
    patch/stride sweep (one fixed set of cases shared by every setting), Arun et al.'s cascading
    randomization (Grad-CAM, saliency, guided backprop) and the thesis's fidelity curves.
    """
    unknown = [a for a in analyses if a not in ANALYSES]
    if unknown:
        raise UnknownNameError("analysis", unknown[0], ANALYSES)
    cams = tuple(m for m in explainers if m in ("gradcam", "gradcam++"))
    others = tuple(default_config(m, per_label) for m in explainers if m not in cams)
    plan = MapPlan(split=split, cams=cams, maps=others, sweep=(), sweep_cases=0)
    stages = [Stage("predictions", predictions_stage), Stage("thresholds", thresholds_stage)]
    if cams:
        stages.append(Stage("cams", lambda ctx: cam_stage(ctx, plan)))
    if others:
        stages.append(Stage("maps", lambda ctx: maps_stage(ctx, plan)))
    return stages + [Stage("localization", localization_stage), Stage("second reader", reader_stage),
                     Stage("baselines", lambda ctx: baseline_stage(ctx, split=split)), Stage("geometry", geometry_stage),
                     *_analysis_stages(analyses, split, cases)]


def _analysis_stages(analyses, split: str | None, cases: int) -> list[Stage]:
    out = []
    if "sweep" in analyses:
        plan = MapPlan(split=split, cams=(), maps=(), sweep_cases=cases)
        out += [Stage("occlusion sweep", lambda ctx: sweep_stage(ctx, plan)), Stage("sweep scores", localization_stage)]
    if "trust" in analyses:
        out.append(Stage("trust", lambda ctx: trust_stage(ctx, TrustPlan(images=cases))))
    if "fidelity" in analyses:
        out.append(Stage("fidelity", lambda ctx: fidelity_stage(ctx, FidelityPlan(cases=cases))))
    return out


def import_predictions(store_path: str | Path, tables, predictions: pd.DataFrame, *, model_name: str,
                       id_column: str, thresholds: dict[str, float] | None = None, fresh: bool = False,
                       source: str = "predictions", thresholds_source: str = "thresholds") -> dict:
    """Store a dataset's cases with predictions made elsewhere (``prob_<label>`` columns joined
    to the dataset by image id), so every fairness analysis runs without re-running a model.

    Thresholds come from ``thresholds`` (e.g. a ``Threshold.csv``) or are chosen on the
    validation split when it has predictions and labels. A bad probability stops the import
    before anything is written (:class:`DataError` naming ``source`` and the row); predictions of
    unknown images and labels without a threshold are problem rows (file, row, image id), never
    silently dropped.
    """
    if id_column not in predictions:
        raise DataError(f"{source}: no id column {id_column!r}; columns: {list(predictions.columns)}")
    probs = [c for c in predictions.columns if c.startswith("prob_")]
    if not probs:
        raise DataError(f"{source}: the predictions need prob_<label> columns (e.g. prob_Effusion)")
    labels = tuple(c[len("prob_"):] for c in probs)
    unknown_labels = [lab for lab in labels if lab not in tables.label_names]
    values = unit_interval(predictions, probs, source)
    ids = predictions[id_column].astype(str)
    if ids.duplicated().any():
        i = int(np.flatnonzero(ids.duplicated().to_numpy())[0])
        raise DataError(f"{source}, row {i + 2}: image {ids.iloc[i]!r} has a second row of predictions (nothing was stored)")
    known = ids.isin(set(tables.images["image_id"]))
    p = values[known.to_numpy()]
    spec = ModelSpec(name=model_name, arch="imported", labels=labels, thresholds={},
                     card={"source": "imported predictions", "file": source, "labels_not_in_dataset": unknown_labels})
    with np.errstate(divide="ignore"):
        logits = np.log(p) - np.log1p(-p)
    problems = [tables.problems.assign(stage="adapter"),
                pd.DataFrame({"file": source, "row": np.flatnonzero(~known.to_numpy()) + 2, "image_id": ids[~known],
                              "problem": "prediction for an image not in the dataset; prediction skipped", "stage": "import"})]
    if thresholds:
        problems.append(pd.DataFrame([{"file": thresholds_source, "image_id": None, "stage": "import",
                                       "problem": f"no threshold for label {lab!r}; its decisions (TPR/FPR) stay missing"}
                                      for lab in labels if lab not in thresholds]
                                     + [{"file": thresholds_source, "image_id": None, "stage": "import",
                                         "problem": f"threshold for {lab!r}, which the predictions do not have; ignored"}
                                        for lab in thresholds if lab not in labels]))
    with write_store(store_path, fresh=fresh) as writer:
        writer.put_dataset(tables.name, source=tables.source, labels=list(tables.label_names), root=str(tables.root),
                           description=tables.description, config=tables.config)
        writer.put_images(tables.images.assign(dataset=tables.name))
        writer.put_labels(tables.labels)
        if len(tables.annotations):
            writer.put_annotations(tables.annotations)
        n_problems = writer.put_problems(pd.concat(problems, ignore_index=True).assign(dataset=tables.name))
        writer.put_model(spec)
        writer.put_predictions(model_name, ids[known].tolist(), labels, np.clip(logits, -50, 50).astype(np.float32), p)
        if thresholds:
            rows = [{"label": k, "threshold": float(v), "method": "imported", "criterion": None, "split": None}
                    for k, v in thresholds.items() if k in labels]
            writer.put_thresholds(model_name, rows)
            report = {"thresholds": len(rows)}
        else:
            report = {"thresholds": store_thresholds(writer, model_name, fallback={})}
    return {"images": int(known.sum()), "unknown_ids": int((~known).sum()), "labels": list(labels),
            "new_problems": n_problems, **report}


def build_dataset(store_path: str | Path, tables, model: LoadedModel, *, split: str | None = "test",
                  stages: list[Stage], cache_dir: str | Path, workers: int | None = None,
                  progress: ProgressFn = _quiet, fresh: bool = False, model_path: str | None = None,
                  strict: bool = False) -> dict:
    """Precompute a real dataset: cases (with the adapter's problems), decoded images of
    ``split`` (an unreadable file is a problem row and the image is skipped; ``strict`` raises
    on the first instead), boxes clipped to each decoded image, then ``stages`` with the model."""
    report: dict = {"dataset": tables.name, "problems": len(tables.problems)}
    t0 = time.monotonic()
    images = tables.images
    chosen = images if split is None else images[images["split"] == split]
    decoded = decode_images(tables.root, list(zip(chosen["image_id"], chosen["path"])), model.spec.input_size,
                            cache_dir, workers=workers, progress=lambda d, n: progress("decode images", d, n))
    if decoded.failures and strict:
        raise DataError(decoded.failures[0][1])
    heights = images["image_id"].map({i: h for i, (h, _) in decoded.sizes.items()})
    widths = images["image_id"].map({i: w for i, (_, w) in decoded.sizes.items()})
    images = images.assign(height=heights.fillna(images["height"]), width=widths.fillna(images["width"]))
    path_of = dict(zip(images["image_id"], images["path"]))
    annotations, clipped = clip_boxes(tables.annotations, decoded.sizes)
    problems = pd.concat([tables.problems.assign(stage="adapter"),
                          pd.DataFrame([{"file": path_of.get(i), "image_id": i, "problem": f"{e}; image skipped",
                                         "stage": "decode"} for i, e in decoded.failures]),
                          clipped.assign(stage="decode")], ignore_index=True).assign(dataset=tables.name)
    report.update(decoded=len(decoded.image_ids), failed=len(decoded.failures), decode_s=round(time.monotonic() - t0, 1))
    with write_store(store_path, fresh=fresh) as writer:
        writer.put_dataset(tables.name, source=tables.source, labels=list(tables.label_names), root=str(tables.root),
                           description=tables.description, config=tables.config)
        writer.put_images(images.assign(dataset=tables.name))
        writer.put_labels(tables.labels)
        if len(annotations):
            writer.put_annotations(annotations)
        report["new_problems"] = writer.put_problems(problems)
        writer.put_model(model.spec, weights_path=model_path)
        writer.publish()
        ctx = BuildContext(writer, tables.name, model, load_images=decoded.loader(), progress=progress,
                           options={"image_ids": decoded.image_ids, "split": split})
        for stage in stages:
            s0 = time.monotonic()
            report[stage.name] = {**stage.run(ctx), "seconds": round(time.monotonic() - s0, 1)}
            writer.publish()
    report["total_s"] = round(time.monotonic() - t0, 1)
    return report


def _read_cache(path, model: LoadedModel) -> dict | None:
    path = Path(path)
    if not path.is_file():
        return None
    with np.load(path) as z:
        if str(z["weights_sha256"]) != model.spec.card.get("weights_sha256"):
            return None
        return dict(zip(z["image_ids"].tolist(), z["logits"]))


def thresholds_stage(ctx: BuildContext, *, method: str = "f1", split: str = "val") -> dict:
    """Per-label thresholds from the validation predictions in the store (see :func:`store_thresholds`)."""
    return store_thresholds(ctx.writer, ctx.model.spec.name, fallback=ctx.model.spec.thresholds, method=method,
                            split=split)


def store_thresholds(writer: StoreWriter, model_id: str, *, fallback: dict[str, float], method: str = "f1",
                     split: str = "val") -> dict:
    """Choose per-label thresholds on ``split``'s predictions; without any, store ``fallback``
    (the model spec's own thresholds) when there are some."""
    table = writer.prediction_table(model_id, split=split)
    if table.empty:
        rows = [{"label": k, "threshold": v, "method": "model spec", "criterion": None, "split": None}
                for k, v in fallback.items()]
        writer.put_thresholds(model_id, rows)
        return {"labels": len(rows), "method": "model spec" if rows else f"none (no {split} predictions, none in the spec)"}
    rows, skipped = [], []
    for label, grp in table.groupby("label", sort=False):
        known = grp.dropna(subset=["ground_truth"])
        y = known["ground_truth"].astype(int)
        if y.nunique() < 2:  # no threshold can be chosen; say so instead of storing an arbitrary one
            skipped.append(label)
            continue
        thr, crit = choose_threshold(y, known["prob"], method=method)
        rows.append({"label": label, "threshold": thr, "method": method, "criterion": crit, "split": split})
    writer.put_thresholds(model_id, rows)
    return {"labels": len(rows), "method": method, "without_threshold": skipped}


# --------------------------------------------------------------------------- demo

def _demo_tables(data: DemoData) -> tuple[pd.DataFrame, pd.DataFrame]:
    specs = data.specs
    size = data.config.size
    images = pd.DataFrame({
        "image_id": [s.image_id for s in specs], "dataset": DEMO_DATASET, "path": None,
        "generator_key": [s.to_json() for s in specs], "patient_id": [s.patient_id for s in specs],
        "sex": [s.sex for s in specs], "age": [float(s.age) for s in specs],
        "age_bin": [s.age_bin for s in specs], "view": [s.view for s in specs],
        "split": [s.split for s in specs], "width": size, "height": size,
    })
    y = label_matrix(specs)
    labels = pd.DataFrame({
        "image_id": np.repeat(images["image_id"].to_numpy(), len(DEMO_LABELS)),
        "label": np.tile(np.array(DEMO_LABELS, dtype=object), len(specs)),
        "value": y.ravel().astype(int),
    })
    return images, labels


def demo_stages(*, full: bool = False) -> list[Stage]:
    """The demo build: predictions, thresholds, Grad-CAM/Grad-CAM++ for every test image × finding,
    sampled GradientSHAP / IG / occlusion maps, the thesis's occlusion sweep, then the metric
    stages (localization, baselines, geometry, trust, fidelity). ``full`` lifts the sampling."""
    plan = DEMO_PLAN.full() if full else DEMO_PLAN
    trust_plan = TrustPlan(images=30, methods=(*TrustPlan().methods, TRUST_IG)) if full else TrustPlan()
    fidelity_plan = FidelityPlan(cases=40, methods=("gradcam", "occlusion")) if full else FidelityPlan()
    return [
        Stage("predictions", predictions_stage),
        Stage("thresholds", thresholds_stage),
        Stage("cams", lambda ctx: cam_stage(ctx, plan)),
        Stage("maps", lambda ctx: maps_stage(ctx, plan)),
        Stage("occlusion sweep", lambda ctx: sweep_stage(ctx, plan)),
        Stage("localization", localization_stage),
        Stage("second reader", reader_stage),
        Stage("baselines", baseline_stage),
        Stage("geometry", geometry_stage),
        Stage("trust", lambda ctx: trust_stage(ctx, trust_plan)),
        Stage("fidelity", lambda ctx: fidelity_stage(ctx, fidelity_plan)),
    ]


def build_demo(store_path: str | Path, *, model_path: str | Path, data_dir: str | Path,
               config: PhantomConfig | None = None, progress: ProgressFn = _quiet,
               stages: list[Stage] | None = None, fresh: bool = False, extra_models: list[Path] = (),
               prediction_cache: Path | None = None, write_prediction_cache: bool = False) -> dict:
    """Build (or resume) the demo store: cases, model, then ``stages`` (default :func:`demo_stages`).

    ``extra_models`` (weights files) are registered, used for repeatability/reproducibility, and
    predicted on validation + test with their own thresholds.
    """
    config = config or PhantomConfig()
    report: dict = {}
    t0 = time.monotonic()
    data = load_demo(config, data_dir, progress=lambda d, n: progress("render phantoms", d, n))
    report["render_s"] = round(time.monotonic() - t0, 1)
    model = load(model_path)
    row_of = {s.image_id: i for i, s in enumerate(data.specs)}
    with write_store(store_path, fresh=fresh) as writer:
        if len(writer.images(dataset=DEMO_DATASET)) != len(data.specs):
            images, labels = _demo_tables(data)
            writer.put_dataset(DEMO_DATASET, source="cxrxai phantom", labels=list(DEMO_LABELS),
                               root=str(data_dir), config=json.loads(config.to_json()),
                               description="Deterministic phantom chest radiographs with exact lesion masks")
            writer.put_images(images)
            writer.put_labels(labels)
            writer.put_annotations(data.annotations)
            writer.put_annotations(synthetic_reader(data.annotations[data.annotations.image_id.isin(
                set(images.image_id[images.split == "test"]))]))
            writer.publish()
        writer.put_model(model.spec, weights_path=str(model_path))
        others = [load(p) for p in extra_models]
        for path, other in zip(extra_models, others):
            writer.put_model(other.spec, weights_path=str(path))
        options = {"trust_models": others, "prediction_cache": prediction_cache,
                   "write_prediction_cache": write_prediction_cache}
        ctx = BuildContext(writer, DEMO_DATASET, model, options=options,
                           load_images=lambda ids: data.images[[row_of[i] for i in ids]], progress=progress)
        for stage in stages if stages is not None else demo_stages():
            s0 = time.monotonic()
            report[stage.name] = {**stage.run(ctx), "seconds": round(time.monotonic() - s0, 1)}
            writer.publish()
        # The extra models also get predictions and thresholds on validation + test, so they can
        # be compared with the main model on every page (their maps are recomputed live).
        stored = writer.images(dataset=DEMO_DATASET)
        eval_ids = stored.image_id[stored.split.isin(["val", "test"])].tolist()
        for other in others:
            s0 = time.monotonic()
            octx = BuildContext(writer, DEMO_DATASET, other, options={"image_ids": eval_ids},
                                load_images=ctx.load_images, progress=progress)
            report[f"model {other.spec.name}"] = {"predictions": predictions_stage(octx),
                                                  "thresholds": thresholds_stage(octx),
                                                  "seconds": round(time.monotonic() - s0, 1)}
            writer.publish()
    report["total_s"] = round(time.monotonic() - t0, 1)
    return report
