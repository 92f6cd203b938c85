"""A real dataset's precompute: cases and decoded images, then predictions, maps and metrics."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

from ..data.adapters._base import clip_boxes
from ..data.decode import decode_images
from ..errors import DataError
from ..explain import get
from ..labels import LabelMatch, match_labels
from ..models.registry import LoadedModel
from ..models.stored import refuse_other_weights
from ..paths import absolute
from ..store import open_store, write_store
from .maps import MapPlan, planned
from .plan import BuildPlan, FidelityPlan, TrustPlan
from .runner import BuildContext, ProgressFn, Stage, _quiet, run_stages
from .stages import analysis_stages

__all__ = ["DATASET_STAGES", "build_dataset", "dataset_plan", "dataset_stages", "label_problems",
           "refuse_another_root"]

#: A user's dataset build, in order (registered stage names; ``cams`` and ``maps`` only when the
#: plan has explainers of their cost); ``--analyses`` adds registered analyses after them.
DATASET_STAGES = ("predictions", "thresholds", "cams", "maps", "localization", "second reader",
                  "baselines", "geometry")


def dataset_plan(
    *,
    explainers=("gradcam", "gradcam++"),
    per_label: int | None = None,
    split: str | None = "test",
    analyses=(),
    cases: int = 30,
) -> BuildPlan:
    """The plan of a real-data precompute: predictions, thresholds, maps of ``explainers`` (the
    registry's cheap ones — CAMs — for every image × label; costly ones for ``per_label`` positive
    cases per label, or all) on ``split`` (``None``: every image), then the metrics: localization
    against the reference reader, the second readers (human benchmark), Arun et al.'s average-mask
    and random baselines (when the training split has masks), and lesion geometry — each image at
    its own size.

    ``analyses`` adds registered analyses (:func:`~cxrxai.pipeline.stages.analysis_names`: the
    occlusion sweep, trust, fidelity, …) on ``cases`` positive cases.
    """
    extra = analysis_stages(analyses)
    cams = tuple(m for m in explainers if get(m).cost == "cheap")
    others = tuple(planned(m, per_label) for m in explainers if m not in cams)
    skip = {"cams"} if not cams else set()
    skip |= {"maps"} if not others else set()
    return BuildPlan(
        (*(n for n in DATASET_STAGES if n not in skip), *extra),
        split=split,
        maps=MapPlan(cams=cams, maps=others, sweep_cases=cases),
        trust=TrustPlan(images=cases),
        fidelity=FidelityPlan(cases=cases),
    )


def dataset_stages(**choices) -> list[Stage]:
    """The runnable stages of :func:`dataset_plan` (``choices``: its keywords)."""
    return dataset_plan(**choices).runnable()


def _keep_measured(images: pd.DataFrame, stored: pd.DataFrame) -> pd.DataFrame:
    """What an earlier run measured of images this run did not decode (another split): their size and
    the reader's note, kept rather than overwritten by the adapter's unknowns."""
    if stored.empty or "decode_note" not in stored:
        return images
    before = stored.set_index("image_id")
    out = images.copy()
    for col in [c for c in ("height", "width", "decode_note") if c in out]:  # an import decodes nothing
        out[col] = out[col].where(out[col].notna(), out["image_id"].map(before[col]))
    return out


def build_dataset(store_path: str | Path, tables, model: LoadedModel, plan: BuildPlan, *,
                  cache_dir: str | Path, workers: int | None = None, progress: ProgressFn = _quiet,
                  fresh: bool = False, model_path: str | None = None, strict: bool = False, engine=None,
                  thresholds: tuple[str, dict] | None = None) -> dict:
    """Precompute a real dataset: cases (with the adapter's problems), decoded images of the
    plan's split (an unreadable file is a problem row and the image is skipped; ``strict`` raises
    on the first instead), boxes clipped to each decoded image, then the plan's stages with the
    model. ``engine`` (e.g. :class:`~cxrxai.pipeline.ray_engine.RayEngine`) computes the stages'
    units of work (predictions, maps) elsewhere; the metrics run here on what it stored.

    The model's outputs are matched to the dataset's labels (:func:`~cxrxai.labels.match_labels`)
    and a matched output is stored under the dataset's spelling (its index unchanged), so its
    predictions meet the ground truth; the matches are stored (``label_matches``) and reported.
    ``thresholds``: (file name, {label: threshold}) given by the user, stored as ``file:<name>``.
    A model of the same name read from other weights is refused (:func:`refuse_other_weights`).
    """
    report: dict = {"dataset": tables.name, "problems": len(tables.problems)}
    t0 = time.monotonic()
    _check_split(tables, plan.split)
    weights = model_path and str(absolute(model_path))
    if not fresh and Path(store_path).is_file():  # before any decoding; checked again under the lock
        with open_store(store_path) as published:
            refuse_other_weights(published, model.spec, weights)
    match = match_labels(model.spec.labels, tables.label_names)
    model = replace(model, spec=model.spec.with_label_names(match.names))
    report["labels"] = label_report(match)
    images, decoded, annotations, problems = _decode(tables, model, match, plan.split, cache_dir,
                                                     workers=workers, progress=progress, strict=strict)
    report.update(
        decoded=len(decoded.image_ids), failed=len(decoded.failures), decode_s=round(time.monotonic() - t0, 1)
    )
    with write_store(store_path, fresh=fresh) as writer:
        refuse_other_weights(writer, model.spec, weights)
        _refuse_old_names(writer, model.spec.name, match, tables)
        report["new_problems"] = put_cases(writer, tables, images, annotations, problems)
        writer.put_model(model.spec, weights_path=weights)
        writer.put_label_matches(tables.name, model.spec.name, match.rows())
        writer.publish()
        ctx = BuildContext(writer, tables.name, model, load_images=decoded.loader(), progress=progress,
                           options={"image_ids": decoded.image_ids, "split": plan.split, "engine": engine,
                                    "thresholds": thresholds})
        try:
            run_stages(ctx, plan.runnable(), report)
        finally:
            if engine is not None:
                report["engine"] = _engine_report(engine)
    report["total_s"] = round(time.monotonic() - t0, 1)
    return report


def _decode(tables, model, match: LabelMatch, split: str | None, cache_dir, *, workers, progress,
            strict: bool):
    """Decode the images of ``split``: the images table with each decoded film's size and the
    reader's note, the decoded images, the boxes clipped to them, and every problem row."""
    images = tables.images
    chosen = images if split is None else images[images["split"] == split]
    decoded = decode_images(tables.root, list(zip(chosen["image_id"], chosen["path"])),
                            model.spec.input_size, cache_dir, workers=workers,
                            progress=lambda d, n: progress("decode images", d, n))
    if decoded.failures and strict:
        raise DataError(decoded.failures[0][1])
    heights = images["image_id"].map({i: h for i, (h, _) in decoded.sizes.items()})
    widths = images["image_id"].map({i: w for i, (_, w) in decoded.sizes.items()})
    images = images.assign(height=heights.fillna(images["height"]), width=widths.fillna(images["width"]),
                           decode_note=images["image_id"].map(decoded.notes))  # what the reader did
    annotations, clipped = clip_boxes(tables.annotations, decoded.sizes)
    problems = _problems(tables, images, decoded, clipped, label_problems(match, model.spec.name))
    return images, decoded, annotations, problems


