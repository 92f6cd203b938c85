"""The precompute stage that describes the ground truth itself: lesion instances, size,
elongation and irrectangularity of every mask (the thesis's geometry), with no model involved."""

from __future__ import annotations

import pandas as pd

from ..metrics import geometry
from .stages import stage
from .truth import put_problems, truth_by_case

__all__ = ["geometry_stage"]


@stage("geometry", reads=("annotations",), writes=("geometry",),
       help="lesion instances, size, elongation and irrectangularity")
def geometry_stage(ctx) -> dict:
    """Geometric features of every ground-truth mask (all splits), by both dominance rules, each
    mask at its own image's size."""
    done = ctx.writer.table("geometry")
    imgs = ctx.writer.images(dataset=ctx.dataset)
    ann = ctx.writer.annotations()
    ann = ann[ann.image_id.isin(set(imgs.image_id))]
    # only annotated images have rows
    if not done.empty and set(ann.image_id) <= set(done.image_id):
        return {"skipped": len(done)}
    truths, _, problems = truth_by_case(ctx.writer, ann.image_id.unique(), stage="geometry")
    put_problems(ctx, problems)
    rows = []
    scored = ann[ann.image_id.isin(set(truths))]
    instances = scored.groupby(["image_id", "label", "reader"])["instance"].nunique()
    for (img, label, reader), n_inst in instances.items():
        mask = truths[img][(label, reader)]
        for rule in geometry.DOMINANT:
            features = geometry.features(mask, instances=int(n_inst), dominant=rule)
            rows.append({
                "image_id": img,
                "label": label,
                "reader": reader,
                "dominant": rule,
                **features,
            })
    if rows:
        ctx.writer.put_table("geometry", pd.DataFrame(rows))
    unknown_size = int(ann.image_id.nunique() - len(truths) - len(problems))
    return {
        "masks": len(rows) // len(geometry.DOMINANT),
        "images": len(truths),
        "not_scored": {"unknown size": unknown_size, "annotation problems": len(problems)},
    }
