"""The precompute stage that scores every stored map against its case's ground truth (per reader):
IoU (Otsu, true-positive and full conventions, and with the probability gate), hit, the thesis's
PLA, ROC AUC, PR AUC and AP. Only positive attributions count (the thesis), maps are upsampled
bilinearly to the image (CheXlocalize).

The stage computes only what its table lacks (resumable per map and metric, so a metric
registered after a build is scored into its store from the stored maps), and scores again the
maps whose decision changed with the thresholds. What the maps are compared against is scored by
:mod:`.references` (baselines, second readers); the ground truth itself by :mod:`.lesion_geometry`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..explain import native_map
from ..metrics.registry import segment_and_score
from .stages import stage
from .truth import put_problems, reference_readers, truth_by_case

__all__ = ["localization_stage"]


@stage("localization", reads=("maps", "annotations"), writes=("localization",),
       aliases=("localization (CAMs)", "sweep scores"),
       help="every stored map scored against ground truth")
def localization_stage(ctx) -> dict:
    """Score the model's stored maps against their cases' ground truth, resuming per (map, metric).

    A map without rows, or scored under another decision than the current thresholds give, gets
    every registered metric; a map whose rows lack some registered metrics (one registered since)
    gets those only. Maps are read from the store, never recomputed.
    """
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
    truths, sizes, problems = truth_by_case(
        ctx.writer, {k[0] for k in work}, stage="localization"
    )
    put_problems(ctx, problems)
    bad = {p["image_id"] for p in problems}
    out = _Batches(ctx, len(work))
    for method, key in sorted({(k[2], k[3]) for k in work}):
        for stored in ctx.writer.iter_maps(mid, method, key):
            wanted = work.get((stored.image_id, stored.label, method, key), False)
            if wanted is False or stored.image_id in bad:
                continue
            masks = truths.get(stored.image_id, {})
            pred = preds.loc[(stored.image_id, stored.label)]
            out.add(_map_rows(stored, key, wanted, masks, sizes, pred))
    out.flush()
    result = {"scored": out.n}
    if rescored:
        result["rescored_after_a_threshold_change"] = rescored
    topped = sum(w is not None for w in work.values())
    if topped:
        result["metrics_added_to_scored_maps"] = topped
    return result


def _work(index: pd.DataFrame, missing: pd.DataFrame) -> dict:
    """``{(image_id, label, method, params_key): None}`` for the maps of ``index`` (every metric,
    every reader), and ``{reader: [metric, ...]}`` for the other maps of ``missing`` (those
    only)."""
    work: dict = dict.fromkeys(_map_keys(index))
    cols = ["image_id", "label", "method", "params_key", "reader", "metric"]
    rows = missing[cols].itertuples(index=False, name=None)
    for img, label, method, key, reader, metric in rows:
        k = (img, label, method, key)
        if k in work and work[k] is None:
            continue
        work.setdefault(k, {}).setdefault(reader, []).append(metric)
    return work


def _map_keys(frame: pd.DataFrame):
    """The (image_id, label, method, params_key) of each row of ``frame``."""
    return zip(frame.image_id, frame.label, frame.method, frame.params_key)


def _map_rows(stored, key: str, wanted: dict | None, masks: dict, sizes: dict,
              p: pd.Series) -> list[dict]:
    """The localization rows of one stored map: against each reference reader, every metric with
    the map's fields (``wanted`` None), or the ``wanted[reader]`` metrics alone."""
    native = native_map(stored)
    size = sizes.get(stored.image_id, native.shape)
    prob = float(p["prob"])
    threshold = float(p["threshold"]) if pd.notna(p["threshold"]) else None
    rows = []
    for reader, mask in reference_readers(masks, stored.label).items():
        if wanted is not None and reader not in wanted:
            continue
        only = None if wanted is None else wanted[reader]
        truth = mask if mask is not None else np.zeros(size, bool)
        scored = segment_and_score(native, truth, prob=prob, threshold=threshold, only=only)
        scores = scored.scores
        row = {
            "model_id": stored.model_id,
            "image_id": stored.image_id,
            "label": stored.label,
            "source": "explainer",
            "method": stored.method,
            "params_key": key,
            "reader": reader,
        }
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
        self.ctx = ctx
        self.total = total
        self.n = 0
        self.rows: dict[tuple, list[dict]] = {}

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
    codes = pd.Series(values, dtype=object).map({True: 1.0, False: 0.0})
    return codes.fillna(-1.0).to_numpy(float)


def _to_score(index: pd.DataFrame, done: pd.DataFrame,
              preds: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The maps of ``index`` without localization rows, and those whose rows were scored under
    another decision than the current thresholds give (a threshold chosen or changed since, e.g.
    a later run on the validation split or with ``--thresholds``): their ``predicted`` and
    ``iou_gated`` would be stale. Returns the maps to score and how many of them are re-scored."""
    if done.empty:
        return index, 0
    now = preds["predicted"].reindex(pd.MultiIndex.from_arrays([done.image_id, done.label]))
    changed = _decision_codes(now.to_numpy()) != _decision_codes(done["predicted"].to_numpy())
    stale = changed & (done["source"] == "explainer").to_numpy()
    keys = list(_map_keys(done))
    current = {k for k, old in zip(keys, stale) if not old}
    redo = {k for k, old in zip(keys, stale) if old}
    wanted = [k not in current for k in _map_keys(index)]
    index = index[wanted]
    return index, sum(k in redo for k in _map_keys(index))
