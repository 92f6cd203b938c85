"""Geometric features of a ground-truth lesion (Saporta et al. 2022, Fig. 3b and Methods).

* number of instances — the annotation's instance count when given (CheXlocalize counts
  polygons, so overlapping instances still count twice), else 8-connected components;
* size — mask area / image area;
* elongation — max(w, h) / min(w, h) of OpenCV's minimum-area rectangle of the dominant
  instance's contour;
* irrectangularity — 1 − contour area / rectangle area, for the same contour.

The dominant instance is the contour with the most points (``dominant="most_points"``,
CheXlocalize's ``compute_pathology_features.py`` with ``RETR_LIST`` and ``CHAIN_APPROX_NONE``)
or, as an option, the one of largest area. Empty mask: 0 instances, size 0, NaN shape
features; a degenerate rectangle (a one-pixel line) also gives NaN shape features.
"""

from __future__ import annotations

import cv2
import numpy as np

from ..errors import UnknownNameError
from ..validate import as_mask

__all__ = ["DOMINANT", "features"]

DOMINANT = ("most_points", "largest_area")


def features(mask, *, instances: int | None = None, dominant: str = "most_points") -> dict[str, float]:
    """The four geometric features of a ground-truth lesion mask (Saporta et al., Fig. 3b).

    Parameters
    ----------
    mask : (H, W) array_like of bool or 0/1
        Ground-truth mask of one pathology in one image.
    instances : int, optional
        The annotation's instance (polygon) count, CheXlocalize's source; default: 8-connected components.
    dominant : {"most_points", "largest_area"}
        Which contour the shape features describe (see Notes).

    Returns
    -------
    features : dict
        ``{"instances": int, "size", "elongation", "irrectangularity": float}``.

    Notes
    -----
    size = |mask| / (H · W). With (w, h) the sides of OpenCV's minimum-area rectangle of the dominant
    contour C: elongation = max(w, h) / min(w, h) and irrectangularity = 1 − area(C) / (w · h). The
    dominant contour has the most points (``"most_points"``, CheXlocalize's ``compute_pathology_features.py``
    with RETR_LIST and CHAIN_APPROX_NONE) or the largest area (``"largest_area"``). OpenCV traces contours
    through boundary pixel centres, so a 3 × 8 block is a 2 × 7 rectangle. Empty mask: ``instances`` 0 (or
    the given count), size 0, NaN shape features; a degenerate rectangle (one pixel, a one-pixel line) also
    gives NaN shape features.

    References
    ----------
    .. [1] Saporta A. et al. (2022) Benchmarking saliency methods for chest X-ray interpretation. Nat. Mach.
           Intell. doi:10.1038/s42256-022-00536-x

    Examples
    --------
    >>> m = np.zeros((10, 10), bool); m[2:5, 1:9] = True
    >>> f = features(m)
    >>> f["instances"], f["size"], f["elongation"], f["irrectangularity"]
    (1, 0.24, 3.5, 0.0)
    >>> features(np.zeros((4, 4)))
    {'instances': 0, 'size': 0.0, 'elongation': nan, 'irrectangularity': nan}
    >>> line = np.zeros((5, 5)); line[2] = 1
    >>> features(line)["elongation"]
    nan
    """
    if dominant not in DOMINANT:
        raise UnknownNameError("dominant instance rule", dominant, DOMINANT)
    m = as_mask(mask)
    u8 = m.astype(np.uint8)
    size = float(u8.sum() / u8.size)
    if not u8.any():
        return {"instances": 0 if instances is None else int(instances), "size": 0.0,
                "elongation": float("nan"), "irrectangularity": float("nan")}
    if instances is None:
        instances = cv2.connectedComponents(u8, connectivity=8)[0] - 1
    contours, _ = cv2.findContours(u8.copy(), cv2.RETR_LIST, cv2.CHAIN_APPROX_NONE)
    key = (lambda c: len(c)) if dominant == "most_points" else cv2.contourArea
    cnt = max(contours, key=key)
    (_, _), (w, h), _ = cv2.minAreaRect(cnt)
    if min(w, h) <= 0:
        elongation = irrect = float("nan")
    else:
        elongation = float(max(w, h) / min(w, h))
        irrect = float(1.0 - cv2.contourArea(cnt) / (w * h))
    return {"instances": int(instances), "size": size, "elongation": elongation, "irrectangularity": irrect}
