"""Model or method? Where an explainer puts its mass when a model has learned a planted shortcut.

Saporta et al. could not tell, on real data, whether a saliency map that misses the lesion shows
a model that looks elsewhere or a method that fails. A planted marker answers it: we know what
the model *uses* (its probability drop when the marker is removed from the same image,
:func:`reliance`) and where the marker is, so an explainer either shows the marker
(:func:`mass_shares`) on the model that relies on it and not on the control model, or it does not.

* **marker share**: fraction of the map's positive mass inside the marker zone (the marker
  dilated by ``zone`` × the image side: maps at CAM resolution cannot hit a 10-px ring exactly);
  its chance level is the zone's share of the image (``zone_area``), reported beside it.
* **peak on marker**: whether the map's maximum falls in the zone (the pointing game).
* **shows the shortcut**: the paired bootstrap CI of (marker share under the shortcut model −
  under the control), over the same cases, lies above 0, and so does the CI of (marker share −
  zone area) under the shortcut model: more than the control, and more than chance.
"""

from __future__ import annotations

import cv2
import numpy as np
import pandas as pd

from .. import stats
from ..errors import MetricError

__all__ = ["MARKER_ZONE", "mass_shares", "marker_zone", "reliance", "shortcut_summary"]

#: The marker zone's margin around the marker, a fraction of the image side (:func:`marker_zone`):
#: what the shortcut stage scores and its panels draw.
MARKER_ZONE = 0.04


def marker_zone(marker: np.ndarray, zone: float) -> np.ndarray:
    """The marker mask dilated by ``zone`` × its side (a disk structuring element)."""
    marker = np.asarray(marker, bool)
    if not marker.any():
        raise MetricError("the marker mask is empty: this case carries no shortcut marker")
    r = max(1, int(round(zone * max(marker.shape))))
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * r + 1, 2 * r + 1))
    return cv2.dilate(marker.astype(np.uint8), kernel).astype(bool)


def mass_shares(
    saliency: np.ndarray, zone: np.ndarray, lesion: np.ndarray | None = None
) -> dict[str, float | bool]:
    """Shares of ``saliency``'s positive mass in ``zone`` and ``lesion`` (same shape), their
    areas (chance levels) and whether the maximum lies in the zone. A map without positive mass
    has no shares (NaN)."""
    m = np.clip(np.asarray(saliency, np.float64), 0, None)
    if m.shape != zone.shape:
        raise MetricError(f"map {m.shape} and marker zone {zone.shape} differ in shape")
    total = m.sum()
    lesion = np.zeros_like(zone) if lesion is None else np.asarray(lesion, bool)
    out: dict[str, float | bool] = {"zone_area": float(zone.mean()), "lesion_area": float(lesion.mean())}
    if total <= 0 or not np.isfinite(total):
        return out | {"marker_share": float("nan"), "lesion_share": float("nan"), "peak_on_marker": False}
    peak = np.unravel_index(int(np.argmax(m)), m.shape)
    return out | {"marker_share": float(m[zone].sum() / total),
                  "lesion_share": float(m[lesion].sum() / total) if lesion.any() else float("nan"),
                  "peak_on_marker": bool(zone[peak])}


def reliance(rows: pd.DataFrame) -> pd.DataFrame:
    """Per model: how much the marker moves the label's probability on the same cases (mean and
    percentile-bootstrap CI of prob − prob_without), split by ground truth, with n."""
    one = rows.drop_duplicates(["model_id", "image_id", "label"])
    out = []
    for (model_id, role), g in one.groupby(["model_id", "role"], sort=False):
        for name, part in (
            ("all cases", g),
            ("positives", g[g.gt_positive]),
            ("negatives", g[~g.gt_positive]),
        ):
            d = (part.prob - part.prob_without).to_numpy(float)
            row = {"model_id": model_id, "role": role, "cases": name, "n": len(d),
                   "prob_with": float(part.prob.mean()) if len(d) else np.nan,
                   "prob_without": float(part.prob_without.mean()) if len(d) else np.nan,
                   "shift": float(d.mean()) if len(d) else np.nan, "lower": np.nan, "upper": np.nan}
            if len(d) >= stats.MIN_CI_N:
                b = stats.bootstrap_table(pd.DataFrame({"shift": d}), bounds="percentile").iloc[0]
                row.update(lower=float(b["lower"]), upper=float(b["upper"]))
            out.append(row)
    return pd.DataFrame(out)


def shortcut_summary(rows: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per explainer: marker share (mean, CI) and peak-on-marker rate under the shortcut model and
    the control, the paired difference of marker shares with its bootstrap CI, and a verdict."""
    if rows.empty:
        raise MetricError("no shortcut rows to summarise")
    out = []
    for (method, key), g in rows.groupby(["method", "params_key"], sort=True):
        by_role = {role: part.set_index("image_id") for role, part in g.groupby("role")}
        row: dict = {"method": method, "params_key": key}
        for role in ("shortcut", "control"):
            part = by_role.get(role, pd.DataFrame(columns=["marker_share", "peak_on_marker", "zone_area",
                                                           "lesion_share"]))
            v = part.marker_share.to_numpy(float)
            v = v[np.isfinite(v)]
            row.update(
                {
                    f"{role}_n": len(v),
                    f"{role}_share": float(v.mean()) if len(v) else np.nan,
                    f"{role}_peak": float(part.peak_on_marker.astype(float).mean()) if len(part) else np.nan,
                    f"{role}_lesion_share": float(np.nanmean(part.lesion_share))
                    if part.lesion_share.notna().any()
                    else np.nan,
                }
            )
        row["chance"] = float(g.zone_area.mean())
        # lower CI bound of (marker share − zone area) under the shortcut model
        row["above_chance_lower"] = np.nan
        mine = by_role.get("shortcut")
        if mine is not None:
            excess = (mine.marker_share - mine.zone_area).dropna().to_numpy(float)
            if len(excess) >= stats.MIN_CI_N:
                row["above_chance_lower"] = float(
                    stats.bootstrap_table(
                        pd.DataFrame({"e": excess}), n_boot=n_boot, seed=seed, bounds="percentile"
                    ).iloc[0]["lower"]
                )
        pair = pd.concat([by_role[r].marker_share.rename(r) for r in ("shortcut", "control") if r in by_role],
                         axis=1, join="inner").dropna() if len(by_role) == 2 else pd.DataFrame()
        row["pairs"] = len(pair)
        row["difference"] = row["lower"] = row["upper"] = np.nan
        if len(pair):
            d = (pair["shortcut"] - pair["control"]).to_numpy(float)
            row["difference"] = float(d.mean())
        if len(pair) >= stats.MIN_CI_N:
            b = stats.bootstrap_table(
                pd.DataFrame({"d": d}), n_boot=n_boot, seed=seed, bounds="percentile"
            ).iloc[0]
            row.update(lower=float(b["lower"]), upper=float(b["upper"]))
        row["verdict"] = _verdict(row)
        out.append(row)
    return pd.DataFrame(out)


def _verdict(row: dict) -> str:
    if row["pairs"] < stats.MIN_CI_N:
        return f"too few paired cases ({row['pairs']} < {stats.MIN_CI_N})"
    if row["lower"] > 0:
        if row["above_chance_lower"] > 0:
            return "shows the shortcut"
        return "more on the marker than the control, but no more than chance"
    if row["upper"] < 0:
        return "less on the marker under the shortcut model"
    return "does not show it"
