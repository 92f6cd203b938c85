"""Annotation boxes checked against the decoded image's size (clipped or dropped, with a problem row)."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["clip_boxes"]


def clip_boxes(
    annotations: pd.DataFrame, sizes: dict[str, tuple[int, int]]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Boxes checked against each image's decoded ``(height, width)``: one crossing the edge is
    clipped to the image, one lying wholly outside is dropped, each with a problem row
    (file, row, image id, what was done). Other annotations, and boxes of images of unknown
    size, pass unchanged. Returns ``(annotations, problems)``.

    >>> ann = pd.DataFrame({"image_id": ["a", "a"], "label": "Mass", "kind": "box",
    ...                     "x": [90.0, 200.0], "y": [10.0, 10.0], "w": [20.0, 5.0], "h": [5.0, 5.0]})
    >>> kept, problems = clip_boxes(ann, {"a": (50, 100)})
    >>> kept[["x", "w"]].values.tolist(), list(problems.problem.str.split(";").str[1])
    ([[90.0, 10.0]], [' clipped', ' annotation skipped'])
    """
    empty = pd.DataFrame(columns=["file", "row", "image_id", "problem"])
    if annotations.empty or not sizes:
        return annotations, empty
    ann = annotations.reset_index(drop=True)
    h = ann["image_id"].map({i: s[0] for i, s in sizes.items()})
    w = ann["image_id"].map({i: s[1] for i, s in sizes.items()})
    box = (ann["kind"] == "box") & h.notna()
    x0, y0 = ann["x"].clip(lower=0), ann["y"].clip(lower=0)
    x1, y1 = np.minimum(ann["x"] + ann["w"], w), np.minimum(ann["y"] + ann["h"], h)
    outside = box & ((x1 <= x0) | (y1 <= y0))
    crossing = box & ~outside & ((x0 != ann["x"]) | (y0 != ann["y"]) | (x1 != ann["x"] + ann["w"])
                                 | (y1 != ann["y"] + ann["h"]))
    rows = []
    for i in np.flatnonzero(crossing | outside):
        what = "annotation skipped" if outside.iloc[i] else "clipped"
        where = "lies outside" if outside.iloc[i] else "crosses the edge of"
        rows.append(
            {
                "file": None,
                "row": None,
                "image_id": ann.at[i, "image_id"],
                "problem": f"{ann.at[i, 'label']} box {tuple(float(ann.at[i, c]) for c in 'xywh')} "
                f"{where} the {int(w.iloc[i])}×{int(h.iloc[i])} image; {what}",
            }
        )
    ann.loc[crossing, "x"], ann.loc[crossing, "y"] = x0[crossing], y0[crossing]
    ann.loc[crossing, "w"], ann.loc[crossing, "h"] = (x1 - x0)[crossing], (y1 - y0)[crossing]
    return ann[~outside].reset_index(drop=True), pd.DataFrame(rows, columns=empty.columns)
