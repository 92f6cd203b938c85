"""Dataset adapters against the real metadata files, at full size (torchxrayvision's wheel
ships NIH, CheXpert, SIIM, RSNA, VinDr and PadChest metadata; no images needed)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cxrxai.data.adapters import load_dataset
from cxrxai.data.adapters.siim import decode_siim_rle

xrv = pytest.importorskip("torchxrayvision")
DATA = Path(xrv.__file__).parent / "data"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def nih(tmp_path_factory):
    root = tmp_path_factory.mktemp("nih")
    return load_dataset("nih", root, data_entry=DATA / "Data_Entry_2017_v2020.csv.gz",
                        bbox_list=DATA / "BBox_List_2017.csv.gz", split="alternative")


def test_nih_counts(nih):
    assert len(nih.images) == 112_120 and nih.images.patient_id.nunique() == 30_805
    boxes = nih.annotations
    assert len(boxes) == 984 and boxes.image_id.nunique() == 880
    assert "Infiltration" in set(boxes.label) and "Infiltrate" not in set(boxes.label)
    assert nih.problems.empty
    assert (nih.images.sex == "M").sum() == 63_340 and nih.images.age_bin.notna().all()
    # where each value came from (PNGs: no DICOM header read)
    sources = nih.images[["sex_source", "age_source", "view_source"]]
    assert (sources == "csv:Data_Entry_2017_v2020.csv.gz").all().all()


def test_nih_alternative_split_puts_every_box_patient_in_test(nih):
    test = nih.images[nih.images.split == "test"]
    assert len(test) == 15_938 and test.patient_id.nunique() == 726  # the thesis's Table S2 test size
    assert set(nih.annotations.image_id) <= set(test.image_id)
    per_patient = nih.images.groupby("patient_id").split.nunique()
    assert (per_patient == 1).all()  # no patient straddles splits


def test_nih_labels_long_table(nih):
    wide = nih.labels.pivot(index="image_id", columns="label", values="value")
    assert int(wide["Effusion"].sum()) == 13_317 and int(wide["No Finding"].sum()) == 60_361


def test_nih_official_split_uses_the_test_list(tmp_path):
    entry = pd.read_csv(DATA / "Data_Entry_2017_v2020.csv.gz", nrows=400)
    entry.to_csv(tmp_path / "Data_Entry_2017_v2020.csv", index=False)
    (tmp_path / "test_list.txt").write_text("\n".join(entry["Image Index"][:50]))
    t = load_dataset("nih", tmp_path)
    assert set(t.images.loc[t.images.split == "test", "image_id"]) == set(entry["Image Index"][:50])
    assert {"train", "val"} <= set(t.images.split)


def test_chexpert_full_train_csv_and_uncertainty_policies(tmp_path):
    csv = DATA / "chexpert_train.csv.gz"
    zeros = load_dataset("chexpert", tmp_path, files=[str(csv)], uncertain="zeros")
    assert len(zeros.images) == 223_414
    assert zeros.images.image_id.iloc[0] == "patient00001_study1_view1_frontal"
    ones = load_dataset("chexpert", tmp_path, files=[str(csv)], uncertain="ones")
    ignore = load_dataset("chexpert", tmp_path, files=[str(csv)], uncertain="ignore")
    pos = lambda t: int((t.labels.value == 1).sum())
    raw = pd.read_csv(csv)
    labels = zeros.label_names
    assert pos(ones) - pos(zeros) == int((raw[labels] == -1).sum().sum())
    assert int(ignore.labels.value.isna().sum()) == int((raw[labels] == -1).sum().sum())
    assert set(zeros.images.view.dropna()) <= {"AP", "PA", "LATERAL", "LL", "RL"}
    sex = zeros.images.set_index("image_id")[["sex", "sex_source"]]
    assert (sex.sex_source[sex.sex.notna()] == "csv:chexpert_train.csv.gz").all()
    assert sex.sex_source[sex.sex.isna()].isna().all() and sex.sex.isna().any()  # "Unknown" sex: no source


def test_siim_rle_csv(tmp_path):
    t = load_dataset("siim", tmp_path, rle_csv=DATA / "siim-pneumothorax-train-rle.csv.gz")
    raw = pd.read_csv(DATA / "siim-pneumothorax-train-rle.csv.gz")
    raw.columns = [c.strip() for c in raw.columns]
    assert len(t.images) == raw.ImageId.nunique() == 12_047
    positive_ids = raw.loc[raw.EncodedPixels.str.strip() != "-1", "ImageId"].nunique()
    assert int(t.labels.value.sum()) == positive_ids
    assert len(t.annotations) == int((raw.EncodedPixels.str.strip() != "-1").sum())  # one instance per row


def test_siim_rle_decoding_by_hand():
    # 4×4 image, column-major: run of 2 at index 1, then 1 pixel 3 further on (index 6).
    m = decode_siim_rle("1 2 3 1", 4, 4)
    flat = m.T.ravel()  # back to column-major order
    assert np.flatnonzero(flat).tolist() == [1, 2, 6]
    assert not decode_siim_rle("-1", 4, 4).any()


def test_rsna_boxes_and_demographics(tmp_path):
    t = load_dataset("rsna", tmp_path, labels_csv=DATA / "kaggle_stage_2_train_labels.csv.zip",
                     headers_csv=DATA / "kaggle_stage_2_train_images_dicom_headers.csv.gz")
    raw = pd.read_csv(DATA / "kaggle_stage_2_train_labels.csv.zip")
    assert len(t.images) == 26_684 == raw.patientId.nunique()
    assert len(t.annotations) == int((raw.Target == 1).sum())
    assert t.images.sex.isin(["M", "F"]).all()
    assert (t.images.sex_source == "csv:kaggle_stage_2_train_images_dicom_headers.csv.gz").all()
    # five headers give ages of 148–155 years: reported, age set to missing, images kept; their DICOM
    # headers would be read for an age, but the files are not here (metadata only): one row says so
    ages = t.problems[t.problems.image_id.notna()]
    assert len(ages) == 5 and ages.problem.str.endswith("age set to missing").all()
    assert ages.row.ge(2).all() and ages.file.str.endswith("dicom_headers.csv.gz").all()
    assert t.problems.problem[t.problems.image_id.isna()].tolist() == [
        "5 of 5 DICOM files whose header was needed are not under the root (first: stage_2_train_images/"
        f"{ages.image_id.iloc[0]}.dcm); their sex, age and view from the header left missing"]
    assert t.images.age.isna().sum() == 5


def test_vindr_readers_and_labels(tmp_path):
    t = load_dataset("vindr", tmp_path, csv=DATA / "vinbigdata-train.csv.gz")
    assert len(t.images) == 15_000
    raw = pd.read_csv(DATA / "vinbigdata-train.csv.gz")
    assert raw.rad_id.nunique() == 17  # 17 radiologists read; 11 of them ever drew a box
    readers = t.annotations[t.annotations.reader != "gt"]
    assert readers.reader.nunique() == raw.loc[raw.class_name != "No finding", "rad_id"].nunique() == 11
    # the reference reader "gt" is the union of the radiologists' boxes of each positive finding
    gt = t.annotations[t.annotations.reader == "gt"]
    assert len(gt) == len(readers) == int(raw.x_min.notna().sum())
    maj_gt = load_dataset("vindr", tmp_path, csv=DATA / "vinbigdata-train.csv.gz", label_rule="majority").annotations
    maj_pos = load_dataset("vindr", tmp_path, csv=DATA / "vinbigdata-train.csv.gz", label_rule="majority").labels
    pos = set(map(tuple, maj_pos[maj_pos.value == 1][["image_id", "label"]].to_numpy()))
    maj_gt = maj_gt[maj_gt.reader == "gt"]
    assert 0 < len(maj_gt) < len(gt) and all(k in pos for k in zip(maj_gt.image_id, maj_gt.label))
    maj = load_dataset("vindr", tmp_path, csv=DATA / "vinbigdata-train.csv.gz", label_rule="majority")
    assert (maj.labels.value == 1).sum() <= (t.labels.value == 1).sum()


PADCHEST = DATA / "PADCHEST_chest_x_ray_images_labels_160K_01.02.19.csv.gz"
#: Findings counted below in the raw cells, independently of the adapter's parser.
PADCHEST_FINDINGS = ["pleural effusion", "cardiomegaly", "normal", "COPD signs", "nodule"]


def test_padchest_full_file(tmp_path):
    t = load_dataset("padchest", tmp_path, csv=PADCHEST, labels=PADCHEST_FINDINGS)
    raw = pd.read_csv(PADCHEST, usecols=["ImageID", "PatientID", "PatientSex_DICOM", "PatientBirth",
                                         "StudyDate_DICOM", "Projection", "Labels"])
    assert len(raw) == len(t.images) == 160_861  # every film kept: none has a bad ImageDir or list
    assert t.images.patient_id.nunique() == raw.PatientID.nunique()
    sexes = t.images.sex.value_counts(dropna=False)
    assert sexes["M"] == (raw.PatientSex_DICOM == "M").sum() == 80_920
    assert sexes["F"] == (raw.PatientSex_DICOM == "F").sum() == 79_919
    other = (raw.PatientSex_DICOM == "O").sum()
    assert t.problems.problem.str.endswith("sex set to missing").sum() == other == 18  # 4 blanks say nothing
    # a finding's films: its name between quotes, with or without the stray spaces of the file
    wide = t.labels.pivot(index="image_id", columns="label", values="value")
    empty = raw.Labels.isna() | raw.Labels.str.fullmatch(r"\[(\s*''\s*,?)*\]", na=False)
    for name in PADCHEST_FINDINGS:
        films = raw.Labels.str.contains(rf"'\s*{re.escape(name)}\s*'", regex=True, na=False)
        assert int(wide[name].sum()) == int(films.sum()), name
    assert int(wide["pleural effusion"].sum()) == 9_853 and int(wide["normal"].sum()) == 50_616
    assert int(wide["normal"].isna().sum()) == int(empty.sum()) == 880  # 103 blank cells, 777 "['']"
    assert t.problems.problem.str.endswith("labels set to missing").sum() == 880
    # age: the study's year minus the birth year, film by film
    age = (raw.StudyDate_DICOM // 10_000 - raw.PatientBirth).set_axis(raw.ImageID)
    np.testing.assert_array_equal(t.images.set_index("image_id").age.reindex(raw.ImageID), age)
    assert set(t.images.view) == set(raw.Projection) == {"PA", "L", "AP", "AP_horizontal", "COSTAL", "EXCLUDE",
                                                         "UNK"}


def test_padchest_default_keeps_every_label_as_written(tmp_path):
    """On the first 3,000 films (every label of the whole file would be 31 million rows)."""
    csv = tmp_path / "padchest.csv"
    pd.read_csv(PADCHEST, nrows=3_000).to_csv(csv, index=False)
    t = load_dataset("padchest", tmp_path, csv=csv)
    cells = pd.read_csv(csv).Labels.dropna()
    names = {n.strip() for cell in cells for n in ast.literal_eval(cell) if n.strip()}
    assert set(t.label_names) == names and len(t.labels) == 3_000 * len(names)
