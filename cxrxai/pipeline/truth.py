"""The ground truth the scoring stages read: each case's masks at its image's own size.

One place decides which reader is the reference standard, how an image's size is known, and
which images are left out (annotations that do not fit them), so that the localization, baseline,
second-reader and geometry stages score against the same masks.
"""

from __future__ import annotations

import pandas as pd

from ..data.cases import masks_by_case
from ..data.demo import SHORTCUT_READER

__all__ = ["REFERENCE", "image_sizes", "put_problems", "reference_readers", "truth_by_case"]

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
    first = masks[["image_id", "mask_height", "mask_width"]].drop_duplicates("image_id")
    for img, h, w in first.itertuples(index=False):
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
    problems = [
        {"stage": stage, "image_id": img, "problem": f"{err}; image not scored"}
        for img, err in bad.items()
    ]
    return truths, sizes, problems


def put_problems(ctx, rows: list[dict]) -> None:
    """Write the problem rows of :func:`truth_by_case` (the images a stage left out)."""
    if rows:
        ctx.writer.put_table("problems", pd.DataFrame(rows).assign(dataset=ctx.dataset))


def reference_readers(masks: dict, label: str) -> dict:
    """The masks one map is scored against: the reference reader's, else (a dataset whose
    readers are all peers) each reader's; a case without any is scored against an empty mask."""
    own = {r: m for (lab, r), m in masks.items() if lab == label and r != SHORTCUT_READER}
    if REFERENCE in own:
        return {REFERENCE: own[REFERENCE]}
    return own or {REFERENCE: None}
