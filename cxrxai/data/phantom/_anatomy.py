"""Anatomy of a phantom frontal chest radiograph (PA or AP), as density layers and masks.

Everything is drawn in a thorax frame (see :class:`~cxrxai.data._raster.Frame`) and summed as
*density* (attenuation along the ray, arbitrary units, air = 0); :mod:`cxrxai.data.phantom`
turns density into a displayed radiograph. Appearance depends on the patient:

* sex — body and thorax width; breast shadows over the lower lung zones in women
  (:func:`breast_layer`), which add density and quantum noise there;
* age — thorax size in children; heart size (cardiothoracic ratio rises ~0.1 % a year after 20),
  aortic unfolding and bone demineralisation (faster in women) in the elderly; age-related
  reticular interstitial markings after ~45 (:func:`interstitial_layer`);
* view — AP films magnify the heart (~12 %) and are taken at lower inspiration.

Radiological conventions: the image is displayed as viewed from the front, so the patient's
right is on the image left; the right hemidiaphragm sits higher (liver), the gastric bubble lies
under the left one; the heart projects two-thirds to the patient's left.

One module though past 300 lines: every layer is drawn in the one thorax frame from one
:class:`Anatomy`, and the layers' densities and positions are tuned against each other; split,
they would still change together.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from .._raster import Frame, ellipse_mask, fill_polygon, grid, polyline, smooth_noise, soften

__all__ = ["Anatomy", "Habitus", "Pose", "build_anatomy", "sample_habitus", "sample_pose"]


@dataclass(frozen=True)
class Habitus:
    """What stays the same across a patient's images."""

    sex: str
    age: int
    thorax_scale: float  # 1.0 = average adult
    fat: float  # lateral soft tissue beyond the ribs, thorax units
    ctr: float  # cardiothoracic ratio on a PA film, before any cardiomegaly
    bone: float  # bone density factor (1 = young adult)
    breast: float  # breast size factor (0 = none)
    aorta: float  # aortic knob size factor
    interstitial: float  # amplitude of age-related reticular markings
    dome_right: float  # dome heights, fraction of lung height
    dome_left: float
    seed: int  # vessel tree and rib phase


@dataclass(frozen=True)
class Pose:
    """What changes from one image of a patient to the next."""

    view: str  # "PA" | "AP"
    shift_x: float  # pixels / size
    shift_y: float
    inspiration: float  # lung height factor
    exposure: float  # density → signal gain
    contrast: float
    noise: float  # quantum noise level (signal units at zero density)


@dataclass
class Anatomy:
    """Masks and density layers of one rendered thorax."""

    size: int
    frame: Frame
    habitus: Habitus
    pose: Pose
    ctr: float
    masks: dict[str, np.ndarray] = field(default_factory=dict)
    layers: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def lungs(self) -> np.ndarray:
        return self.masks["lung_right"] | self.masks["lung_left"]

    def lung(self, side: str) -> np.ndarray:
        return self.masks[f"lung_{side}"]


def sample_habitus(rng: np.random.Generator, sex: str, age: int) -> Habitus:
    """Draw a patient's constant anatomy from their sex and age."""
    growth = 0.74 + 0.26 * min(age, 18) / 18.0
    build = rng.normal(1.0, 0.035) * (1.03 if sex == "M" else 0.97)
    older = max(age - 50, 0)
    bone_loss = (0.009 if sex == "F" else 0.004) * older
    breast = (
        0.0
        if sex == "M" or age < 14
        else float(np.clip(rng.normal(1.0, 0.25), 0.45, 1.6)) * min(1.0, (age - 12) / 14)
    )
    return Habitus(
        sex=sex,
        age=int(age),
        thorax_scale=float(growth * build),
        fat=float(np.clip(rng.normal(0.14, 0.05), 0.04, 0.32)),
        ctr=float(np.clip(rng.normal(0.415 + 0.0011 * max(age - 20, 0), 0.025), 0.34, 0.52)),
        bone=float(np.clip(rng.normal(1.0 - bone_loss, 0.06), 0.45, 1.2)),
        breast=breast,
        aorta=float(1.0 + 0.012 * older + rng.normal(0, 0.1)),
        interstitial=float(0.012 + 0.075 * np.clip((age - 45) / 35, 0, 1)),
        dome_right=float(np.clip(rng.normal(0.20, 0.03), 0.12, 0.28)),
        dome_left=float(np.clip(rng.normal(0.18, 0.03), 0.10, 0.26)),
        seed=int(rng.integers(2**31)),
    )


