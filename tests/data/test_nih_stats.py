"""The shipped NIH statistics are exactly what the real metadata file gives."""

import json
from pathlib import Path

import pytest

from cxrxai.data import nih_stats


def _data_entry() -> Path:
    xrv = pytest.importorskip("torchxrayvision")
    return Path(xrv.__file__).parent / "data" / "Data_Entry_2017_v2020.csv.gz"


def test_shipped_stats_equal_derivation_from_the_real_file():
    assert nih_stats.derive(_data_entry()) == json.loads(json.dumps(nih_stats.load()))


def test_known_nih_counts():
    stats = nih_stats.load()
    assert stats["source"]["rows"] == 112_120 and stats["source"]["patients"] == 30_805
    assert stats["sex_counts"] == {"M": 63_340, "F": 48_780}
    assert sum(stats["finding_combos"].values()) == 112_120
    assert stats["finding_combos"]["00000000"] == 65_471  # none of the eight box findings
    per_finding = [sum(n for k, n in stats["finding_combos"].items() if k[j] == "1") for j in range(8)]
    # Atelectasis, Cardiomegaly, Effusion, Infiltration, Mass, Nodule, Pneumonia, Pneumothorax
    assert per_finding == [11_559, 2_776, 13_317, 19_894, 5_782, 6_331, 1_431, 5_302]


def test_headers_without_spaces_are_accepted(tmp_path):
    csv = tmp_path / "entry.csv"
    csv.write_text("ImageIndex,FindingLabels,PatientID,PatientAge,PatientGender,ViewPosition\n"
                   "a.png,Mass|Nodule,1,50,F,PA\nb.png,No Finding,2,30,M,AP\n")
    stats = nih_stats.derive(csv)
    assert stats["finding_combos"] == {"00000000": 1, "00001100": 1}
    assert stats["ap_fraction_by_age_bin"]["20-40"] == 1.0
