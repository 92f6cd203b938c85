"""Precompute stages that score stored maps and ground truth into the store's metric tables.

* :func:`localization_stage` — every stored map against its case's ground truth (per reader):
  IoU (Otsu, true-positive and full conventions, and with the probability gate), hit, the
  thesis's PLA, ROC AUC, PR AUC and AP. Only positive attributions count (the thesis), maps are
  upsampled bilinearly to the image (CheXlocalize). Baselines (Arun et al.): the average
  ground-truth mask of the training split and a random map, scored the same way.
* :func:`geometry_stage` — instances, size, elongation, irrectangularity per ground truth.

Each stage computes only what its table lacks (resumable; the localization stage per map and
metric, so a metric registered after a build is scored into its store from the stored maps).
"""

from __future__ import annotations

import cv2
import numpy as np
import pandas as pd

from ..data.cases import masks_by_case
from ..data.demo import SHORTCUT_READER
from ..explain import native_map
from ..labels import NO_FINDING
from ..metrics import geometry
from ..metrics.localization import (
    iou,
    points_hit,
)
from ..metrics.registry import score_map, segment_and_score
from ..store import LOCALIZATION_KEY, params_key
from .stages import stage

__all__ = [
    "BASELINES",
    "REFERENCE",
    "SCORED_IDS",
    "average_masks",
    "baseline_stage",
    "geometry_stage",
    "image_sizes",
    "localization_stage",
    "reader_stage",
    "truth_by_case",
]

BASELINES = ("average_mask", "random")


#: The reference standard's reader name; other readers are second readers (human benchmarks).
REFERENCE = "gt"


