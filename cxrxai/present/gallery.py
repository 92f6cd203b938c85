"""A gallery of cases as the explorer draws them, for a document: the film, the stored map, every
reader's outline and the scored Otsu contour, through the viewer's own functions (the film's pixels
:func:`cxrxai.data.cases.case_image`, the ground truth :func:`cxrxai.data.cases.case_masks`, the map
:func:`cxrxai.explain.native.native_map`, the contour and scores :func:`cxrxai.present.panel.score_panel`,
the picture :func:`cxrxai.present.film_png.film_png` at the viewer's opening settings), so what a
dossier shows is what the explorer shows and what was scored."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import cv2
import numpy as np
import pandas as pd

from ..data.cases import case_image, case_masks
from ..errors import CxrxaiError
from ..explain.native import native_map
from ..store import Store
from .film_png import film_png
from .panel import PanelState, reference_truth, score_panel

__all__ = ["GalleryCase", "gallery_picture", "png_data_uri"]

#: The widest picture a document embeds (a 3,000 px film would make a 10 MB file): shrunk, and said.
MAX_WIDTH = 480


@dataclass(frozen=True)
class GalleryCase:
    image_id: str
    label: str
    metric: str
    value: float
    picture: np.ndarray | None  # RGB; None when the case cannot be drawn (``why``)
    why: str = ""


def _truth(store: Store, image_id: str, label: str, row: dict) -> dict:
    ann = store.annotations(image_id=image_id)
    ann = ann[ann.label == label]
    masks = dict(case_masks(ann, int(row["height"]), int(row["width"])))
    return {"masks": {r: m for (lab, r), m in masks.items() if lab == label},
            "boxes": [(r.reader, (r.x, r.y, r.w, r.h)) for r in ann[ann.kind == "box"].itertuples()],
            "points": [(r.reader, (r.x, r.y)) for r in ann[ann.kind == "point"].itertuples()]}, masks


def gallery_picture(store: Store, model_id: str, image_id: str, label: str, method: str, params_key: str,
                    *, prob: float | None = None, threshold: float | None = None,
                    caption: str = "") -> np.ndarray:
    """One case's picture as the explorer's PNG export draws it (raises a :class:`CxrxaiError` saying
    why it cannot: the film unreadable, the map not stored at its own grid)."""
    row = store.image(image_id)
    datasets = store.datasets().set_index("dataset").to_dict("index")
    image = case_image(row, {"dataset": row["dataset"], **datasets[row["dataset"]]})
    stored = store.get_map(model_id, image_id, label, method, params_key)
    if stored is None:
        raise CxrxaiError(f"no stored {method} map of {image_id} · {label} (maps at the input's pixels are "
                          "recomputed by the explorer, not stored)")
    saliency = native_map(stored)
    shown, masks = _truth(store, image_id, label, row)
    state = PanelState(model_id, image_id, label, prob, threshold)
    score = score_panel(state, saliency, reference_truth(masks, label, image.shape))
    legend = (caption,) if caption else ()
    picture = film_png(image, saliency, **shown, segmentation=score.mask, legend=legend)
    if picture.shape[1] > MAX_WIDTH:
        f = MAX_WIDTH / picture.shape[1]
        picture = cv2.resize(picture, (MAX_WIDTH, round(picture.shape[0] * f)), interpolation=cv2.INTER_AREA)
    return picture


def png_data_uri(rgb: np.ndarray) -> str:
    """An RGB picture as a ``data:image/png;base64,…`` URI (a document that needs no other file)."""
    ok, buf = cv2.imencode(".png", cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR))
    if not ok:
        raise CxrxaiError("the picture could not be encoded as PNG")
    return "data:image/png;base64," + base64.b64encode(buf.tobytes()).decode("ascii")


def best_and_worst(cases: pd.DataFrame, metric: str, *, k: int = 1) -> pd.DataFrame:
    """Per finding, the ``k`` cases with the highest and the ``k`` with the lowest ``metric`` (ties by
    image id, so the same store picks the same cases), with a ``rank`` of "best" or "worst"; a case
    is shown once (a finding with one scored case has a best and no worst), a NaN score never."""
    order = ["label", metric, "image_id"]
    scored = cases.dropna(subset=[metric]).sort_values(order, ascending=[True, False, True])
    best = scored.groupby("label", sort=True).head(k).assign(rank="best")
    rest = scored.drop(index=best.index).sort_values(order, ascending=[True, True, True])
    worst = rest.groupby("label", sort=True).head(k).assign(rank="worst")
    return pd.concat([best, worst]).sort_values(["label", "rank"]).reset_index(drop=True)
