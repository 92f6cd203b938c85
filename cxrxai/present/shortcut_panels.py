"""The film panels of one case of the planted-shortcut analysis (:mod:`cxrxai.pipeline.shortcut`
stores its rows): the case re-rendered with its marker, each stored map, the lesion and the marker
zone as readers."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data.phantom import CaseSpec, PhantomConfig, render
from ..errors import ModelError
from ..metrics.shortcut import MARKER_ZONE, marker_zone

__all__ = ["shortcut_panels"]


def shortcut_panels(rows: pd.DataFrame, image_id: str, *, zone: float = MARKER_ZONE) -> list[dict]:
    """Film panels (see :func:`cxrxai.present.film.film_grid`) of one marked case: one per stored
    (role, explainer), the case re-rendered with its marker, the lesion as the reference reader
    and the marker zone as reader ``shortcut``; shortcut model first, explainers in stored order."""
    case_rows = rows[rows.image_id == image_id]
    if case_rows.empty:
        raise ModelError(f"no shortcut rows for case {image_id!r}")
    first = case_rows.iloc[0]
    case = render(CaseSpec.from_json(first.generator_key), PhantomConfig.from_json(first.phantom_config))
    masks = {"gt": case.mask(first.label), "shortcut": marker_zone(case.shortcut_mask, zone)}
    panels = []
    for r in case_rows.sort_values(["role", "method"], ascending=[False, True]).itertuples():
        side = int(r.thumb_size)
        panels.append(
            {
                "image": case.image,
                "saliency": np.asarray(r.thumb, np.float32).reshape(side, side),
                "masks": masks,
                "title": f"{r.method} · {r.role} ({r.model_id}) · p={r.prob:.2f}, "
                f"without marker {r.prob_without:.2f} · marker share {r.marker_share:.0%}",
            }
        )
    return panels