def image_sizes(images: pd.DataFrame, annotations: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """``{image_id: (height, width)}`` at each image's own size.

    The ``images`` table holds the size once an image was decoded; an image that was not (a
    split left out of the precompute) takes the size of its stored masks when it has any.
    Images of unknown size are left out: their boxes cannot be rasterised.
    """
    sizes = {}
    known = images.dropna(subset=["height", "width"])
    sizes.update(zip(known.image_id, zip(known.height.astype(int), known.width.astype(int))))
    masks = annotations[(annotations.kind == "mask") & ~annotations.image_id.isin(set(sizes))]
    for img, h, w in (
        masks[["image_id", "mask_height", "mask_width"]].drop_duplicates("image_id").itertuples(index=False)
    ):
        sizes[img] = (int(h), int(w))
    return sizes


def truth_by_case(writer, image_ids, *, stage: str) -> tuple[dict, dict, list[dict]]:
    """Ground-truth masks per image at each image's own size.

    Returns ``(truths, sizes, problems)``: ``truths[image_id][(label, reader)]`` is a bool mask,
    ``sizes[image_id]`` its (height, width), and ``problems`` the problem rows of images whose
    annotations do not fit them (a mask of another size): those images are left out, never fatal.
    Images of unknown size (never decoded, no mask) are left out silently: not scoring them is
    no fault of the data.
    """
    ids = set(image_ids)
    ann = writer.annotations()
    ann = ann[ann["image_id"].isin(ids)]
    sizes = image_sizes(writer.images(image_ids=ids), ann)
    truths, bad = masks_by_case(ann, sizes)
    problems = [{"stage": stage, "image_id": img, "problem": f"{err}; image not scored"}
                for img, err in bad.items()]
    return truths, sizes, problems


def _put_problems(ctx, rows: list[dict]) -> None:
    if rows:
        ctx.writer.put_table("problems", pd.DataFrame(rows).assign(dataset=ctx.dataset))


def _reference_readers(masks: dict, label: str) -> dict:
    """The masks one map is scored against: the reference reader's, else (a dataset whose
    readers are all peers) each reader's; a case without any is scored against an empty mask."""
    own = {r: m for (lab, r), m in masks.items() if lab == label and r != SHORTCUT_READER}
    if REFERENCE in own:
        return {REFERENCE: own[REFERENCE]}
    return own or {REFERENCE: None}


@stage("localization", reads=("maps", "annotations"), writes=("localization",),
       aliases=("localization (CAMs)", "sweep scores"), help="every stored map scored against ground truth")
def localization_stage(ctx) -> dict:
    """Score the model's stored maps against their cases' ground truth, resuming per (map, metric):
    a map without rows, or scored under another decision than the current thresholds give, gets
    every registered metric; a map whose rows lack some registered metrics (one registered since)
    gets those only. Maps are read from the store, never recomputed."""
    mid = ctx.model.spec.name
    index = ctx.writer.map_index(model_id=mid)
    if index.empty:
        return {"scored": 0}
    done = ctx.writer.table("localization", model_id=mid)
    preds = ctx.writer.prediction_table(mid).set_index(["image_id", "label"])
    index, rescored = _to_score(index, done, preds)
    work = _work(index, ctx.writer.localization_missing(model_id=mid, source="explainer"))
    if not work:
        return {"scored": 0, "skipped": len(done)}
    truths, sizes, problems = truth_by_case(ctx.writer, {k[0] for k in work}, stage="localization")
    _put_problems(ctx, problems)
    bad = {p["image_id"] for p in problems}
    out = _Batches(ctx, len(work))
    for method, key in sorted({(k[2], k[3]) for k in work}):
        for stored in ctx.writer.iter_maps(mid, method, key):
            wanted = work.get((stored.image_id, stored.label, method, key), False)
            if wanted is False or stored.image_id in bad:
                continue
            masks = truths.get(stored.image_id, {})
            out.add(_map_rows(stored, key, wanted, masks, sizes, preds.loc[(stored.image_id, stored.label)]))
    out.flush()
    topped = sum(w is not None for w in work.values())
    return {"scored": out.n, **({"rescored_after_a_threshold_change": rescored} if rescored else {}),
            **({"metrics_added_to_scored_maps": topped} if topped else {})}


def _work(index: pd.DataFrame, missing: pd.DataFrame) -> dict:
    """``{(image_id, label, method, params_key): None}`` for the maps of ``index`` (every metric,
    every reader), and ``{reader: [metric, ...]}`` for the other maps of ``missing`` (those only)."""
    work: dict = dict.fromkeys(zip(index.image_id, index.label, index.method, index.params_key))
    cols = ["image_id", "label", "method", "params_key", "reader", "metric"]
    for img, label, method, key, reader, metric in missing[cols].itertuples(index=False, name=None):
        k = (img, label, method, key)
        if k in work and work[k] is None:
            continue
        work.setdefault(k, {}).setdefault(reader, []).append(metric)
    return work


def _map_rows(stored, key: str, wanted: dict | None, masks: dict, sizes: dict, p: pd.Series) -> list[dict]:
    """The localization rows of one stored map: against each reference reader, every metric with
    the map's fields (``wanted`` None), or the ``wanted[reader]`` metrics alone."""
    native = native_map(stored)
    size = sizes.get(stored.image_id, native.shape)
    prob = float(p["prob"])
    threshold = float(p["threshold"]) if pd.notna(p["threshold"]) else None
    rows = []
    for reader, mask in _reference_readers(masks, stored.label).items():
        if wanted is not None and reader not in wanted:
            continue
        only = None if wanted is None else wanted[reader]
        truth = mask if mask is not None else np.zeros(size, bool)
        scores = segment_and_score(native, truth, prob=prob, threshold=threshold, only=only).scores
        row = {"model_id": stored.model_id, "image_id": stored.image_id, "label": stored.label,
               "source": "explainer", "method": stored.method, "params_key": key, "reader": reader}
        if only is None:
            predicted = bool(p["predicted"]) if pd.notna(p["predicted"]) else None
            rows.append({**row, "prob": prob, "predicted": predicted, **scores})
        else:
            rows.append({**row, **{name: scores[name] for name in only}})
    return rows


class _Batches:
    """Localization rows on their way to the store, written every 500 and kept apart by their
    columns: a row of some metrics must not write NaN over the metrics it does not carry."""

    def __init__(self, ctx, total: int):
        self.ctx, self.total, self.n, self.rows = ctx, total, 0, {}

    def add(self, rows: list[dict]) -> None:
        for row in rows:
            self.rows.setdefault(tuple(row), []).append(row)
        self.n += 1
        if sum(map(len, self.rows.values())) >= 500:
            self.flush()
            self.ctx.maybe_publish()

    def flush(self) -> None:
        for rows in self.rows.values():
            self.ctx.writer.put_table("localization", pd.DataFrame(rows))
        self.rows = {}
        self.ctx.progress("localization metrics", self.n, self.total)


def _decision_codes(values) -> np.ndarray:
    """A decision column (True / False / missing) as 1.0 / 0.0 / -1.0, to compare two of them."""
    return pd.Series(values, dtype=object).map({True: 1.0, False: 0.0}).fillna(-1.0).to_numpy(float)


def _to_score(index: pd.DataFrame, done: pd.DataFrame, preds: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The maps of ``index`` without localization rows, and those whose rows were scored under another
    decision than the current thresholds give (a threshold chosen or changed since, e.g. a later run
    on the validation split or with ``--thresholds``): their ``predicted`` and ``iou_gated`` would be
    stale. Returns the maps to score and how many of them are re-scored."""
    if done.empty:
        return index, 0
    now = preds["predicted"].reindex(pd.MultiIndex.from_arrays([done.image_id, done.label]))
    stale = (_decision_codes(now.to_numpy()) != _decision_codes(done["predicted"].to_numpy())) & \
        (done["source"] == "explainer").to_numpy()
    keys = list(zip(done.image_id, done.label, done.method, done.params_key))
    current = {k for k, old in zip(keys, stale) if not old}
    redo = {k for k, old in zip(keys, stale) if old}
    wanted = [k not in current for k in zip(index.image_id, index.label, index.method, index.params_key)]
    index = index[wanted]
    return index, sum(k in redo for k in zip(index.image_id, index.label, index.method, index.params_key))


#: The option that names the cases whose baselines and second readers are scored (a recomputation's
#: sample); the baselines' random stream is drawn over every case all the same, so each scored case
#: gets the build's random map.
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
    return np.mean(
        [cv2.resize(m.astype(np.float32), grid[::-1], interpolation=cv2.INTER_AREA) for m in masks], axis=0
    )


@stage("baselines", reads=("annotations",), writes=("localization",), uses={"split": "split"},
       help="average-mask and random baselines (Arun et al.)")
def baseline_stage(ctx, *, split: str = "test", train_split: str = "train", seed: int = 0) -> dict:
    """Score the average training mask and a random map on every positive case of ``split``
    (``split=None``: every split but ``train_split``; the :data:`SCORED_IDS` option: of those cases,
    these only). Stored rows resume per (row, metric): when a metric was registered since, the
    baselines are recomputed (the same seed gives the same random maps) and only the missing scores
    are written."""
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
    _put_problems(ctx, problems)
    averages: dict[str, np.ndarray] = {}
    for label in ctx.model.spec.labels:
        masks = [m for img, t in truths.items() if split_of[img] == train_split
                 for (lab, r), m in t.items() if lab == label and r == REFERENCE]
        if masks:
            averages[label] = average_masks(masks)
    scored = [img for img in truths if (split_of[img] == split if split else split_of[img] != train_split)]
    rows = _baseline_rows(mid, scored, truths, sizes, averages, np.random.default_rng(seed),
                          ctx.options.get(SCORED_IDS))
    if rows:
        for frame in _only_missing(pd.DataFrame(rows), missing):
            ctx.writer.put_table("localization", frame)
    without = sorted(set(ctx.model.spec.labels) - set(averages) - {NO_FINDING})
    return {"cases": len(rows) // 2, "labels": sorted(averages),
            **({"metrics_added": sorted(set(missing.metric))} if missing is not None else {}),
            **({"no_training_masks": without} if without else {})}


def _baseline_rows(mid: str, scored: list[str], truths: dict, sizes: dict, averages: dict, rng,
                   only: set | None) -> list[dict]:
    """The baseline rows of every reference mask of the ``scored`` cases, each case's random map drawn
    from the one stream in their order; ``only`` (a set of image ids, or None): the cases whose rows
    are scored, the others' random maps drawn all the same, so that each scored map is the build's."""
    rows = []
    for img in scored:
        for (label, reader), mask in truths[img].items():
            if reader != REFERENCE or label not in averages or label == NO_FINDING:
                continue
            random_map = rng.random(sizes[img])
            if only is not None and img not in only:
                continue
            for name, m in (("average_mask", averages[label]), ("random", random_map)):
                rows.append({"model_id": mid, "image_id": img, "label": label, "source": "baseline",
                             "method": name, "params_key": params_key({}), "reader": reader,
                             **score_map(m, mask)})
    return rows


def _only_missing(rows: pd.DataFrame, missing: pd.DataFrame | None) -> list[pd.DataFrame]:
    """``rows`` whole (``missing`` None: nothing stored yet), else for each metric of ``missing``
    the rows it lacks, with their key and that metric alone (stored rows keep their other scores)."""
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
    """Score every second reader against the reference ("gt") as Saporta's human benchmark:
    IoU of the reader's mask, and hit = any of the reader's points inside the reference mask.
    Rows go to the localization table with source ``reader`` and the reader's name as method;
    each image at its own size (the :data:`SCORED_IDS` option: these images only)."""
    mid = ctx.model.spec.name
    ids = set(ctx.writer.images(dataset=ctx.dataset).image_id)
    ann = ctx.writer.annotations()
    ann = ann[ann.image_id.isin(ids)]
    others = sorted(set(ann.reader) - {REFERENCE, SHORTCUT_READER})
    if not others or not ctx.writer.table("localization", model_id=mid, source="reader").empty:
        return {"readers": others, "skipped": bool(others)}
    if ctx.options.get(SCORED_IDS) is not None:
        ann = ann[ann.image_id.isin(ctx.options[SCORED_IDS])]
    truths, sizes, problems = truth_by_case(ctx.writer, ann.image_id.unique(), stage="second reader")
    _put_problems(ctx, problems)
    ann = ann[ann.image_id.isin(set(truths))]
    by_reader = ann[ann.kind == "point"].groupby(["image_id", "label", "reader"])
    points = {k: g[["x", "y"]].to_numpy() for k, g in by_reader}  # one pass, not a filter per case
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
            rows.append(
                {
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
                }
            )
    if rows:
        ctx.writer.put_table("localization", pd.DataFrame(rows))
    return {"readers": others, "cases": len(rows)}


@stage("geometry", reads=("annotations",), writes=("geometry",),
       help="lesion instances, size, elongation and irrectangularity")
def geometry_stage(ctx) -> dict:
    """Geometric features of every ground-truth mask (all splits), by both dominance rules, each
    mask at its own image's size."""
    done = ctx.writer.table("geometry")
    imgs = ctx.writer.images(dataset=ctx.dataset)
    ann = ctx.writer.annotations()
    ann = ann[ann.image_id.isin(set(imgs.image_id))]
    if not done.empty and set(ann.image_id) <= set(done.image_id):  # only annotated images have rows
        return {"skipped": len(done)}
    truths, _, problems = truth_by_case(ctx.writer, ann.image_id.unique(), stage="geometry")
    _put_problems(ctx, problems)
    rows = []
    scored = ann[ann.image_id.isin(set(truths))]
    instances = scored.groupby(["image_id", "label", "reader"])["instance"].nunique()
    for (img, label, reader), n_inst in instances.items():
        mask = truths[img][(label, reader)]
        for rule in geometry.DOMINANT:
            rows.append({"image_id": img, "label": label, "reader": reader, "dominant": rule,
                         **geometry.features(mask, instances=int(n_inst), dominant=rule)})
    if rows:
        ctx.writer.put_table("geometry", pd.DataFrame(rows))
    return {"masks": len(rows) // len(geometry.DOMINANT), "images": len(truths),
            "not_scored": {"unknown size": int(ann.image_id.nunique() - len(truths) - len(problems)),
                           "annotation problems": len(problems)}}
