"""Label vocabularies and demographic binning shared by every layer.

The eight findings are the NIH ChestX-ray14 classes that have bounding boxes
(Wang et al., CVPR 2017, ``BBox_List_2017.csv``); the box file spells Infiltration as
"Infiltrate", which :func:`canonical_finding` maps back.

Age bins follow CheXclusion / Underdiagnosis (Seyyed-Kalantari et al. 2021) and the thesis
(Bel Bordes 2023): inclusive integer ranges 0–19, 20–39, 40–59, 60–79 and ≥ 80 years,
labelled "0-20", "20-40", "40-60", "60-80", "80+".
"""

from __future__ import annotations

import math

from .errors import DataError, UnknownNameError

__all__ = [
    "AGE_BINS",
    "DEMO_LABELS",
    "FINDINGS",
    "NO_FINDING",
    "SEXES",
    "age_bin",
    "canonical_finding",
    "check_label",
]

FINDINGS: tuple[str, ...] = (
    "Atelectasis",
    "Cardiomegaly",
    "Effusion",
    "Infiltration",
    "Mass",
    "Nodule",
    "Pneumonia",
    "Pneumothorax",
)
NO_FINDING = "No Finding"
#: Outputs of the demo model: the eight box findings plus No Finding (as the 15-label
#: Underdiagnosis model has it), so the under/overdiagnosis analysis runs on the demo too.
DEMO_LABELS: tuple[str, ...] = FINDINGS + (NO_FINDING,)

AGE_BINS: tuple[str, ...] = ("0-20", "20-40", "40-60", "60-80", "80+")
SEXES: tuple[str, ...] = ("M", "F")

_ALIASES = {"Infiltrate": "Infiltration", "Pleural Effusion": "Effusion"}


def age_bin(age: float | None) -> str | None:
    """Return the age bin of an age in years (``None`` when the age is missing).

    Bins are inclusive integer ranges on the floor of the age: 0–19 → "0-20", 20–39 → "20-40",
    40–59 → "40-60", 60–79 → "60-80", ≥ 80 → "80+" (CheXclusion's ``between(0, 19)`` etc.).

    >>> age_bin(19), age_bin(20), age_bin(79.9), age_bin(80), age_bin(None)
    ('0-20', '20-40', '60-80', '80+', None)
    """
    if age is None or (isinstance(age, float) and math.isnan(age)):
        return None
    if age < 0 or age > 130:
        raise DataError(f"age {age!r} is outside 0–130 years; fix or blank it in the source")
    a = int(math.floor(age))
    return AGE_BINS[min(a // 20, 4)]


def canonical_finding(name: str) -> str:
    """Map a dataset's spelling of a finding to ours ("Infiltrate" → "Infiltration")."""
    return _ALIASES.get(name, name)


def check_label(label: str, allowed_labels: tuple[str, ...] | list[str] = DEMO_LABELS) -> str:
    """Return ``label`` if it is allowed, else raise :class:`UnknownNameError` listing them."""
    if label not in allowed_labels:
        raise UnknownNameError("label", label, allowed_labels)
    return label
