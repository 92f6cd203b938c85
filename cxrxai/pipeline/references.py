"""Precompute stages that score what the explainers are measured against, not a model's maps:
Arun et al.'s baselines (the average training mask and a random map) and Saporta's human
benchmark (second readers against the reference standard).

Both write rows to the localization table beside the explainers' (source ``baseline`` and
``reader``), and both can score a sample of the cases alone (:data:`SCORED_IDS`), as the evidence
checks recompute them.
"""

from __future__ import annotations

import cv2
import numpy as np
import pandas as pd

from ..data.demo import SHORTCUT_READER
from ..labels import NO_FINDING
from ..metrics.localization import iou, points_hit
from ..metrics.registry import score_map
from ..store import LOCALIZATION_KEY, params_key
from .stages import stage
from .truth import REFERENCE, put_problems, truth_by_case

__all__ = ["AVERAGE_GRID", "BASELINES", "SCORED_IDS", "average_masks", "baseline_stage",
           "reader_stage"]

BASELINES = ("average_mask", "random")

#: The option that names the cases whose baselines and second readers are scored (a
#: recomputation's sample); the baselines' random stream is drawn over every case all the same,
#: so each scored case gets the build's random map.
SCORED_IDS = "scored_ids"

#: Side of the common grid on which training masks of different sizes are averaged.
AVERAGE_GRID = 256


def average_masks(masks: list[np.ndarray]) -> np.ndarray:
    """Mean of binary masks (Arun et al.'s average-mask baseline).

    Masks of one size are averaged as they are; masks of different sizes (real datasets) are
    first resampled to an ``AVERAGE_GRID``² grid by area averaging, so each image weighs the same
    in relative (normalised) coordinates. The result is upsampled to each scored image's own size
    by :func:`score_map`, like any coarse map.
    """
    shapes = {m.shape for m in masks}
    if len(shapes) == 1:
        return np.mean(masks, axis=0)
    grid = (AVERAGE_GRID, AVERAGE_GRID)
    resized = [
        cv2.resize(m.astype(np.float32), grid[::-1], interpolation=cv2.INTER_AREA) for m in masks
    ]
    return np.mean(resized, axis=0)


@stage("baselines", reads=("annotations",), writes=("localization",), uses={"split": "split"},
       help="average-mask and random baselines (Arun et al.)")
