"""The eight NIH box findings, drawn into a phantom's density layers with exact instance masks.

Each drawer takes an :class:`~cxrxai.data.phantom._anatomy.Anatomy` and a generator, adds density to
``anat.layers`` and returns the binary mask of every instance (the ground truth). A lesion's mask
is its hard shape clipped to where anatomy says it must lie (lung fields; the heart for
cardiomegaly); its density is the same shape, blurred for ill-defined margins, so the mask is the
half-maximum contour of what is drawn. Sizes are in millimetres of a 27 cm adult lung height.

Radiological appearance, per finding:

* Atelectasis — plate-like (discoid) linear opacities in the lower zones, or a wedge of lobar
  collapse against the mediastinum with elevation of the hemidiaphragm (volume loss).
* Cardiomegaly — cardiothoracic ratio 0.55–0.70 (drawn by :func:`cardiomegaly_ctr` before the
  anatomy is built); the mask is the cardiac silhouette.
* Effusion — dependent fluid at the base: blunted costophrenic angle and a meniscus rising
  towards the lateral chest wall, obscuring the hemidiaphragm; bilateral = two instances.
* Infiltration — ill-defined, patchy, reticular opacities; 1–3 patches.
* Mass — a lobulated, well-defined opacity larger than 3 cm.
* Nodule — round opacities of 8–28 mm; 1–4 of them.
* Pneumonia — lobar or segmental consolidation with air bronchograms; bounded by the horizontal
  fissure when in the right upper lobe.
* Pneumothorax — a lucent apical/lateral rim without lung markings, outlined by the visceral
  pleural line; larger at the apex (air rises).
"""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np

from .._raster import fill_polygon, polyline, smooth_noise, soften
from ._anatomy import Anatomy

__all__ = ["DRAWERS", "atelectasis_volume_loss", "cardiomegaly_ctr"]

Drawer = Callable[..., list[np.ndarray]]  # (anat, rng, **plan) -> instance masks


def _mm(anat: Anatomy, mm: float) -> float:
    return mm * anat.frame.height / 270.0


def _place(anat: Anatomy, region: np.ndarray, margin: float, rng) -> np.ndarray:
    """A random pixel (x, y) at least ``margin`` pixels inside ``region``.

    Falls back to the deepest part of the region when nothing is that deep, and to the whole
    lung fields when the region is empty (e.g. a lobe filled by an earlier effusion).
    """
    for candidate in (region, anat.lungs, anat.masks["cavity_right"] | anat.masks["cavity_left"]):
        if candidate.any():
            break
    dist = cv2.distanceTransform(candidate.astype(np.uint8), cv2.DIST_L2, 5)
    ok = dist >= min(margin, max(float(dist.max()) * 0.8, 1.0))
    ys, xs = np.nonzero(ok)
    i = rng.choice(len(ys))
    return np.array([xs[i], ys[i]], float)


def _blob(size: int, center, radius: float, rng, lobulation: float, spikes: int = 0) -> np.ndarray:
    """A round shape whose radius is modulated by a few random harmonics."""
    t = np.linspace(0, 2 * np.pi, 96, endpoint=False)
    r = np.ones_like(t)
    for k in (2, 3, 5):
        r += lobulation / k * rng.normal() * np.cos(k * t + rng.uniform(0, 2 * np.pi))
    if spikes:
        r += 0.18 * np.clip(np.cos(spikes * t + rng.uniform(0, 6.3)), 0.6, 1) - 0.108
    pts = np.stack([center[0] + radius * r * np.cos(t), center[1] + radius * r * np.sin(t)], 1)
    return fill_polygon(pts, size)


def _sphere(mask: np.ndarray, edge: float) -> np.ndarray:
    """Thickness profile of a solid lesion: deepest at its centre, ~0.5 at the mask edge."""
    dist = cv2.distanceTransform(mask.astype(np.uint8), cv2.DIST_L2, 3)
    peak = max(float(dist.max()), 1.0)
    return soften(mask, edge) * (0.55 + 0.45 * np.sqrt(np.clip(dist / peak, 0, 1)))


