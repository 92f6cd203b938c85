"""Label vocabularies and demographic binning shared by every layer.

The eight findings are the NIH ChestX-ray14 classes that have bounding boxes
(Wang et al., CVPR 2017, ``BBox_List_2017.csv``); the box file spells Infiltration as
"Infiltrate", which :func:`canonical_finding` maps back.

Every source spells some findings its own way ("Effusion", "Pleural Effusion", "pleural
effusion"): :data:`SYNONYMS` is the one table of true synonyms, and :func:`match_labels` pairs a
model's outputs with a dataset's labels through it.

Age bins follow CheXclusion / Underdiagnosis (Seyyed-Kalantari et al. 2021) and the thesis
(Bel Bordes 2023): inclusive integer ranges 0–19, 20–39, 40–59, 60–79 and ≥ 80 years,
labelled "0-20", "20-40", "40-60", "60-80", "80+".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import DataError, UnknownNameError

__all__ = [
    "AGE_BINS",
    "DEMO_LABELS",
    "FINDINGS",
    "GROUPINGS",
    "MATCH_KINDS",
    "LabelMatch",
    "NO_FINDING",
    "SEXES",
    "age_bin",
    "SYNONYMS",
    "canonical_finding",
    "check_label",
    "label_key",
    "match_labels",
    "synonym_group",
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
#: The demographics MIMIC-IV's admissions give (the mimic layout; schema v8 on), each an image field
#: with its ``<field>_source``: a store or dataset without them has none recorded.
ADMISSION_FIELDS: tuple[str, ...] = ("race", "insurance")
#: The groupings a subgroup report may name (``by=``), each an image field (``age_bin``: from ``age``);
#: race and insurance only where MIMIC-IV's admissions gave them (:data:`ADMISSION_FIELDS`).
GROUPINGS: tuple[str, ...] = ("sex", "age_bin", "view", *ADMISSION_FIELDS)

#: Groups of names that mean the same finding, each with the sources that spell it so. The first
#: name is ours (NIH ChestX-ray14's, else CheXpert's); names are compared by :func:`label_key`
#: (case, ``_``, ``-`` and spaces ignored), so "Pleural effusion" (VinDr-CXR) and "pleural
#: effusion" (PadChest) need no entry of their own. Only true synonyms: "Nodule/Mass" (VinDr-CXR,
#: Object-CXR) is neither "Nodule" nor "Mass", "Lung Lesion" is not "Mass", "pulmonary mass" and
#: "mediastinal mass" (PadChest) are not NIH's "Mass", "normal" (PadChest) is not "No Finding".
SYNONYMS: dict[tuple[str, ...], str] = {
    ("Effusion", "Pleural Effusion"):
        "NIH ChestX-ray14 and torchxrayvision say Effusion; CheXpert and MIMIC-CXR Pleural Effusion, "
        "VinDr-CXR Pleural effusion, PadChest pleural effusion (torchxrayvision renames them all Effusion)",
    ("Infiltration", "Infiltrate", "Infiltrates"):
        "NIH Data_Entry_2017 and torchxrayvision say Infiltration; NIH BBox_List_2017 and OpenI Infiltrate; "
        "PadChest infiltrates",
    # one name: the spellings differ by case and "_" only (listed for canonical_finding and the record)
    ("Pleural_Thickening",):
        "NIH and torchxrayvision say Pleural_Thickening; VinDr-CXR Pleural thickening, PadChest pleural "
        "thickening",
    ("Lung Opacity", "Airspace Opacity"):
        "CheXpert, MIMIC-CXR, VinDr-CXR and torchxrayvision say Lung Opacity; CheXlocalize and the Google "
        "NIH labels Airspace Opacity (CheXlocalize's own renaming)",
    ("Atelectasis", "Atelectases"): "NIH, CheXpert, VinDr-CXR, PadChest say Atelectasis; OpenI Atelectases",
    ("Edema", "Pulmonary Edema"):
        "NIH, CheXpert, MIMIC-CXR and torchxrayvision say Edema; PadChest pulmonary edema",
    ("Fibrosis", "Pulmonary Fibrosis"):
        "NIH, torchxrayvision and PadChest (fibrosis) say Fibrosis; VinDr-CXR and PadChest Pulmonary "
        "fibrosis",
}


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


def label_key(name: str) -> str:
    """A label name compared without case, ``_``, ``-`` or spacing differences.

    >>> label_key("Pleural_Thickening") == label_key("pleural  thickening")
    True
    """
    return " ".join(name.replace("_", " ").replace("-", " ").casefold().split())


_GROUP_OF = {label_key(name): group for group in SYNONYMS for name in group}


def synonym_group(name: str) -> tuple[str, ...] | None:
    """The :data:`SYNONYMS` group ``name`` belongs to (compared by :func:`label_key`), else ``None``."""
    return _GROUP_OF.get(label_key(name))


def canonical_finding(name: str) -> str:
    """Map a source's spelling of a finding to ours ("Infiltrate" → "Infiltration",
    "Pleural Effusion" → "Effusion"); a name in no synonym group is returned as it is."""
    group = synonym_group(name)
    return group[0] if group else name


def check_label(label: str, allowed_labels: tuple[str, ...] | list[str] = DEMO_LABELS) -> str:
    """Return ``label`` if it is allowed, else raise :class:`UnknownNameError` listing them."""
    if label not in allowed_labels:
        raise UnknownNameError("label", label, allowed_labels)
    return label


#: How a model output met a dataset label (the ``how`` of the store's ``label_matches`` table):
#: the same name, the same name but for case/``_``/spacing, a synonym of :data:`SYNONYMS`, or none.
MATCH_KINDS = ("exact", "case", "alias", "unmatched output", "unmatched label")


@dataclass(frozen=True)
class LabelMatch:
    """Which of a model's outputs scores which of a dataset's labels (see :func:`match_labels`).

    ``names`` is the output list under the dataset's spelling (an output that matched nothing
    keeps its own name), in the model's output order, so output indices are unchanged.
    ``how`` says, per output, how it matched (:data:`MATCH_KINDS`).
    """

    outputs: tuple[str, ...]
    labels: tuple[str, ...]
    names: tuple[str, ...]
    how: tuple[str, ...]

    @property
    def renamed(self) -> dict[str, str]:
        """Outputs whose name changed: model's spelling → dataset's."""
        return {o: n for o, n in zip(self.outputs, self.names) if o != n}

    @property
    def matched(self) -> dict[str, str]:
        """Every output that scores a dataset label: model's spelling → dataset's."""
        return {o: n for o, n, h in zip(self.outputs, self.names, self.how) if h != "unmatched output"}

    @property
    def unmatched_outputs(self) -> tuple[str, ...]:
        return tuple(o for o, h in zip(self.outputs, self.how) if h == "unmatched output")

    @property
    def unmatched_labels(self) -> tuple[str, ...]:
        scored = set(self.matched.values())
        return tuple(lab for lab in self.labels if lab not in scored)

    def rename(self, name: str) -> str:
        """The dataset's spelling of an output's name (anything else is returned as it is)."""
        return dict(zip(self.outputs, self.names)).get(name, name)

    def rows(self) -> list[dict]:
        """``model_output, dataset_label, how`` per output, then one row per label no output scores."""
        out = [{"model_output": o, "dataset_label": None if h == "unmatched output" else n, "how": h}
               for o, n, h in zip(self.outputs, self.names, self.how)]
        return out + [{"model_output": None, "dataset_label": lab, "how": "unmatched label"}
                      for lab in self.unmatched_labels]


def _same_key(a: str, b: str) -> bool:
    return label_key(a) == label_key(b)


def _same_group(a: str, b: str) -> bool:
    group = synonym_group(a)
    return group is not None and group == synonym_group(b)


def match_labels(model_outputs, dataset_labels) -> LabelMatch:
    """Pair each model output with the dataset label it scores: the same name first, then the same
    :func:`label_key` ("case"), then a :data:`SYNONYMS` group ("alias"); each label is scored by
    at most one output (an exact name wins over a synonym), the rest stay unmatched on both sides.

    >>> m = match_labels(["Effusion", "Nodule/Mass", "mass"], ["Pleural Effusion", "Nodule", "Mass"])
    >>> m.names, m.how
    (('Pleural Effusion', 'Nodule/Mass', 'Mass'), ('alias', 'unmatched output', 'case'))
    >>> m.unmatched_labels
    ('Nodule',)
    """
    outputs, labels = tuple(model_outputs), tuple(dataset_labels)
    found: dict[int, tuple[str, str]] = {}
    free = list(labels)
    rules = (("exact", str.__eq__), ("case", _same_key), ("alias", _same_group))
    for how, same in rules:
        for i, out in enumerate(outputs):
            hit = None if i in found else next((lab for lab in free if same(out, lab)), None)
            if hit is not None:
                found[i] = (hit, how)
                free.remove(hit)
    names = tuple(found[i][0] if i in found else o for i, o in enumerate(outputs))
    how = tuple(found[i][1] if i in found else "unmatched output" for i in range(len(outputs)))
    return LabelMatch(outputs, labels, names, how)
