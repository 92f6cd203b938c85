"""Precompute stages that score stored maps and ground truth into the store's metric tables.

* :func:`localization_stage` — every stored map against its case's ground truth (per reader):
  IoU (Otsu, true-positive and full conventions, and with the probability gate), hit, the
  thesis's PLA, ROC AUC, PR AUC and AP. Only positive attributions count (the thesis), maps are
  upsampled bilinearly to the image (CheXlocalize). Baselines (Arun et al.): the average
  ground-truth mask of the training split and a random map, scored the same way.
* :func:`geometry_stage` — instances, size, elongation, irrectangularity per ground truth.

Each stage computes only what its table lacks (resumable).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data.cases import case_masks
from ..data.demo import SHORTCUT_READER
from ..explain import postprocess
from ..explain.stage import native_map
from ..labels import NO_FINDING
from ..store import params_key
from . import geometry
from .localization import (
    coarse_pointing_game,
    iou,
    otsu_mask,
    pointing_game,
    points_hit,
    probability_gate,
    ranking_metrics,
)

__all__ = ["BASELINES", "baseline_stage", "geometry_stage", "localization_stage", "reader_stage", "score_map"]

BASELINES = ("average_mask", "random")


def score_map(native: np.ndarray, truth: np.ndarray, *, prob: float | None = None, threshold: float | None = None
              ) -> dict:
    """All localization metrics of one map against one mask (see the module docstring)."""
    pos = postprocess.positive(native)
    up = postprocess.upsample(pos, truth.shape)
    pred = otsu_mask(up)
    has_gt = bool(truth.any())
    gated = probability_gate(pred, prob, threshold) if prob is not None and threshold is not None else pred
    out = {
        "gt_positive": has_gt, "iou": iou(pred, truth), "iou_full": iou(pred, truth, convention="full"),
        "iou_gated": iou(gated, truth, convention="full"), "pred_area": float(pred.mean()),
        "gt_area": float(truth.mean()),
    }
    if has_gt:
        out.update(hit=pointing_game(up, truth), pla=coarse_pointing_game(pos, truth), **ranking_metrics(up, truth))
    else:
        out.update(hit=np.nan, pla=np.nan, roc_auc=np.nan, pr_auc=np.nan, ap=np.nan)
    return out


def _truth_by_case(writer, image_ids, size: tuple[int, int]) -> dict:
    ann = writer.annotations()
    ann = ann[ann["image_id"].isin(set(image_ids))]
    return {img: case_masks(g, *size) for img, g in ann.groupby("image_id")}


def localization_stage(ctx) -> dict:
    model = ctx.model
    mid = model.spec.name
    index = ctx.writer.map_index(model_id=mid)
    if index.empty:
        return {"scored": 0}
    done = ctx.writer.table("localization", model_id=mid)
    if not done.empty:
        keys = set(zip(done.image_id, done.label, done.method, done.params_key))
        index = index[[k not in keys for k in zip(index.image_id, index.label, index.method, index.params_key)]]
    if index.empty:
        return {"scored": 0, "skipped": len(done)}
    preds = ctx.writer.prediction_table(mid).set_index(["image_id", "label"])
    imgs = ctx.writer.images(image_ids=index.image_id.unique())
    size = (int(imgs["height"].iloc[0]), int(imgs["width"].iloc[0]))
    truths = _truth_by_case(ctx.writer, index.image_id.unique(), size)
    rows, n = [], 0
    for (method, key), group in index.groupby(["method", "params_key"], sort=False):
        wanted = set(zip(group.image_id, group.label))
        for stored in ctx.writer.iter_maps(mid, method, key):
            if (stored.image_id, stored.label) not in wanted:
                continue
            readers = {r: m for (lab, r), m in truths.get(stored.image_id, {}).items() if lab == stored.label and r == "gt"} \
                or {"gt": None}
            p = preds.loc[(stored.image_id, stored.label)]
            for reader, mask in readers.items():
                truth = mask if mask is not None else np.zeros(size, bool)
                rows.append({"model_id": mid, "image_id": stored.image_id, "label": stored.label, "method": method,
                             "params_key": key, "reader": reader, "prob": float(p["prob"]),
                             "predicted": bool(p["predicted"]) if pd.notna(p["predicted"]) else None,
                             **score_map(native_map(stored), truth, prob=float(p["prob"]),
                                         threshold=float(p["threshold"]) if pd.notna(p["threshold"]) else None)})
            n += 1
            if len(rows) >= 500:
                ctx.writer.put_table("localization", pd.DataFrame(rows))
                rows = []
                ctx.progress("localization metrics", n, len(index))
                ctx.maybe_publish()
    if rows:
        ctx.writer.put_table("localization", pd.DataFrame(rows))
    ctx.progress("localization metrics", n, len(index))
    return {"scored": n}


def baseline_stage(ctx, *, split: str = "test", train_split: str = "train", seed: int = 0) -> dict:
    """Score the average training mask and a random map on every positive case of ``split``."""
    mid = ctx.model.spec.name
    done = ctx.writer.table("localization", model_id=mid)
    if not done.empty and done.method.isin([f"baseline:{b}" for b in BASELINES]).any():
        return {"skipped": True}
    imgs = ctx.writer.images(dataset=ctx.dataset)
    size = (int(imgs["height"].iloc[0]), int(imgs["width"].iloc[0]))
    split_of = imgs.set_index("image_id")["split"]
    truths = _truth_by_case(ctx.writer, imgs.image_id, size)
    rng = np.random.default_rng(seed)
    averages: dict[str, np.ndarray] = {}
    for label in ctx.model.spec.labels:
        masks = [m for img, t in truths.items() if split_of[img] == train_split
                 for (lab, r), m in t.items() if lab == label and r == "gt"]
        if masks:
            averages[label] = np.mean(masks, axis=0)
    rows = []
    for img, t in truths.items():
        if split_of[img] != split:
            continue
        for (label, reader), mask in t.items():
            if reader != "gt" or label not in averages or label == NO_FINDING:
                continue
            for name, m in (("average_mask", averages[label]), ("random", rng.random(size))):
                rows.append({"model_id": mid, "image_id": img, "label": label, "method": f"baseline:{name}",
                             "params_key": params_key({}), "reader": reader, **score_map(m, mask)})
    if rows:
        ctx.writer.put_table("localization", pd.DataFrame(rows))
    return {"cases": len(rows) // 2, "labels": sorted(averages)}


def reader_stage(ctx) -> dict:
    """Score every second reader against the reference ("gt") as Saporta's human benchmark:
    IoU of the reader's mask, and hit = any of the reader's points inside the reference mask.
    Rows go to the localization table as method ``reader:<name>``."""
    mid = ctx.model.spec.name
    ann = ctx.writer.annotations()
    others = sorted(set(ann.reader) - {"gt", SHORTCUT_READER})
    done = ctx.writer.table("localization", model_id=mid)
    if not others or (not done.empty and done.method.str.startswith("reader:").any()):
        return {"readers": others, "skipped": bool(others)}
    imgs = ctx.writer.images(image_ids=ann.image_id.unique()).set_index("image_id")
    rows = []
    for (img, label), g in ann.groupby(["image_id", "label"]):
        h, w = int(imgs.at[img, "height"]), int(imgs.at[img, "width"])
        masks = case_masks(g, h, w)
        truth = masks.get((label, "gt"))
        if truth is None or label == NO_FINDING:
            continue
        for reader in others:
            pts = g[(g.reader == reader) & (g.kind == "point")][["x", "y"]].to_numpy()
            mask = masks.get((label, reader), np.zeros((h, w), bool))
            rows.append({"model_id": mid, "image_id": img, "label": label, "method": f"reader:{reader}",
                         "params_key": params_key({}), "reader": "gt", "gt_positive": bool(truth.any()),
                         "iou": iou(mask, truth), "iou_full": iou(mask, truth, convention="full"),
                         "hit": points_hit(pts, truth) if len(pts) else np.nan,
                         "pred_area": float(mask.mean()), "gt_area": float(truth.mean())})
    if rows:
        ctx.writer.put_table("localization", pd.DataFrame(rows))
    return {"readers": others, "cases": len(rows)}


def geometry_stage(ctx) -> dict:
    """Geometric features of every ground-truth mask (all splits), by both dominance rules."""
    done = ctx.writer.table("geometry")
    imgs = ctx.writer.images(dataset=ctx.dataset)
    ann = ctx.writer.annotations()
    ann = ann[ann.image_id.isin(set(imgs.image_id))]
    if not done.empty and set(ann.image_id) <= set(done.image_id):  # only annotated images have rows
        return {"skipped": len(done)}
    size = (int(imgs["height"].iloc[0]), int(imgs["width"].iloc[0]))
    rows = []
    for (img, label, reader), g in ann.groupby(["image_id", "label", "reader"]):
        mask = case_masks(g, *size)[(label, reader)]
        n_inst = int(g["instance"].nunique())
        for rule in geometry.DOMINANT:
            rows.append({"image_id": img, "label": label, "reader": reader, "dominant": rule,
                         **geometry.features(mask, instances=n_inst, dominant=rule)})
    ctx.writer.put_table("geometry", pd.DataFrame(rows))
    return {"masks": len(rows) // len(geometry.DOMINANT)}