def nodule(anat: Anatomy, rng, **plan) -> list[np.ndarray]:
    count = int(rng.choice([1, 2, 3, 4], p=[0.65, 0.18, 0.11, 0.06]))
    masks, taken = [], np.zeros((anat.size,) * 2, bool)
    for _ in range(count):
        radius = _mm(anat, float(np.exp(rng.uniform(np.log(8), np.log(28))))) / 2
        c = _place(
            anat,
            anat.lungs & ~cv2.dilate(taken.astype(np.uint8), np.ones((9, 9))).astype(bool),
            radius + 2,
            rng,
        )
        mask = _blob(anat.size, c, radius, rng, 0.08) & anat.lungs
        if not mask.any():
            continue
        anat.layers["lesion"] += rng.uniform(0.22, 0.38) * _sphere(mask, 0.7)
        masks.append(mask)
        taken |= mask
    return masks


def mass(anat: Anatomy, rng, **plan) -> list[np.ndarray]:
    radius = _mm(anat, rng.uniform(32, 70)) / 2
    c = _place(anat, anat.lungs, radius * 0.8, rng)
    mask = _blob(anat.size, c, radius, rng, 0.22, spikes=int(rng.choice([0, 7, 9]))) & anat.lungs
    anat.layers["lesion"] += rng.uniform(0.32, 0.5) * _sphere(mask, 1.0)
    return [mask]


def effusion(anat: Anatomy, rng, **plan) -> list[np.ndarray]:
    sides = [["right"], ["left"], ["right", "left"]][int(rng.choice(3, p=[0.4, 0.3, 0.3]))]
    u, v = anat.frame.uv()
    masks = []
    for side in sides:
        cavity = anat.masks[f"cavity_{side}"]
        base = np.nonzero(cavity.any(axis=1))[0].max()
        level = (base - anat.frame.apex_y) / anat.frame.height  # lowest point, thorax units
        depth = rng.uniform(0.05, 0.42)  # from costophrenic blunting to a large effusion
        rise = rng.uniform(0.10, 0.22) * (0.5 + depth)
        surface = level - depth - rise * np.clip(np.abs(u) - 0.2, 0, None) ** 1.6
        mask = cavity & (v > surface) & ~anat.masks["mediastinum"]
        if not mask.any():
            continue
        thickness = np.clip((v - surface) / (depth + 1e-3), 0, 1)
        anat.layers["lesion"] += rng.uniform(0.45, 0.65) * soften(mask, 1.4) * (0.6 + 0.4 * thickness)
        anat.layers["air"] *= 1.0 - 0.7 * soften(mask, 1.4)
        masks.append(mask)
    return masks


def infiltration(anat: Anatomy, rng, **plan) -> list[np.ndarray]:
    count = int(rng.choice([1, 2, 3], p=[0.5, 0.3, 0.2]))
    masks = []
    for _ in range(count):
        radius = _mm(anat, rng.uniform(35, 80)) / 2
        c = _place(anat, anat.lungs, radius * 0.5, rng)
        field = smooth_noise(rng, anat.size, radius / 3.5)
        yy, xx = np.mgrid[: anat.size, : anat.size]
        envelope = 1.0 - np.hypot(xx - c[0], yy - c[1]) / radius
        mask = (envelope + 0.45 * field > 0.25) & anat.lungs
        mask = _largest_component(mask)
        if mask.sum() < 6:
            continue
        reticular = np.clip(1.0 - np.abs(smooth_noise(rng, anat.size, 1.0)) / 0.6, 0, 1)
        anat.layers["lesion"] += rng.uniform(0.16, 0.28) * soften(mask, 2.2) * (0.55 + 0.45 * reticular)
        masks.append(mask)
    return masks


