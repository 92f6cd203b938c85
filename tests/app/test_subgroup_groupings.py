"""The Subgroups page groups by race and insurance where the images record them (MIMIC-CXR read
with MIMIC-IV's admissions), as recorded or in the Underdiagnosis paper's groups, says why they
are not offered elsewhere, and a race bar opens exactly the pairs it counts (the explorer has no
race filter); every count below by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_pages import _app, grid_table  # tests/app is on sys.path (no __init__.py)

from cxrxai.models.spec import ModelSpec
from cxrxai.store import write_store
from pages._widgets import SELECTED

#: image → (race, insurance) as MIMIC-IV 2.x / 3.x write them, the Edema probability and truth.
IMAGES = {
    "a": ("WHITE - OTHER EUROPEAN", "Medicare", 0.7, 1),
    "b": ("WHITE", "Medicare", 0.2, 1),
    "c": ("BLACK/AFRICAN AMERICAN", "Medicaid", 0.9, 1),
    "d": ("BLACK/CAPE VERDEAN", "Private", 0.3, 1),
    "e": ("HISPANIC/LATINO - PUERTO RICAN", "No charge", 0.1, 0),
    "f": ("ASIAN - CHINESE", "Other", 0.6, 1),
    "g": ("BLACK/AFRICAN AMERICAN", "Medicare", 0.8, 0),
    "h": (None, "Medicaid", 0.9, 1),
}


#: An image outside the test split the reports evaluate: a bar's pairs never include it
LATER = {"x": ("BLACK/AFRICAN AMERICAN", "Medicare", 0.9, 1)}


def _store(path, *, recorded: bool):
    ids = list(IMAGES) + list(LATER)
    values = [*IMAGES.values(), *LATER.values()]
    groups = {"race": [v[0] for v in values], "insurance": [v[1] for v in values]}
    with write_store(path, fresh=True) as w:
        w.put_model(ModelSpec(name="m", arch="densenet121", labels=("Edema",), thresholds={}))
        w.put_dataset("mimic", source="mimic", labels=["Edema"], root=str(path.parent), config={})
        w.put_images(pd.DataFrame({"image_id": ids, "dataset": "mimic", "path": [f"{i}.jpg" for i in ids],
                                   "split": ["test"] * len(IMAGES) + ["val"] * len(LATER), "sex": "F",
                                   **(groups if recorded else {})}))
        probs = np.array([[v[2]] for v in values])
        w.put_predictions("m", ids, ("Edema",), np.zeros_like(probs), probs)
        w.put_thresholds("m", [{"label": "Edema", "threshold": 0.5, "method": "fixed", "criterion": np.nan,
                                "split": "val"}])
        w.put_labels(pd.DataFrame({"image_id": ids, "label": "Edema", "value": [v[3] for v in values]}))
        w.publish()
    return path


@pytest.fixture()
def mimic_store(tmp_path):
    return _store(tmp_path / "mimic.duckdb", recorded=True)


def _rates(at) -> pd.DataFrame:
    (table,) = [d.value for d in at.dataframe if "tpr" in d.value.columns]
    return table


def test_race_in_the_papers_groups_counts_each_group_by_hand(mimic_store):
    at = _app(mimic_store, "pages/subgroups.py", grouping="race", race_groups="paper")
    assert not at.exception, at.exception
    assert {"race", "insurance"} <= set(at.radio(key="grouping").options)
    assert "view" not in at.radio(key="grouping").options  # no image records a view
    rates = _rates(at).set_index("race")
    # positives: White a (0.7), b (0.2); Black c (0.9), d (0.3); Asian f (0.6); h has no race.
    # negatives: Black g (0.8), Hispanic e (0.1)
    assert rates["n_pos"].to_dict() == {"Asian": 1, "Black": 2, "Hispanic": 0, "White": 2}
    assert rates["n_neg"].to_dict() == {"Asian": 0, "Black": 1, "Hispanic": 1, "White": 0}
    assert rates["tpr"].dropna().to_dict() == {"Asian": 1.0, "Black": 0.5, "White": 0.5}


def test_race_as_recorded_keeps_mimics_values(mimic_store):
    at = _app(mimic_store, "pages/subgroups.py", grouping="race")
    assert not at.exception, at.exception
    assert at.radio(key="race_groups").value == "as_recorded"
    assert "BLACK/CAPE VERDEAN" in set(_rates(at).race)


@pytest.mark.parametrize("rate,outcomes,pairs", [("tpr", ["TP", "FN"], [("c", "Edema"), ("d", "Edema")]),
                                                 ("fpr", ["FP", "TN"], [("g", "Edema")])])
def test_a_race_bar_opens_exactly_the_pairs_it_counts(mimic_store, rate, outcomes, pairs):
    """Black's TPR bar: its positives c and d (g is a negative); its FPR bar: g alone."""
    bar = {"selection": {"points": [{"customdata": ["Edema", "Black", len(pairs)]}], "point_indices": [0],
                         "box": [], "lasso": []}}
    at = _app(mimic_store, "pages/subgroups.py", grouping="race", race_groups="paper", rate=rate, rate_chart=bar,
              f_split="val")  # the explorer left on another split than the report's
    assert not at.exception, at.exception
    assert at.session_state["f_outcome"] == outcomes and at.session_state["f_sex"] == []
    assert at.session_state["f_split"] == "test"  # the split the report evaluated
    assert at.session_state[SELECTED["pairs"]] == pairs
    at.switch_page("pages/explorer.py").run()
    table = grid_table(at)
    assert sorted(zip(table.image_id, table.label)) == pairs


def test_a_store_without_race_does_not_offer_it_and_says_where_it_comes_from(tmp_path):
    at = _app(_store(tmp_path / "nih.duckdb", recorded=False), "pages/subgroups.py")
    assert not at.exception, at.exception
    assert at.radio(key="grouping").options == ["sex", "age_bin", "sex × age_bin"]
    (note,) = [c.value for c in at.caption if c.value.startswith("Not offered")]
    assert "race, insurance" in note and "MIMIC-IV's admissions.csv" in note and "mimic_iv=DIR" in note


def test_the_explanation_section_groups_by_view(tiny_full_store):
    """The scored cases carry every grouping's field, view included (it raised "no group by view")."""
    at = _app(tiny_full_store, "pages/subgroups.py", grouping="view")
    assert not at.exception, at.exception
    assert not [i.value for i in at.info if "no group by view" in i.value]
    assert any("view" in d.value.columns and "mean" in d.value.columns for d in at.dataframe)


def test_a_model_without_predictions_says_so_instead_of_failing(tmp_path):
    path = tmp_path / "none.duckdb"
    with write_store(path, fresh=True) as w:
        w.put_model(ModelSpec(name="m", arch="densenet121", labels=("Edema",), thresholds={}))
        w.publish()
    at = _app(path, "pages/subgroups.py")
    assert not at.exception, at.exception
    assert any("has no predictions" in i.value for i in at.info)
