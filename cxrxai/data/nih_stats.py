"""NIH ChestX-ray14 population statistics that the demo phantom cohort is modelled on.

The numbers ship in ``nih_stats.json`` beside this module. They were derived, with
:func:`derive`, from ``Data_Entry_2017_v2020.csv.gz`` as bundled in the torchxrayvision 1.5.7
wheel (112,120 images of 30,805 patients; Wang et al., "ChestX-ray8", CVPR 2017, and the NIH
2020 metadata revision). ``tests/data/test_nih_stats.py`` re-derives them from that file when
torchxrayvision is installed, so the shipped numbers cannot drift from their source.

What is kept: sex counts; 5-year age histograms per sex; the share of AP views per age bin;
the joint counts of the eight box findings (each image's 8-bit label vector, so prevalence
and co-occurrence come from the same table); and the number of images per patient.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DataError
from ..labels import AGE_BINS, FINDINGS, age_bin

__all__ = ["AGE_EDGES", "derive", "load"]

#: 5-year age histogram edges; the last bin is [95, 130].
AGE_EDGES: tuple[int, ...] = tuple(range(0, 100, 5)) + (131,)
_COLUMNS = {"Image Index", "Finding Labels", "Patient ID", "Patient Age", "Patient Gender", "View Position"}


def derive(data_entry_csv: str | Path) -> dict:
    """Compute the statistics from an NIH ``Data_Entry_2017*.csv(.gz)`` file.

    Header spellings with the spaces stripped (``ImageIndex``...) are accepted.
    """
    path = Path(data_entry_csv)
    df = pd.read_csv(path)
    df.columns = [_normalize_header(c) for c in df.columns]
    missing = _COLUMNS - set(df.columns)
    if missing:
        raise DataError(f"{path}: missing columns {sorted(missing)}; found {list(df.columns)}")
    labels = df["Finding Labels"].str.split("|")
    bits = np.stack([labels.map(lambda s, f=f: f in s).to_numpy() for f in FINDINGS], axis=1)
    combos = pd.Series(["".join("1" if b else "0" for b in row) for row in bits]).value_counts()
    age = df["Patient Age"].astype(float)
    bins = age.map(age_bin)
    per_patient = df.groupby("Patient ID").size().clip(upper=10)
    return {
        "source": {
            "file": path.name,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "rows": len(df),
            "patients": int(df["Patient ID"].nunique()),
        },
        "findings_order": list(FINDINGS),
        "sex_counts": {s: int((df["Patient Gender"] == s).sum()) for s in ("M", "F")},
        "age_edges": list(AGE_EDGES),
        "age_hist": {
            s: np.histogram(age[df["Patient Gender"] == s], bins=AGE_EDGES)[0].tolist()
            for s in ("M", "F")
        },
        "ap_fraction_by_age_bin": {
            b: round(float((df.loc[bins == b, "View Position"] == "AP").mean()), 4) for b in AGE_BINS
        },
        "finding_combos": {k: int(v) for k, v in combos.sort_index().items()},
        "images_per_patient": {str(k): int(v) for k, v in per_patient.value_counts().sort_index().items()},
    }


@lru_cache(maxsize=1)
def load() -> dict:
    """The shipped statistics (see the module docstring for their provenance)."""
    text = resources.files(__package__).joinpath("nih_stats.json").read_text()
    return json.loads(text)


def _normalize_header(name: str) -> str:
    stripped = {c.replace(" ", ""): c for c in _COLUMNS}
    return stripped.get(name.replace(" ", ""), name)


def main() -> None:  # pragma: no cover - maintenance entry point
    """Regenerate ``nih_stats.json`` from the torchxrayvision wheel's metadata."""
    import torchxrayvision

    src = Path(torchxrayvision.__file__).parent / "data" / "Data_Entry_2017_v2020.csv.gz"
    out = Path(__file__).with_name("nih_stats.json")
    out.write_text(json.dumps(derive(src), indent=1) + "\n")


if __name__ == "__main__":  # pragma: no cover
    main()
