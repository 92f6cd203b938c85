"""Which (image, finding) pairs a map stage explains: the split's positives (or every pair), a
deterministic per-finding sample of them, and the occlusion sweep's fixed set of cases."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from ..labels import NO_FINDING

__all__ = [
    "available",
    "evaluated_positives",
    "evaluated_split",
    "image_rank",
    "positive_pairs",
    "sample_pairs",
    "sweep_cases",
]


def positive_pairs(
    writer, dataset: str, split: str | None, labels, *, positive_only: bool = True
) -> pd.DataFrame:
    """(image_id, label) pairs of the split (``None``: every split; findings only), by default those
    whose ground truth is positive; ``positive_only=False`` gives every image × finding (the
    full-dataset view)."""
    imgs = writer.images(dataset=dataset, split=split)[["image_id"]]
    wide = writer.labels_wide(dataset=dataset)
    long = wide.reset_index().melt(id_vars="image_id", var_name="label", value_name="value")
    keep = long["label"].isin(labels) & (long["label"] != NO_FINDING)
    if positive_only:
        keep &= long["value"] == 1
    return (
        long[keep]
        .merge(imgs, on="image_id")[["image_id", "label"]]
        .sort_values(["label", "image_id"])
        .reset_index(drop=True)
    )


def available(ctx, pairs: pd.DataFrame) -> pd.DataFrame:
    """Pairs whose image could be decoded (all of them for the demo)."""
    ids = ctx.options.get("image_ids")
    return pairs if ids is None else pairs[pairs.image_id.isin(set(ids))]


def evaluated_split(ctx) -> str | None:
    """The split a build evaluates (``ctx.options["split"]``; the demo's test split by default)."""
    return ctx.options.get("split", "test")


def evaluated_positives(ctx) -> pd.DataFrame:
    """The positive (image, finding) pairs of :func:`evaluated_split` whose image could be decoded:
    what the trust and fidelity stages draw their cases from."""
    pairs = positive_pairs(ctx.writer, ctx.dataset, evaluated_split(ctx), ctx.model.spec.labels)
    return available(ctx, pairs)


def image_rank(image_ids, seed: int) -> np.ndarray:
    """Each image's place in one seeded random order of all images: a 64-bit hash of (seed, image id),
    so an image keeps its place when others are added to or dropped from the dataset (a sample drawn
    from the order stays the same where it can)."""
    return np.array([int.from_bytes(hashlib.blake2b(f"{seed}\x00{i}".encode(), digest_size=8).digest(), "big")
                     for i in image_ids], dtype=np.uint64)


def _order(pairs: pd.DataFrame, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``pairs`` sorted by label, then by :func:`image_rank` of their image (then its
    id), and each one's place among its label's pairs. In NumPy: pandas' sort and group-by took
    2.6 ms a call on a handful of pairs, and the build and its tests draw thousands of samples."""
    ids, labels = pairs["image_id"].to_numpy().astype(str), pairs["label"].to_numpy().astype(str)
    order = np.lexsort((ids, image_rank(ids, seed), labels))
    steps = np.arange(len(order))
    first = np.r_[True, labels[order][1:] != labels[order][:-1]]
    return order, steps - np.maximum.accumulate(np.where(first, steps, 0))


def _ordered(pairs: pd.DataFrame, seed: int) -> pd.DataFrame:
    """``pairs`` in :func:`_order`'s order."""
    return pairs.iloc[_order(pairs, seed)[0]]


def sample_pairs(pairs: pd.DataFrame, per_label: int | None, seed: int) -> pd.DataFrame:
    """``per_label`` (image_id, label) pairs of each label: the first of its pairs in one seeded random
    order of the images (:func:`image_rank`), ``None``: every pair.

    For each label this is a uniform random sample of its pairs, as independent draws would be, but
    the labels share one order: an image drawn for one finding is drawn for its other findings too
    whenever they still need cases, so methods that explain every output of an image in one
    computation (occlusion) cost fewer images (the demo's 30 per finding, seed 0: 148 test images
    instead of 196 with a draw per finding; 10 per finding: 52 instead of 71), and a smaller sample
    is contained in a larger one (the build grows its evidence in rounds without discarding a case)."""
    if per_label is None or pairs.empty:
        return pairs
    order, place = _order(pairs, seed)
    chosen = pairs.iloc[order[place < per_label]][["image_id", "label"]]
    ids, labels = chosen["image_id"].to_numpy().astype(str), chosen["label"].to_numpy().astype(str)
    return chosen.iloc[np.lexsort((ids, labels))].reset_index(drop=True)


def sweep_cases(pairs: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """The sweep's one fixed set of ``n`` positive pairs shared by every patch/stride setting, each on
    its own image (the sweep's intervals resample cases, which must not share a film): findings take
    turns, each its next pair in the image order of :func:`sample_pairs` whose image no other case
    has, so every finding has a case before any has a second, and a smaller set is the start of a
    larger one."""
    order = _ordered(pairs, seed)
    queues = {lab: list(g.image_id) for lab, g in order.groupby("label", sort=True)}
    used, picks = set(), []
    while len(picks) < n and any(queues.values()):
        for lab, queue in queues.items():
            while queue and queue[0] in used:
                queue.pop(0)
            if queue and len(picks) < n:
                used.add(queue[0])
                picks.append((queue.pop(0), lab))
    return (
        pd.DataFrame(picks, columns=["image_id", "label"])
        .sort_values(["label", "image_id"])
        .reset_index(drop=True)
    )