def put_cases(writer, tables, images: pd.DataFrame, annotations: pd.DataFrame,
               problems: pd.DataFrame) -> int:
    """Register the dataset, its images (sizes an earlier run measured kept), labels, boxes and
    problems; the number of new problems. Precompute and ``import-predictions`` both write cases here."""
    writer.put_dataset(
        tables.name,
        source=tables.source,
        labels=list(tables.label_names),
        root=str(tables.root),
        description=tables.description,
        config=tables.config,
    )
    writer.put_images(_keep_measured(images, writer.images(dataset=tables.name)).assign(dataset=tables.name))
    writer.put_labels(tables.labels)
    if len(annotations):
        writer.put_annotations(annotations)
    return writer.put_problems(problems)


def _engine_report(engine) -> dict:
    """Shut ``engine`` down; what it did (units, parts ingested, workers, nodes, modules) and the Ray
    it used (``"local"``, the cluster's address, or None where every unit was stored)."""
    engine.shutdown()
    stats = engine.stats
    return {
        "name": engine.name,
        "units": stats["units"],
        "from_parts": stats["from_parts"],
        "workers": len(stats["worker_pids"]),
        "nodes": len(stats.get("nodes", ())),
        "modules": sorted(stats.get("modules", ())),
        "pixels_from": sorted(stats.get("pixels_from", ())),
        "ray": stats.get("ray"),
    }