def sample_pose(rng: np.random.Generator, view: str) -> Pose:
    """Draw positioning and exposure for one image."""
    ap = view == "AP"
    return Pose(
        view=view,
        shift_x=float(rng.normal(0, 0.018)),
        shift_y=float(rng.normal(0, 0.015)),
        inspiration=float(np.clip(rng.normal(0.92 if ap else 1.0, 0.035), 0.82, 1.08)),
        exposure=float(rng.normal(1.0, 0.07)),
        contrast=float(rng.normal(1.0, 0.06)),
        noise=float(np.clip(rng.normal(0.030 if ap else 0.020, 0.004), 0.010, 0.045)),
    )


def build_anatomy(habitus: Habitus, pose: Pose, size: int, *, ctr: float | None = None,
                  dome_raise: dict[str, float] | None = None) -> Anatomy:
    """Masks and density layers for a patient in a pose.

    ``ctr`` overrides the cardiothoracic ratio (cardiomegaly); ``dome_raise`` lifts a
    hemidiaphragm by a fraction of lung height (volume loss in lobar atelectasis).
    """
    scale = habitus.thorax_scale
    half_width = 0.38 * size * scale
    height = 0.64 * size * scale * pose.inspiration
    cx = size * (0.5 + pose.shift_x)
    apex_y = size * (0.11 + pose.shift_y) + 0.3 * (1.0 - scale) * size
    frame = Frame(size, cx, half_width, apex_y, height)
    raise_ = dome_raise or {}
    ctr_pa = habitus.ctr if ctr is None else ctr
    ctr_film = ctr_pa * (1.12 if pose.view == "AP" else 1.0)
    anat = Anatomy(size, frame, habitus, pose, ctr_film)
    m = anat.masks
    for side, sgn, base, dome in (
        ("right", -1, 0.975, habitus.dome_right),
        ("left", 1, 1.0, habitus.dome_left),
    ):
        m[f"cavity_{side}"] = fill_polygon(_hemithorax(frame, sgn, base - raise_.get(side, 0.0), dome), size)
    m["heart"] = _heart(frame, ctr_film) & ~_below_domes(m, frame)
    m["mediastinum"] = _mediastinum(frame, habitus.aorta) | m["heart"]
    for side in ("right", "left"):
        m[f"lung_{side}"] = m[f"cavity_{side}"] & ~m["mediastinum"]
    m["body"] = _body(frame, habitus.fat)
    m["abdomen"] = _below_domes(m, frame) & m["body"]
    anat.layers.update(_layers(anat))
    return anat


# --------------------------------------------------------------------------- geometry

def _hemithorax(frame: Frame, sgn: int, base: float, dome: float) -> np.ndarray:
    t = np.linspace(0.0, 1.0, 48)
    lateral = frame.px(sgn * (0.30 + 0.70 * np.sin(np.pi / 2 * t**0.55)), t * base)
    w = np.linspace(0.0, 1.0, 40)
    diaphragm = frame.px(sgn * (1.0 - 0.96 * w), base - dome * np.sin(np.pi * 0.75 * w) ** 0.8)
    a = np.linspace(0.0, np.pi / 2, 16)
    apex = frame.px(sgn * (0.04 + 0.26 * np.sin(a)), 0.16 * np.cos(a))
    medial = np.vstack([frame.px(sgn * 0.04, base - 0.7 * dome), apex])
    return np.vstack([lateral, diaphragm, medial])


