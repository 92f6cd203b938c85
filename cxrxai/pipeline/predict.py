"""Prediction and threshold stages: every image's probabilities, then per-label operating points."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..labels import match_labels
from ..models.inference import predict_logits, sigmoid
from ..models.registry import LoadedModel
from ..models.thresholds import choose_threshold
from ..store import StoreWriter
from .runner import BuildContext
from .stages import stage

__all__ = ["predictions_stage", "store_file_thresholds", "store_thresholds", "thresholds_stage"]


@stage("predictions", reads=("images",), writes=("predictions",),
       help="every image's probabilities from the model (resumed per image)")
def predictions_stage(ctx: BuildContext, *, batch_size: int | None = None, verify: int = 32) -> dict:
    """Predict every image of the dataset that has no prediction from this model yet.

    With ``ctx.options["prediction_cache"]`` (an ``.npz`` of image ids and logits written next to
    the weights), cached logits are used when the cache names this model's weights hash and a
    live forward of ``verify`` random images agrees within 1e-3; otherwise everything is
    predicted, and the cache is (re)written when the option asks for it. ``batch_size``: see
    :func:`~cxrxai.models.inference.predict_logits`.
    """
    model_id = ctx.model.spec.name
    all_ids = ctx.options.get("image_ids")
    if all_ids is None:  # an empty list (nothing decoded) predicts nothing, not every image
        all_ids = ctx.writer.images(dataset=ctx.dataset)["image_id"].tolist()
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
        if (
            all(i in cached for i in todo)
            and np.abs(live - np.stack([cached[i] for i in sample])).max() <= 1e-3
        ):
            for start in range(0, len(todo), 2048):
                ids = todo[start:start + 2048]
                logits = np.stack([cached[i] for i in ids])
                ctx.writer.put_predictions(model_id, ids, ctx.model.spec.labels, logits, sigmoid(logits))
            return {
                "predicted": len(todo),
                "skipped": len(done),
                "from_cache": str(cache),
                "verified_on": len(sample),
            }
    chunk = 256  # images decoded, predicted and written per step
    engine = ctx.options.get("engine")
    if engine is not None:  # e.g. Ray: the same chunks as units of work
        engine.run(
            ctx,
            [{"kind": "predictions", "ids": todo[s : s + chunk]} for s in range(0, len(todo), chunk)],
            "predictions",
        )
        return {"predicted": len(todo), "skipped": len(done), "engine": engine.name,
                "images_per_s": round(len(todo) / (time.monotonic() - t0), 2)}
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


def _read_cache(path, model: LoadedModel) -> dict | None:
    path = Path(path)
    if not path.is_file():
        return None
    with np.load(path) as z:
        if str(z["weights_sha256"]) != model.spec.card.get("weights_sha256"):
            return None
        return dict(zip(z["image_ids"].tolist(), z["logits"]))


@stage("thresholds", reads=("predictions", "labels"), writes=("thresholds",),
       help="per-label decision thresholds chosen on the validation split")
def thresholds_stage(ctx: BuildContext, *, method: str = "f1", split: str = "val") -> dict:
    """Per-label thresholds from the validation predictions in the store (see :func:`store_thresholds`);
    then those of ``ctx.options["thresholds"]`` (a file's name and its {label: threshold}), which
    replace the chosen ones label by label (:func:`store_file_thresholds`)."""
    spec = ctx.model.spec
    report = store_thresholds(ctx.writer, spec.name, fallback=spec.thresholds, method=method, split=split)
    given = ctx.options.get("thresholds")
    if given:
        report["from_file"] = store_file_thresholds(ctx.writer, ctx.dataset, spec, *given)
    return report


def store_file_thresholds(writer: StoreWriter, dataset: str, spec, source: str,
                          thresholds: dict[str, float]) -> dict:
    """Store a file's thresholds (method ``file:<source>``) for the outputs they name — in the
    dataset's or the model's spelling, matched as labels are (:func:`~cxrxai.labels.match_labels`).
    A threshold for a label the model does not output is a problem row (stage ``thresholds``)."""
    match = match_labels(list(thresholds), spec.labels)
    rows = [{"label": match.rename(k), "threshold": float(v), "method": f"file:{source}", "criterion": None,
             "split": None} for k, v in thresholds.items() if k in match.matched]
    writer.put_thresholds(spec.name, rows)
    ignored = [{"dataset": dataset, "stage": "thresholds", "file": source,
                "problem": f"threshold for {k!r}, which model {spec.name} does not output; ignored"}
               for k in match.unmatched_outputs]
    writer.put_problems(pd.DataFrame(ignored, columns=["dataset", "stage", "file", "problem"]))
    kept = [lab for lab in spec.labels if lab not in {r["label"] for r in rows}]
    return {"file": source, "labels": len(rows), "not_in_model": list(match.unmatched_outputs),
            "not_in_file": kept}


def store_thresholds(writer: StoreWriter, model_id: str, *, fallback: dict[str, float], method: str = "f1",
                     split: str = "val") -> dict:
    """Choose per-label thresholds on ``split``'s predictions; without any, store ``fallback``
    (the model spec's own thresholds) when there are some."""
    table = writer.prediction_table(model_id, split=split)
    if table.empty:
        rows = [{"label": k, "threshold": v, "method": "model spec", "criterion": None, "split": None}
                for k, v in fallback.items()]
        writer.put_thresholds(model_id, rows)
        return {
            "labels": len(rows),
            "method": "model spec" if rows else f"none (no {split} predictions, none in the spec)",
        }
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