def _problems(tables, images: pd.DataFrame, decoded, clipped: pd.DataFrame,
              labels: pd.DataFrame) -> pd.DataFrame:
    """The adapter's problem rows, then the films that could not be read, the boxes clipped to
    the decoded image, and the label matching's."""
    path_of = dict(zip(images["image_id"], images["path"]))
    unread = pd.DataFrame([{"file": path_of.get(i), "image_id": i, "problem": f"{e}; image skipped",
                            "stage": "decode"} for i, e in decoded.failures])
    parts = [tables.problems.assign(stage="adapter"), unread, clipped.assign(stage="decode"), labels]
    return pd.concat(parts, ignore_index=True).assign(dataset=tables.name)


def _refuse_old_names(writer, model_id: str, match: LabelMatch, tables) -> None:
    """Predictions stored under an output's own name by a run before label matching would never
    be resumed under the dataset's name: say so instead of leaving two names for one output. Also
    refuses a dataset of the stored one's name read from another folder (:func:`refuse_another_root`)."""
    refuse_another_root(writer, tables)
    old = sorted(set(match.renamed) & writer.predicted_labels(model_id))
    if old:
        new = ", ".join(match.renamed[o] for o in old)
        raise DataError(f"the store holds predictions of {model_id} under its own label names "
                        f"({', '.join(old)}), which now score the dataset's {new}; rerun with --fresh "
                        "(or another --model-name) — nothing was written")


def refuse_another_root(writer, tables) -> None:
    """A dataset of the same name read from another folder is an error (nothing written): its row
    would replace the stored one's root, labels and label matches, and the stored images would be
    looked for in the new folder. A folder dataset takes another name (``name=``); a dataset that
    moved is re-rooted first."""
    known = writer.datasets()
    if known.empty or tables.name not in set(known["dataset"]):
        return
    old = known.set_index("dataset").loc[tables.name, "root"]
    if old is None or pd.isna(old) or Path(str(old)) == absolute(tables.root):
        return
    raise DataError(
        f"{writer.path} already holds a dataset {tables.name!r} read from {old}; this one is read from "
        f"{absolute(tables.root)}. Nothing was written: for another dataset, give it a name of its own "
        "(folder: --data-option name=NAME) or another --store; if the images moved, run `python -m cxrxai "
        f"reroot --store {writer.path} --dataset {tables.name} --root {absolute(tables.root)}` first")


def _check_split(tables, split: str | None) -> None:
    """A split the dataset does not have is an error naming the splits it has, before any work."""
    if split is None or (tables.images["split"] == split).any():
        return
    counts = tables.images["split"].fillna("none").value_counts().sort_index()
    have = ", ".join(f"{name} ({n:,} images)" for name, n in counts.items()) or "none (no images)"
    raise DataError(f"{tables.name} has no {split!r} split; its splits: {have}. Choose one with "
                    f"--split NAME, or --split all for every image")


def label_report(match: LabelMatch) -> dict:
    """What the precompute says about the label matching (printed with its report)."""
    return {"matched": {o: f"{n} ({h})" for o, n, h in zip(match.outputs, match.names, match.how)
                        if h != "unmatched output"},
            "outputs_matching_no_label": list(match.unmatched_outputs),
            "labels_no_output_scores": list(match.unmatched_labels)}


def label_problems(match: LabelMatch, model_id: str) -> pd.DataFrame:
    """A problem row (stage ``labels``) when no output of the model scores any dataset label:
    every prediction would be stored with no ground truth to meet."""
    if match.matched or not match.outputs:
        return pd.DataFrame(columns=["stage", "problem"])
    return pd.DataFrame([{"stage": "labels", "problem": (
        f"no output of model {model_id} ({', '.join(match.outputs)}) matches a dataset label "
        f"({', '.join(match.labels) or 'none'}), by name, case or synonym (cxrxai.labels.SYNONYMS): its "
        "predictions are stored but no metric can compare them with ground truth")}])