def pneumonia(anat: Anatomy, rng, **plan) -> list[np.ndarray]:
    u, v = anat.frame.uv()
    zones = {  # lobar territories as thorax-frame predicates
        "RUL": (u < 0) & (v < 0.40), "RML": (u < 0) & (v >= 0.40) & (v < 0.68),
        "RLL": (u < 0) & (v >= 0.60), "LUL": (u > 0) & (v < 0.55), "LLL": (u > 0) & (v >= 0.50),
    }
    name = str(rng.choice(list(zones)))
    zone = zones[name] & anat.lungs
    radius = _mm(anat, rng.uniform(60, 110)) / 2
    c = _place(anat, zone, radius * 0.3, rng)
    field = smooth_noise(rng, anat.size, radius / 3)
    yy, xx = np.mgrid[: anat.size, : anat.size]
    mask = _largest_component(((1.0 - np.hypot(xx - c[0], yy - c[1]) / radius) + 0.3 * field > 0.2) & zone)
    if mask.sum() < 6:
        mask = zone & (np.hypot(xx - c[0], yy - c[1]) < radius)
    # Sharp edge along the horizontal fissure, hazy elsewhere.
    density = soften(mask, 0.6 if name == "RUL" else 2.5) * rng.uniform(0.42, 0.62)
    bronchi = np.zeros_like(density)
    for _ in range(3):
        start = c + rng.normal(0, radius * 0.2, 2)
        end = start + rng.normal(0, radius * 0.6, 2)
        polyline(bronchi, np.vstack([start, (start + end) / 2 + rng.normal(0, 2, 2), end]), 1, 0.22)
    anat.layers["lesion"] += density - bronchi * mask
    return [mask]


def pneumothorax(anat: Anatomy, rng, **plan) -> list[np.ndarray]:
    side = "right" if rng.random() < 0.5 else "left"
    cavity, lung = anat.masks[f"cavity_{side}"], anat.lung(side)
    u, v = anat.frame.uv()
    # Distance from the apical and lateral chest wall only (not the diaphragm or mediastinum).
    wall = cavity & ~cv2.erode(cavity.astype(np.uint8), np.ones((3, 3))).astype(bool)
    wall &= (v < 0.85) & (np.abs(u) > 0.2)
    dist = cv2.distanceTransform((~wall).astype(np.uint8), cv2.DIST_L2, 5)
    rim = max(rng.uniform(0.05, 0.30) * anat.frame.half_width, 3.0)
    taper = np.clip(1.25 - 0.9 * v, 0.25, 1.25)  # air collects at the apex
    mask = lung & (dist < rim * taper) & (v < 0.95)
    mask = _largest_component(mask)
    anat.layers["vessels"] *= ~mask
    anat.layers["texture"] *= ~mask
    anat.layers["air"] += 0.10 * soften(mask, 0.8)
    line = mask & ~cv2.erode(mask.astype(np.uint8), np.ones((3, 3))).astype(bool) & ~wall
    line &= cv2.erode(lung.astype(np.uint8), np.ones((5, 5))).astype(bool)
    anat.layers["lesion"] += 0.16 * soften(line, 0.5) + 0.05 * soften(lung & ~mask, 2.0)
    return [mask]


def atelectasis(anat: Anatomy, rng, *, side: str, kind: str) -> list[np.ndarray]:
    lung = anat.lung(side) if anat.lung(side).sum() >= 50 else anat.lungs
    if kind == "lobar":
        mask = _lobar_collapse(anat, rng, lung, side)
        if mask is not None:
            return [mask]
        # Too little lung beside the mediastinum: fall back to plate-like atelectasis.
    return _plate_atelectasis(anat, rng, lung)