def _below_domes(m: dict, frame: Frame) -> np.ndarray:
    """Everything under the diaphragm: rows below the cavity on each side of the midline."""
    size = frame.size
    out = np.zeros((size, size), bool)
    for side, cols in (("right", slice(0, int(frame.cx))), ("left", slice(int(frame.cx), size))):
        cav = m[f"cavity_{side}"][:, cols]
        filled = np.maximum.accumulate(cav, axis=0)  # at or below the first cavity row
        out[:, cols] = filled & ~cav
    # Between the cavities (below the heart) the abdomen starts at the cardiophrenic level.
    ys, xs = grid(size)
    out |= (np.abs(xs - frame.cx) < 0.12 * frame.half_width) & (ys > frame.apex_y + 0.88 * frame.height)
    return out


def _heart(frame: Frame, ctr: float) -> np.ndarray:
    width = 2.0 * ctr  # thorax units span 2 at the costophrenic level
    u_right, u_left = -0.33 * width, 0.67 * width
    center = frame.px((u_right + u_left) / 2, 0.76)[0]
    axes = (frame.lengths(du=(u_left - u_right) / 2), frame.lengths(dv=0.34))
    return ellipse_mask(frame.size, center, axes, angle_deg=-18.0)


def _mediastinum(frame: Frame, aorta: float) -> np.ndarray:
    v = np.linspace(-0.5, 0.62, 30)
    right = frame.px(-0.15 - 0.03 * np.clip((v - 0.35) / 0.3, 0, 1), v)
    left = frame.px(0.13 + 0.02 * np.clip((v - 0.3) / 0.3, 0, 1), v)[::-1]
    band = fill_polygon(np.vstack([right, left]), frame.size)
    knob_c = frame.px(0.15 + 0.02 * aorta, 0.22)[0]
    knob = ellipse_mask(frame.size, knob_c, (frame.lengths(du=0.085 * aorta), frame.lengths(dv=0.07 * aorta)))
    return band | knob


def _body(frame: Frame, fat: float) -> np.ndarray:
    v = np.linspace(-1.0, 2.2, 64)
    hw = 1.08 + fat + 0.9 * np.clip((0.05 - v) / 0.35, 0, 1) ** 1.5 - 0.05 * np.clip(v - 1.2, 0, 1)
    return fill_polygon(np.vstack([frame.px(-hw, v), frame.px(hw, v)[::-1]]), frame.size)


# --------------------------------------------------------------------------- density layers

def _layers(anat: Anatomy) -> dict[str, np.ndarray]:
    frame, m, hab = anat.frame, anat.masks, anat.habitus
    size = anat.size
    u, v = frame.uv()
    rng = np.random.default_rng(hab.seed)
    lungs = anat.lungs
    # Soft tissue: elliptic cross-section of the torso, thicker over the abdomen.
    hw = 1.10 + hab.fat
    soft = 0.95 * np.clip(1.0 - (u / hw) ** 2, 0, 1) ** 0.7 * soften(m["body"], 1.5)
    soft = soft + 0.22 * soften(m["abdomen"], 3.0) + 0.06 * soften(m["heart"], 2.0)
    # Lung air: deepest centrally, thinning towards the edges of the lung fields.
    dist = cv2.distanceTransform(lungs.astype(np.uint8), cv2.DIST_L2, 5)
    depth = 0.55 + 0.45 * (1.0 - np.exp(-dist / (0.12 * frame.half_width)))
    parenchyma = 1.0 + 0.04 * smooth_noise(rng, size, 3.0)
    air = 0.80 * soften(lungs, 1.8) * depth * parenchyma
    air += _trachea(frame) + _gastric_bubble(frame, m, rng)
    return {
        "soft": soft.astype(np.float32),
        "air": air.astype(np.float32),
        "bone": (hab.bone * _bones(frame, rng)).astype(np.float32),
        "vessels": _vessels(frame, lungs, rng),
        "texture": interstitial_layer(frame, lungs, hab.interstitial, rng),
        "breast": breast_layer(frame, hab.breast),
        "lesion": np.zeros((size, size), np.float32),
    }