def baseline_stage(ctx, *, split: str = "test", train_split: str = "train", seed: int = 0) -> dict:
    """Score the average training mask and a random map on every positive case of ``split``.

    ``split=None``: every split but ``train_split``; the :data:`SCORED_IDS` option: of those
    cases, these only. Stored rows resume per (row, metric): when a metric was registered since,
    the baselines are recomputed (the same seed gives the same random maps) and only the missing
    scores are written.
    """
    mid = ctx.model.spec.name
    imgs = ctx.writer.images(dataset=ctx.dataset)
    missing = None
    stored = ctx.writer.table("localization", model_id=mid, source="baseline")
    if stored.image_id.isin(imgs.image_id).any():  # this dataset's baselines: resume them
        missing = ctx.writer.localization_missing(model_id=mid, source="baseline")
        missing = missing[missing.image_id.isin(imgs.image_id)]
        if missing.empty:
            return {"skipped": True}
    split_of = imgs.set_index("image_id")["split"]
    truths, sizes, problems = truth_by_case(ctx.writer, imgs.image_id, stage="baselines")
    put_problems(ctx, problems)
    averages = _average_masks_by_label(ctx.model.spec.labels, truths, split_of, train_split)
    if split:
        scored = [img for img in truths if split_of[img] == split]
    else:
        scored = [img for img in truths if split_of[img] != train_split]
    rng = np.random.default_rng(seed)
    rows = _baseline_rows(mid, scored, truths, sizes, averages, rng, ctx.options.get(SCORED_IDS))
    if rows:
        for frame in _only_missing(pd.DataFrame(rows), missing):
            ctx.writer.put_table("localization", frame)
    out = {"cases": len(rows) // 2, "labels": sorted(averages)}
    if missing is not None:
        out["metrics_added"] = sorted(set(missing.metric))
    without = sorted(set(ctx.model.spec.labels) - set(averages) - {NO_FINDING})
    if without:
        out["no_training_masks"] = without
    return out


def _average_masks_by_label(labels, truths: dict, split_of: pd.Series,
                            train_split: str) -> dict[str, np.ndarray]:
    """``{label: average reference mask of the training split}`` for each label that has any."""
    averages = {}
    for label in labels:
        masks = [
            m
            for img, t in truths.items()
            if split_of[img] == train_split
            for (lab, r), m in t.items()
            if lab == label and r == REFERENCE
        ]
        if masks:
            averages[label] = average_masks(masks)
    return averages


def _baseline_rows(mid: str, scored: list[str], truths: dict, sizes: dict, averages: dict, rng,
                   only: set | None) -> list[dict]:
    """The baseline rows of every reference mask of the ``scored`` cases.

    Each case's random map is drawn from the one stream in their order; ``only`` (a set of image
    ids, or None): the cases whose rows are scored, the others' random maps drawn all the same,
    so that each scored map is the build's.
    """
    rows = []
    for img in scored:
        for (label, reader), mask in truths[img].items():
            if reader != REFERENCE or label not in averages or label == NO_FINDING:
                continue
            random_map = rng.random(sizes[img])
            if only is not None and img not in only:
                continue
            for name, m in (("average_mask", averages[label]), ("random", random_map)):
                rows.append({
                    "model_id": mid,
                    "image_id": img,
                    "label": label,
                    "source": "baseline",
                    "method": name,
                    "params_key": params_key({}),
                    "reader": reader,
                    **score_map(m, mask),
                })
    return rows


def _only_missing(rows: pd.DataFrame, missing: pd.DataFrame | None) -> list[pd.DataFrame]:
    """``rows`` whole (``missing`` None: nothing stored yet), else for each metric of ``missing``
    the rows it lacks, with their key and that metric alone (stored rows keep their other
    scores)."""
    if missing is None:
        return [rows]
    key = list(LOCALIZATION_KEY)
    out = []
    for metric, lacking in missing.groupby("metric"):
        frame = rows.merge(lacking[key], on=key)[[*key, metric]]
        if len(frame):
            out.append(frame)
    return out


@stage("second reader", reads=("annotations",), writes=("localization",),
       help="second readers against the reference (the human benchmark)")
def reader_stage(ctx) -> dict:
    """Score every second reader against the reference ("gt") as Saporta's human benchmark.

    IoU of the reader's mask, and hit = any of the reader's points inside the reference mask.
    Rows go to the localization table with source ``reader`` and the reader's name as method;
    each image at its own size (the :data:`SCORED_IDS` option: these images only).
    """
    mid = ctx.model.spec.name
    ids = set(ctx.writer.images(dataset=ctx.dataset).image_id)
    ann = ctx.writer.annotations()
    ann = ann[ann.image_id.isin(ids)]
    others = sorted(set(ann.reader) - {REFERENCE, SHORTCUT_READER})
    if not others or not ctx.writer.table("localization", model_id=mid, source="reader").empty:
        return {"readers": others, "skipped": bool(others)}
    if ctx.options.get(SCORED_IDS) is not None:
        ann = ann[ann.image_id.isin(ctx.options[SCORED_IDS])]
    truths, sizes, problems = truth_by_case(
        ctx.writer, ann.image_id.unique(), stage="second reader"
    )
    put_problems(ctx, problems)
    ann = ann[ann.image_id.isin(set(truths))]
    by_reader = ann[ann.kind == "point"].groupby(["image_id", "label", "reader"])
    points = {k: g[["x", "y"]].to_numpy() for k, g in by_reader}  # one pass, not one per case
    cases = ann[["image_id", "label"]].drop_duplicates().sort_values(["image_id", "label"])
    rows = []
    for img, label in cases.itertuples(index=False):
        masks = truths[img]
        truth = masks.get((label, REFERENCE))
        if truth is None or label == NO_FINDING:
            continue
        for reader in others:
            pts = points.get((img, label, reader), np.zeros((0, 2)))
            mask = masks.get((label, reader), np.zeros(sizes[img], bool))
            rows.append({
                "model_id": mid,
                "image_id": img,
                "label": label,
                "source": "reader",
                "method": reader,
                "params_key": params_key({}),
                "reader": REFERENCE,
                "gt_positive": bool(truth.any()),
                "iou": iou(mask, truth),
                "iou_full": iou(mask, truth, convention="full"),
                "hit": points_hit(pts, truth) if len(pts) else np.nan,
                "pred_area": float(mask.mean()),
                "gt_area": float(truth.mean()),
            })
    if rows:
        ctx.writer.put_table("localization", pd.DataFrame(rows))
    return {"readers": others, "cases": len(rows)}
