"""The demo world: deterministic phantom chest radiographs with exact ground truth.

Two steps, both deterministic (seed in, identical pixels out):

* :func:`sample_cohort` draws the cohort — patients with sex and age, several images each, a
  view per image, the findings of each image, and a patient-level train/validation/test split;
* :func:`render` draws one image from its :class:`CaseSpec`: anatomy (``_anatomy``), findings
  with one exact mask per instance (``_findings``), exposure and quantum noise, an optional
  laterality marker and an optional planted shortcut.

Modelled on NIH ChestX-ray14 (numbers in ``nih_stats.json``, see :mod:`.nih_stats`): sex ratio
(56.5 % male), 5-year age histograms per sex, the AP-view share per age bin, images per
patient, and the joint distribution of the eight box findings (so co-occurrence is NIH's).
Because rare findings would leave too few positives to learn from, each finding's weight is
raised until its prevalence reaches ``min_prevalence`` (:func:`enrichment_weights`); relative
co-occurrence is kept.

Findings are drawn independently of sex and age on purpose: any subgroup gap a model shows on
the demo then comes from image content alone. The mechanisms (documented in ``_anatomy``):

* breast shadows (women) add density and quantum noise over the lower zones → lower
  conspicuity of basal effusions, plate atelectasis and lower-zone nodules in women;
* age-related reticular markings (from ~45 years, strongest at the bases) → harder nodules and
  infiltrates in the 60-80 and 80+ bins;
* heart size rising with age and AP magnification (AP more common in the young and the old)
  → more borderline cardiac silhouettes, i.e. more Cardiomegaly false positives with age;
* smaller thoraces in children → smaller lesions in pixels → harder nodules in the 0-20 bin.

One module though past 300 lines: the specs (:class:`PhantomConfig`, :class:`CaseSpec`) and the
two steps that read them are the package's whole public surface and change together when the
demo world does; the anatomy and the findings are drawn in modules of their own.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import cv2
import numpy as np

from ...errors import DataError, UnknownNameError
from ...labels import FINDINGS, age_bin
from .. import nih_stats
from ._anatomy import build_anatomy, sample_habitus, sample_pose
from ._findings import DRAWERS, atelectasis_volume_loss, cardiomegaly_ctr

__all__ = [
    "SPLITS",
    "CaseSpec",
    "Instance",
    "PhantomCase",
    "PhantomConfig",
    "Shortcut",
    "enrichment_weights",
    "render",
    "sample_cohort",
]

SPLITS = ("train", "val", "test")
_DRAW_ORDER = ("Pneumothorax", "Effusion") + tuple(
    f for f in FINDINGS if f not in ("Pneumothorax", "Effusion")
)


@dataclass(frozen=True)
class Shortcut:
    """A marker planted with one finding in some splits only (to test which explainer finds it).

    In ``splits``, images positive for ``label`` carry the marker with probability
    ``p_positive`` and negatives with ``p_negative``; other splits never carry it.
    """

    label: str
    p_positive: float = 0.9
    p_negative: float = 0.05
    splits: tuple[str, ...] = ("train",)

    def __post_init__(self):
        if self.label not in FINDINGS:
            raise UnknownNameError("shortcut label", self.label, FINDINGS)


@dataclass(frozen=True)
class PhantomConfig:
    """Everything that decides the cohort and its pixels."""

    size: int = 224
    n_images: int = 4300
    split_fractions: tuple[float, float, float] = (0.71, 0.13, 0.16)
    seed: int = 0
    min_prevalence: float = 0.10
    marker_probability: float = 0.6
    shortcut: Shortcut | None = None

    def __post_init__(self):
        if not 64 <= self.size <= 1024:
            raise DataError(f"phantom size {self.size} px is outside the supported 64–1024 px")
        if self.n_images < 1:
            raise DataError(f"n_images must be ≥ 1, got {self.n_images}")
        if len(self.split_fractions) != 3 or abs(sum(self.split_fractions) - 1) > 1e-6:
            raise DataError(f"split_fractions must be three shares summing to 1, got {self.split_fractions}")
        if not 0 <= self.min_prevalence < 0.5:
            raise DataError(f"min_prevalence must be in [0, 0.5), got {self.min_prevalence}")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> PhantomConfig:
        d = json.loads(text)
        d["split_fractions"] = tuple(d["split_fractions"])
        if d.get("shortcut"):
            d["shortcut"] = Shortcut(**{**d["shortcut"], "splits": tuple(d["shortcut"]["splits"])})
        return cls(**d)


@dataclass(frozen=True)
class CaseSpec:
    """One image of the cohort: who, how it was taken, what it shows, and its seeds."""

    image_id: str
    patient_id: str
    sex: str
    age: int
    view: str
    split: str
    followup: int
    findings: tuple[str, ...]
    seed: int
    patient_seed: int
    marker: str | None = None
    shortcut: bool = False

    @property
    def age_bin(self) -> str:
        return age_bin(self.age)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CaseSpec:
        d = json.loads(text)
        d["findings"] = tuple(d["findings"])
        return cls(**d)


@dataclass
class Instance:
    """One lesion instance: its finding, index within the image, and exact pixel mask."""

    label: str
    index: int
    mask: np.ndarray  # (size, size) bool

    @property
    def box(self) -> tuple[int, int, int, int]:
        """Bounding box ``(x, y, w, h)`` in pixels, inclusive of every mask pixel."""
        ys, xs = np.nonzero(self.mask)
        return int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)


@dataclass
class PhantomCase:
    spec: CaseSpec
    image: np.ndarray  # (size, size) uint8
    instances: list[Instance]
    anatomy: dict[str, np.ndarray] = field(default_factory=dict)  # lungs, heart, thorax, body
    shortcut_mask: np.ndarray | None = None

    def mask(self, label: str) -> np.ndarray:
        """Union of the instance masks of one finding (all False when absent)."""
        out = np.zeros(self.image.shape, bool)
        for inst in self.instances:
            if inst.label == label:
                out |= inst.mask
        return out


# --------------------------------------------------------------------------- cohort

def enrichment_weights(combos: dict[str, int], floor: float, iterations: int = 300) -> np.ndarray:
    """Per-finding weights that lift every finding's prevalence to at least ``floor``.

    A combination (8-bit label vector) with count ``n_c`` is drawn with probability
    ``∝ n_c · Π_{l ∈ c} w_l``; weights of findings below the floor are raised by fixed-point
    iteration, the others stay 1, so NIH's relative co-occurrence is preserved.
    """
    bits = np.array([[ch == "1" for ch in k] for k in combos], float)
    counts = np.array(list(combos.values()), float)
    w = np.ones(bits.shape[1])
    for _ in range(iterations):
        p = _combo_probabilities(bits, counts, w)
        prev = p @ bits
        low = prev < floor
        if not low.any():
            break
        w[low] *= (floor / prev[low]) ** 0.7
    return w


def _combo_probabilities(bits, counts, w) -> np.ndarray:
    logp = np.log(counts) + bits @ np.log(w)
    p = np.exp(logp - logp.max())
    return p / p.sum()


def sample_cohort(config: PhantomConfig) -> list[CaseSpec]:
    """Draw the whole cohort (deterministic in ``config``)."""
    stats = nih_stats.load()
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, 1]))
    sexes = ["M", "F"]
    p_sex = np.array([stats["sex_counts"][s] for s in sexes], float)
    per_patient = {int(k): v for k, v in stats["images_per_patient"].items()}
    n_choices = np.array(sorted(per_patient))
    p_n = np.array([per_patient[k] for k in n_choices], float)
    patients = []
    total = 0
    while total < config.n_images:
        sex = sexes[rng.choice(2, p=p_sex / p_sex.sum())]
        age = _sample_age(rng, stats, sex)
        n = int(min(rng.choice(n_choices, p=p_n / p_n.sum()), config.n_images - total))
        patients.append((f"P{len(patients):05d}", sex, age, n, int(rng.integers(2**31))))
        total += n
    split_of = _split_patients(patients, config.split_fractions, rng)
    combos = stats["finding_combos"]
    bits = np.array([[ch == "1" for ch in k] for k in combos], bool)
    p_combo = _combo_probabilities(bits.astype(float), np.array(list(combos.values()), float),
                                   enrichment_weights(combos, config.min_prevalence))
    specs = []
    for pid, sex, age, n, pseed in patients:
        for follow in range(n):
            i = len(specs)
            findings = tuple(f for f, b in zip(FINDINGS, bits[rng.choice(len(bits), p=p_combo)]) if b)
            view = "AP" if rng.random() < stats["ap_fraction_by_age_bin"][age_bin(age)] else "PA"
            marker = (
                ("R" if rng.random() < 0.5 else "L") if rng.random() < config.marker_probability else None
            )
            shortcut = _shortcut_draw(config.shortcut, split_of[pid], findings, rng)
            specs.append(CaseSpec(
                image_id=f"ph{config.seed}-{i:05d}", patient_id=pid, sex=sex, age=age, view=view,
                split=split_of[pid], followup=follow, findings=findings,
                seed=int(np.random.SeedSequence([config.seed, 2, i]).generate_state(1)[0]),
                patient_seed=pseed, marker=marker, shortcut=shortcut,
            ))
    return specs


def _sample_age(rng, stats, sex) -> int:
    hist = np.array(stats["age_hist"][sex], float)
    edges = stats["age_edges"]
    k = rng.choice(len(hist), p=hist / hist.sum())
    return int(rng.integers(edges[k], min(edges[k + 1], edges[k] + 5)))


def _split_patients(patients, fractions, rng) -> dict[str, str]:
    """Assign whole patients to splits so each split gets its share of images."""
    order = rng.permutation(len(patients))
    total = sum(p[3] for p in patients)
    bounds = np.cumsum(fractions) * total
    out, seen = {}, 0
    for idx in order:
        pid, *_, n, _ = patients[idx]
        k = int(np.searchsorted(bounds, seen + n / 2))
        out[pid] = SPLITS[min(k, 2)]
        seen += n
    return out


def _shortcut_draw(shortcut: Shortcut | None, split: str, findings, rng) -> bool:
    if shortcut is None or split not in shortcut.splits:
        return False
    p = shortcut.p_positive if shortcut.label in findings else shortcut.p_negative
    return bool(rng.random() < p)


# --------------------------------------------------------------------------- rendering

def render(spec: CaseSpec, config: PhantomConfig) -> PhantomCase:
    """Draw one image and its ground truth (identical output for identical input)."""
    habitus = sample_habitus(np.random.default_rng(spec.patient_seed), spec.sex, spec.age)
    rng = np.random.default_rng(spec.seed)
    pose = sample_pose(rng, spec.view)
    plan: dict[str, dict] = {}
    ctr = cardiomegaly_ctr(rng) if "Cardiomegaly" in spec.findings else None
    dome_raise = {}
    if "Atelectasis" in spec.findings:
        side, kind, elevation = atelectasis_volume_loss(rng)
        dome_raise[side] = elevation
        plan["Atelectasis"] = {"side": side, "kind": kind}
    anat = build_anatomy(habitus, pose, config.size, ctr=ctr, dome_raise=dome_raise)
    anatomy = {
        "lungs": anat.lungs.copy(),
        "heart": anat.masks["heart"].copy(),
        "thorax": anat.masks["cavity_right"] | anat.masks["cavity_left"],
        "body": anat.masks["body"].copy(),
    }
    instances: list[Instance] = []
    for label in _DRAW_ORDER:
        if label not in spec.findings:
            continue
        for _attempt in range(4):  # a draw can land nowhere (e.g. a thin rim in a small lung): draw again
            masks = [m for m in DRAWERS[label](anat, rng, **plan.get(label, {})) if m.any()]
            if masks:
                break
        else:
            raise DataError(f"{spec.image_id}: could not place {label}; report this seed ({spec.seed})")
        instances += [Instance(label, k, m) for k, m in enumerate(masks)]
        if label in ("Pneumothorax", "Effusion"):  # no parenchymal lesion inside air or fluid
            for side in ("right", "left"):
                for m in masks:
                    anat.masks[f"lung_{side}"] &= ~m
    image = _expose(anat, rng)
    shortcut_mask = _draw_shortcut(image, config.size) if spec.shortcut else None
    if spec.marker:
        _draw_marker(image, spec.marker, config.size)
    instances.sort(key=lambda inst: (FINDINGS.index(inst.label), inst.index))
    return PhantomCase(spec, image, instances, anatomy, shortcut_mask)


def _expose(anat, rng) -> np.ndarray:
    """Density → radiograph: exposure, log-domain quantum noise, detector blur, film curve.

    Noise in the log signal has standard deviation ∝ exp(μD/2), i.e. it grows where fewer
    photons get through — so overlying soft tissue (breasts, fluid) also costs lesion SNR.
    """
    L = anat.layers
    density = L["soft"] - L["air"] + L["bone"] + L["vessels"] + L["texture"] + L["breast"] + L["lesion"]
    signal = anat.pose.exposure * np.clip(density, 0, None)
    signal = signal + rng.standard_normal(signal.shape).astype(np.float32) * anat.pose.noise * np.exp(
        0.5 * signal
    )
    signal = cv2.GaussianBlur(signal, (0, 0), 0.55 * anat.size / 256)
    shown = 1.0 - np.exp(-1.27 * anat.pose.contrast * np.clip(signal, 0, None))
    return np.clip((shown - 0.02) / 0.86 * 255.0, 0, 255).astype(np.uint8)


def _draw_marker(image: np.ndarray, letter: str, size: int) -> None:
    scale = 0.5 * size / 256
    x = int(0.05 * size) if letter == "R" else int(0.88 * size)
    cv2.putText(image, letter, (x, int(0.09 * size)), cv2.FONT_HERSHEY_SIMPLEX, scale, 250,
                max(1, int(round(1.6 * scale))), cv2.LINE_AA)


def _draw_shortcut(image: np.ndarray, size: int) -> np.ndarray:
    """A bright ring token (like an ECG electrode) high on the patient's left chest wall."""
    mask = np.zeros(image.shape, np.uint8)
    center = (int(0.86 * size), int(0.20 * size))
    cv2.circle(mask, center, max(2, int(0.022 * size)), 1, max(1, int(0.012 * size)))
    image[mask.astype(bool)] = 245
    return mask.astype(bool)