def _trachea(frame: Frame) -> np.ndarray:
    layer = np.zeros((frame.size, frame.size), np.float32)
    width = frame.lengths(du=0.07)
    polyline(layer, frame.px([0.0, 0.0], [-0.6, 0.28]), width, 0.30)
    for sgn in (-1, 1):
        polyline(layer, frame.px([0.0, sgn * 0.09, sgn * 0.22], [0.28, 0.34, 0.42]), width * 0.7, 0.26)
    return soften(layer > 0, 1.0) * 0.28


def _gastric_bubble(frame: Frame, m: dict, rng: np.random.Generator) -> np.ndarray:
    if rng.random() < 0.25:
        return np.zeros((frame.size, frame.size), np.float32)
    c = frame.px(0.45 + rng.normal(0, 0.05), 1.10 + rng.normal(0, 0.03))[0]
    bubble = ellipse_mask(frame.size, c, (frame.lengths(du=0.16), frame.lengths(dv=0.06))) & m["abdomen"]
    bubble &= grid(frame.size)[0] < c[1] + 0.2 * frame.lengths(dv=0.06)  # air-fluid level
    return soften(bubble, 1.2) * 0.35


def _bones(frame: Frame, rng: np.random.Generator) -> np.ndarray:
    size = frame.size
    rib_h = frame.lengths(dv=0.045)
    phase = rng.normal(0, 0.01)
    posterior, anterior, clavicles = [], [], []
    for sgn in (-1, 1):
        for i in range(11):  # posterior ribs: from the spine, up a little, then down the lateral wall
            t = np.linspace(0.0, 1.0, 24)
            v0 = -0.14 + i * 0.100 + phase
            posterior.append(
                frame.px(sgn * (0.07 + 1.05 * t), v0 + 0.05 - 0.07 * np.sin(np.pi * 0.8 * t) + 0.24 * t**2)
            )
        for i in range(6):  # anterior ribs: fainter, from the lateral wall down towards the sternum
            t = np.linspace(0.0, 1.0, 16)
            v0 = 0.02 + i * 0.15 + phase
            anterior.append(frame.px(sgn * (0.98 - 0.62 * t), v0 + 0.20 * t - 0.03 * np.sin(np.pi * t)))
        t = np.linspace(0.0, 1.0, 24)  # clavicle with its S-curve
        clavicles.append(frame.px(sgn * (0.07 + 0.95 * t), 0.05 - 0.10 * t + 0.025 * np.sin(2 * np.pi * t)))
    layer = _bands(size, posterior, rib_h, 0.10, 0.05)
    layer += _bands(size, anterior, rib_h * 0.9, 0.035, 0.015)
    layer += _bands(size, clavicles, frame.lengths(dv=0.05), 0.16, 0.06)
    u, v = frame.uv()
    discs = 0.6 + 0.4 * (np.mod(v + 0.6, 0.1) > 0.018)
    layer += 0.12 * soften(np.abs(u) < 0.085, 1.0) * discs
    return layer


def _bands(size: int, curves: list[np.ndarray], thickness: float, body: float, cortex: float) -> np.ndarray:
    """Bones drawn as bands with brighter cortical margins (one raster for all curves)."""
    fill = np.zeros((size, size), np.float32)
    edge = np.zeros((size, size), np.float32)
    for pts in curves:
        polyline(fill, pts, thickness, 1.0)
        for off in (-0.5, 0.5):
            polyline(edge, pts + np.array([0.0, off * thickness]), 1, 1.0)
    return soften(fill > 0, 0.6) * body + edge * cortex