def _lobar_collapse(anat: Anatomy, rng, lung: np.ndarray, side: str) -> np.ndarray | None:
    """Wedge of collapsed lower lobe against the cardiac/mediastinal border, apex at the hilum;
    None (nothing drawn) when it would cover under 20 pixels of lung."""
    rows = np.nonzero(lung.any(axis=1))[0]
    row = int(rows[int(0.85 * (len(rows) - 1))])
    cols = np.nonzero(lung[row])[0]
    medial = cols.max() if side == "right" else cols.min()
    lateral = cols.min() if side == "right" else cols.max()
    base_med = np.array([medial, row + 4.0])
    base_lat = np.array([medial + rng.uniform(0.35, 0.6) * (lateral - medial), row + 4.0])
    hilum_row = rows[int(rng.uniform(0.40, 0.55) * (len(rows) - 1))]
    apex = np.array([medial + 0.15 * (lateral - medial), float(hilum_row)])
    mask = fill_polygon(np.vstack([apex, base_lat, base_med]), anat.size) & lung
    if mask.sum() < 20:
        return None
    anat.layers["lesion"] += rng.uniform(0.35, 0.5) * soften(mask, 1.5)
    return mask


def _plate_atelectasis(anat: Anatomy, rng, lung: np.ndarray) -> list[np.ndarray]:
    """One or two thin bands across the lung base (plate-like atelectasis)."""
    _u, v = anat.frame.uv()
    masks, wanted = [], int(rng.choice([1, 2], p=[0.7, 0.3]))
    zone = lung & (v > 0.55) & (v < 0.92)
    best = None
    for attempt in range(12):
        if len(masks) == wanted:
            break
        c = _place(anat, zone, 3, rng)
        # Shorter bands after failed tries, so a narrow lung base still takes one.
        length = anat.frame.half_width * rng.uniform(0.25, 0.55) * (0.85 ** attempt)
        thick = _mm(anat, rng.uniform(4, 10))
        ang = np.deg2rad(rng.uniform(-18, 18))
        d = np.array([np.cos(ang), np.sin(ang)])
        n = np.array([-d[1], d[0]])
        pts = [c - d * length / 2 - n * thick / 2, c + d * length / 2 - n * thick / 3,
               c + d * length / 2 + n * thick / 3, c - d * length / 2 + n * thick / 2]
        mask = fill_polygon(np.array(pts), anat.size) & lung & ~sum(masks, np.zeros_like(lung))
        if best is None or mask.sum() > best.sum():
            best = mask
        if mask.sum() < 0.5 * length * thick:  # mostly outside the lung: try elsewhere
            continue
        anat.layers["lesion"] += rng.uniform(0.30, 0.45) * soften(mask, 0.9)
        masks.append(mask)
    if not masks and best is not None and best.sum() >= 4:
        anat.layers["lesion"] += rng.uniform(0.30, 0.45) * soften(best, 0.9)
        masks.append(best)
    return masks


def cardiomegaly(anat: Anatomy, rng, **plan) -> list[np.ndarray]:
    """The anatomy was built with an enlarged heart; the instance is the cardiac silhouette."""
    return [anat.masks["heart"].copy()]


def cardiomegaly_ctr(rng) -> float:
    """Cardiothoracic ratio (PA) of an enlarged heart."""
    return float(rng.uniform(0.55, 0.70))


def atelectasis_volume_loss(rng) -> tuple[str, str, float]:
    """(side, kind, hemidiaphragm elevation) of an atelectasis, drawn before the anatomy."""
    side = "right" if rng.random() < 0.55 else "left"
    kind = "lobar" if rng.random() < 0.35 else "plate"
    return side, kind, (rng.uniform(0.04, 0.09) if kind == "lobar" else 0.0)


def _largest_component(mask: np.ndarray) -> np.ndarray:
    n, lab, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    if n <= 2:
        return mask.astype(bool)
    return lab == 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))


DRAWERS: dict[str, Drawer] = {
    "Atelectasis": atelectasis,
    "Cardiomegaly": cardiomegaly,
    "Effusion": effusion,
    "Infiltration": infiltration,
    "Mass": mass,
    "Nodule": nodule,
    "Pneumonia": pneumonia,
    "Pneumothorax": pneumothorax,
}
