"""The Underdiagnosis paper's race and insurance groups over the values MIMIC-IV writes, and the
subgroup reports' ``race=paper`` / ``insurance=paper`` options; every group counted by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cxrxai.cli import main
from cxrxai.demographic_groups import fell_to_other, paper_groups, regroup
from cxrxai.errors import UnknownNameError
from cxrxai.reports import run_report
from cxrxai.store import open_store, write_store

#: image → (race, insurance) as MIMIC-IV 2.x / 3.x write them, and the Edema probability (all positive).
IMAGES = {
    "a": ("WHITE - OTHER EUROPEAN", "Medicare", 0.7),
    "b": ("WHITE", "Medicare", 0.2),
    "c": ("BLACK/AFRICAN AMERICAN", "Medicaid", 0.9),
    "d": ("BLACK/CAPE VERDEAN", "Private", 0.8),
    "e": ("HISPANIC/LATINO - PUERTO RICAN", "No charge", 0.1),
    "f": ("ASIAN - CHINESE", "Other", 0.6),
    "g": ("PORTUGUESE", "Medicare", 0.3),
    "h": ("MULTIPLE RACE/ETHNICITY", "Medicaid", 0.9),
    "i": (None, "Medicare", 0.5),
}


def test_mimic_iv_race_values_fall_in_the_papers_groups():
    values = pd.Series(["WHITE - RUSSIAN", "WHITE", "BLACK/CARIBBEAN ISLAND", "HISPANIC OR LATINO",
                        "HISPANIC/LATINO - SALVADORAN", "ASIAN - SOUTH EAST ASIAN",
                        "AMERICAN INDIAN/ALASKA NATIVE", "NATIVE HAWAIIAN OR OTHER PACIFIC ISLANDER",
                        "SOUTH AMERICAN", "OTHER", None, "asian - korean ", "ASIAN - JAPANESE"])
    assert paper_groups(values, "race").tolist() == [
        "White", "White", "Black", "Hispanic", "Hispanic", "Asian", "American Indian", "Other", "Other",
        "Other", None, "Asian", "Other"]  # the last: not in MIMIC-IV 2.x, Other by the rule for the unlisted


def test_insurance_falls_in_medicare_medicaid_other():
    values = pd.Series(["Medicare", "Medicaid", "Other", "Private", "No charge", None])
    assert paper_groups(values, "insurance").tolist() == ["Medicare", "Medicaid", "Other", "Other", "Other",
                                                          None]


def test_every_value_that_fell_to_other_is_named_with_its_n():
    values = pd.Series(["PORTUGUESE", "WHITE", "OTHER", "PORTUGUESE", "ASIAN - JAPANESE", None, "OTHER",
                        "OTHER"])
    other = fell_to_other(values, "race")
    assert other.values.tolist() == [["OTHER", 3, True], ["PORTUGUESE", 2, True],
                                     ["ASIAN - JAPANESE", 1, False]]


def test_an_unknown_grouping_choice_names_the_allowed_ones():
    with pytest.raises(UnknownNameError, match="race grouping 'census'; allowed: .*as_recorded.*paper"):
        regroup(pd.DataFrame({"race": ["WHITE"]}), race="census")


@pytest.fixture()
def mimic_store(tmp_path):
    ids = list(IMAGES)
    path = tmp_path / "s.duckdb"
    with write_store(path, fresh=True) as w:
        w.put_dataset("mimic", source="mimic", labels=["Edema", "No Finding"], root=str(tmp_path), config={})
        w.put_images(pd.DataFrame({"image_id": ids, "dataset": "mimic", "path": [f"{i}.jpg" for i in ids],
                                   "split": "test", "sex": "F", "race": [v[0] for v in IMAGES.values()],
                                   "insurance": [v[1] for v in IMAGES.values()]}))
        probs = np.array([[v[2], 1 - v[2]] for v in IMAGES.values()])
        w.put_predictions("m", ids, ("Edema", "No Finding"), np.zeros_like(probs), probs)
        fixed = {"threshold": 0.5, "method": "fixed", "criterion": np.nan, "split": "val"}
        w.put_thresholds("m", [{"label": lab, **fixed} for lab in ("Edema", "No Finding")])
        w.put_labels(pd.DataFrame({"image_id": ids * 2, "label": ["Edema"] * 9 + ["No Finding"] * 9,
                                   "value": [1] * 9 + [0] * 9}))
        w.publish()
    return path


def test_subgroup_tpr_by_the_papers_race_groups(mimic_store):
    with open_store(mimic_store) as store:
        recorded = run_report(store, "subgroup-tpr", "m", by="race")
        paper = run_report(store, "subgroup-tpr", "m", by="race", race="paper").set_index("race")
    assert len(recorded) == 8 and "WHITE - OTHER EUROPEAN" in set(recorded.race)  # the default: as recorded
    # White a (0.7), b (0.2); Black c, d; Hispanic e (0.1); Asian f (0.6); Other g (0.3), h (0.9); i missing
    assert paper["n_pos"].to_dict() == {"Asian": 1, "Black": 2, "Hispanic": 1, "Other": 2, "White": 2}
    assert paper["tpr"].to_dict() == {"Asian": 1.0, "Black": 1.0, "Hispanic": 0.0, "Other": 0.5, "White": 0.5}
    assert set(paper["n_missing"]) == {1}


def test_underdiagnosis_by_the_papers_insurance_groups(mimic_store, capsys):
    with open_store(mimic_store) as store:
        out = run_report(store, "underdiagnosis", "m", by="insurance", insurance="paper")
    # No Finding is 0 everywhere, its prob 1 − Edema's, predicted when ≥ 0.5: b, e, g and i (0.5)
    # Medicare a, b, g, i → 3 of 4; Medicaid c, h → 0 of 2; Other d, e, f → 1 of 3 (rounded to 3 dp)
    fpr = out.set_index("insurance")["fpr"].to_dict()
    assert fpr == {"Medicaid": 0.0, "Medicare": 0.75, "Other": 0.333}
    code = main(["report", "subgroup-tpr", "--store", str(mimic_store), "--model", "m", "--option", "by=race",
                 "--option", "race=paper", "--csv"])
    assert code == 0 and "Hispanic" in capsys.readouterr().out