def _vessels(frame: Frame, lungs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Branching pulmonary vessels from each hilum, thinner and fainter towards the periphery.

    Six main branches per hilum fan out laterally (from -75° to +80°); each splits in two at
    18–34° for five generations, tapering by 0.72 and drifting downwards (fuller lower zones).
    """
    scale = frame.half_width / (0.38 * 256)
    starts, dirs = [], []
    for sgn, hilum in ((-1, (-0.24, 0.43)), (1, (0.26, 0.41))):
        a = np.deg2rad(np.linspace(-75, 80, 6) + rng.normal(0, 7, 6))
        dirs.append(np.stack([sgn * np.cos(a), np.sin(a)], 1))
        starts.append(np.repeat(frame.px(*hilum), 6, axis=0))
    start, direction = np.vstack(starts), np.vstack(dirs)
    width, length = 2.6 * scale, frame.half_width * 0.34
    canvas = np.zeros((frame.size, frame.size), np.uint8)
    for _generation in range(6):
        end = start + direction * length[:, None] if np.ndim(length) else start + direction * length
        value = int(255 * (0.025 + 0.05 * min(width / (2.6 * scale), 1.0)) / 0.075)
        p0, p1 = np.round(start * 16).astype(int), np.round(end * 16).astype(int)
        for a0, a1 in zip(p0.tolist(), p1.tolist()):  # 8-bit canvas: cv2 anti-aliases only 8-bit
            cv2.line(canvas, a0, a1, value, max(1, int(round(width))), cv2.LINE_AA, shift=4)
        n = len(start)
        turn = np.deg2rad(rng.uniform(18, 34, (n, 2))) * np.array([-1.0, 1.0])
        c, s_ = np.cos(turn), np.sin(turn)
        dx, dy = direction[:, 0:1], direction[:, 1:2]
        new = np.stack([c * dx - s_ * dy, s_ * dx + c * dy + 0.12], -1).reshape(-1, 2)
        direction = new / np.hypot(new[:, 0], new[:, 1])[:, None]
        start = np.repeat(end, 2, axis=0)
        length = np.repeat(np.broadcast_to(length, (n,)), 2) * rng.uniform(0.55, 0.8, 2 * n)
        width *= 0.72
    layer = canvas.astype(np.float32) * (0.075 / 255)
    return (soften(layer > 0, 0.5) * layer * lungs).astype(np.float32)


def breast_layer(frame: Frame, size_factor: float) -> np.ndarray:
    """Soft-tissue shadows over the lower lung zones, with a sharp rounded inferior margin."""
    out = np.zeros((frame.size, frame.size), np.float32)
    if size_factor <= 0:
        return out
    u, v = frame.uv()
    for sgn in (-1, 1):
        du, dv = (u - sgn * 0.55) / (0.52 * size_factor**0.5), (v - 0.66) / (0.30 * size_factor**0.5)
        r2 = du**2 + dv**2
        thickness = np.sqrt(np.clip(1 - r2, 0, 1)) * (0.55 + 0.45 * np.clip(dv + 0.5, 0, 1))
        out += thickness.astype(np.float32)
    return soften(out > 0, 0.8) * out * 0.30 * size_factor


def interstitial_layer(frame: Frame, lungs: np.ndarray, amplitude: float, rng) -> np.ndarray:
    """Reticular markings (fine network of lines), strongest at the bases and periphery."""
    fine = smooth_noise(rng, frame.size, 0.9) - smooth_noise(rng, frame.size, 2.2)
    lines = np.clip(1.0 - np.abs(fine) / 0.35, 0, 1)  # ridges of band-passed noise
    u, v = frame.uv()
    weight = np.clip(0.35 + 0.65 * v, 0, 1) * np.clip(0.4 + 0.6 * np.abs(u), 0, 1)
    return (amplitude * lines * weight * soften(lungs, 1.0)).astype(np.float32)
