"""The one table of label synonyms and the matcher that pairs a model's outputs with a dataset's
labels (cxrxai.labels): true synonyms only, case and ``_``/spacing ignored, unmatched both sides."""

from __future__ import annotations

import pytest

from cxrxai.labels import SYNONYMS, canonical_finding, label_key, match_labels

# torchxrayvision's default_pathologies, and CheXpert's labels (cxrxai.data.adapters.chexpert)
XRV = ("Atelectasis", "Consolidation", "Infiltration", "Pneumothorax", "Edema", "Emphysema", "Fibrosis",
       "Effusion", "Pneumonia", "Pleural_Thickening", "Cardiomegaly", "Nodule", "Mass", "Hernia",
       "Lung Lesion", "Fracture", "Lung Opacity", "Enlarged Cardiomediastinum")
CHEXPERT = ("No Finding", "Enlarged Cardiomediastinum", "Cardiomegaly", "Lung Opacity", "Lung Lesion",
            "Edema", "Consolidation", "Pneumonia", "Atelectasis", "Pneumothorax", "Pleural Effusion",
            "Pleural Other", "Fracture", "Support Devices")


def test_effusion_scores_pleural_effusion_by_alias_in_the_model_order():
    m = match_labels(["Cardiomegaly", "Effusion"], ["Pleural Effusion", "Cardiomegaly"])
    assert m.names == ("Cardiomegaly", "Pleural Effusion")  # output order kept: indices unchanged
    assert m.how == ("exact", "alias")
    assert m.renamed == {"Effusion": "Pleural Effusion"}
    assert m.unmatched_outputs == () and m.unmatched_labels == ()


CASE = [("Pleural_Thickening", "Pleural thickening"), ("Pleural Effusion", "pleural effusion"),
        ("No Finding", "No finding"), ("cardiomegaly", "Cardiomegaly")]
ALIAS = [("Effusion", "Pleural effusion"), ("Infiltration", "infiltrates"), ("Infiltrate", "Infiltration"),
         ("Lung Opacity", "Airspace Opacity"), ("Edema", "pulmonary edema"),
         ("Fibrosis", "Pulmonary fibrosis")]
DIFFERENT = [("Nodule/Mass", "Nodule"), ("Nodule/Mass", "Mass"), ("Nodule", "Mass"), ("Lung Lesion", "Mass"),
             ("Mass", "pulmonary mass"), ("Consolidation", "Infiltration"), ("Effusion", "Pleural Other")]


@pytest.mark.parametrize(("output", "label"), CASE)
def test_case_underscores_and_spaces_are_one_spelling(output, label):
    m = match_labels([output], [label])
    assert m.how == ("case",) and m.names == (label,)


@pytest.mark.parametrize(("output", "label"), ALIAS)
def test_synonyms_of_the_sources(output, label):
    assert match_labels([output], [label]).how == ("alias",)


@pytest.mark.parametrize(("output", "label"), DIFFERENT)
def test_different_findings_never_merge(output, label):
    m = match_labels([output], [label])
    assert m.how == ("unmatched output",) and m.names == (output,)
    assert m.unmatched_outputs == (output,) and m.unmatched_labels == (label,)


def test_unmatched_on_both_sides_are_rows():
    m = match_labels(["Effusion", "Hernia"], ["Pleural Effusion", "Support Devices"])
    assert m.rows() == [{"model_output": "Effusion", "dataset_label": "Pleural Effusion", "how": "alias"},
                        {"model_output": "Hernia", "dataset_label": None, "how": "unmatched output"},
                        {"model_output": None, "dataset_label": "Support Devices", "how": "unmatched label"}]


def test_an_exact_name_wins_over_a_synonym_and_each_label_is_scored_once():
    m = match_labels(["Effusion", "Pleural Effusion"], ["Pleural Effusion", "Effusion"])
    assert m.how == ("exact", "exact")
    m = match_labels(["Effusion", "Pleural Effusion"], ["Pleural Effusion"])
    assert m.how == ("unmatched output", "exact") and m.names == ("Effusion", "Pleural Effusion")


def test_the_readme_example_torchxrayvision_on_chexpert():
    m = match_labels(XRV, CHEXPERT)
    assert m.matched["Effusion"] == "Pleural Effusion"
    assert set(m.unmatched_labels) == {"No Finding", "Pleural Other", "Support Devices"}
    assert len(set(m.names)) == len(XRV)  # still one name per output


def test_the_table_has_no_name_twice_and_canonical_is_our_spelling():
    keys = [label_key(n) for group in SYNONYMS for n in group]
    assert len(keys) == len(set(keys))
    assert all(SYNONYMS.values())  # every group says where its spellings come from
    assert canonical_finding("Infiltrate") == "Infiltration"
    assert canonical_finding("pleural effusion") == "Effusion"
    assert canonical_finding("Nodule/Mass") == "Nodule/Mass"
