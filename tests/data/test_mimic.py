"""MIMIC-CXR-JPG adapter on small files written as PhysioNet publishes them (gzipped CSVs, MIMIC-IV's
``hosp/patients.csv.gz``): paths, labels and the uncertainty policies, splits, demographics and
where each value came from, and every bad row as a problem row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cxrxai.data.adapters import ADAPTERS, load_dataset
from cxrxai.data.adapters._admissions import admission_demographics
from cxrxai.data.adapters._problems import Problems
from cxrxai.data.adapters.mimic import mimic_path
from cxrxai.errors import DataError, UnknownNameError

META = "mimic-cxr-2.0.0-metadata.csv.gz"
#: dicom_id, subject_id, study_id, ViewPosition, StudyDate
FILMS = [("d1", 10000032, 50414267, "PA", 21800506), ("d2", 10000032, 50414267, "LATERAL", 21800506),
         ("d3", 10000032, 53189527, "AP", 21850101), ("d4", 10000764, 57375967, "PA", 21320101),
         ("d5", 19999999, 58000000, None, 21500101), ("d6", 10000764, 59999999, "PA", 21330101)]


def _write(root: Path, *, films=FILMS, patients: bool = True, split_of=None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    meta = pd.DataFrame(films, columns=["dicom_id", "subject_id", "study_id", "ViewPosition", "StudyDate"])
    meta.assign(Rows=3056, Columns=2544, StudyTime=120000.0).to_csv(root / META, index=False)
    labels = pd.DataFrame({"subject_id": [10000032, 10000032, 10000764, 19999999],
                           "study_id": [50414267, 53189527, 57375967, 58000000],
                           "Edema": [1.0, -1.0, None, 0.0], "Pleural Effusion": [-1.0, 1.0, 0.0, None],
                           "No Finding": [None, None, None, 1.0]})
    labels.to_csv(root / "mimic-cxr-2.0.0-chexpert.csv.gz", index=False)
    labels.assign(Edema=[0.0, 0.0, 1.0, 0.0]).to_csv(root / "mimic-cxr-2.0.0-negbio.csv.gz", index=False)
    split_of = split_of or {"d1": "train", "d2": "train", "d3": "validate", "d4": "test", "d5": "test",
                            "d6": "test"}
    split = pd.DataFrame({"dicom_id": list(split_of), "study_id": 0, "subject_id": 0,
                          "split": list(split_of.values())})
    split.to_csv(root / "mimic-cxr-2.0.0-split.csv.gz", index=False)
    if patients:
        (root / "mimic-iv" / "hosp").mkdir(parents=True)
        patients = pd.DataFrame({"subject_id": [10000032, 10000764], "gender": ["F", "M"],
                                 "anchor_age": [52, 76], "anchor_year": [2180, 2132],
                                 "anchor_year_group": ["2014 - 2016", "2011 - 2013"], "dod": [None, None]})
        patients.to_csv(root / "mimic-iv" / "hosp" / "patients.csv.gz", index=False)
    return root


def _load(root: Path, **options):
    return load_dataset("mimic", root, mimic_iv=root / "mimic-iv", **options)


def test_films_paths_and_views_with_their_source(tmp_path):
    t = _load(_write(tmp_path))
    images = t.images.set_index("image_id")
    assert mimic_path(10000032, 50414267, "d1") == "files/p10/p10000032/s50414267/d1.jpg"
    assert images.at["d4", "path"] == "files/p10/p10000764/s57375967/d4.jpg"
    assert images.at["d1", "patient_id"] == "10000032" and images.at["d2", "view"] == "LATERAL"
    assert images.at["d1", "view_source"] == f"csv:{META}"
    assert images.at["d5", "view"] is None and images.at["d5", "view_source"] is None  # blank stays missing
    assert "mimic" in ADAPTERS
    assert t.label_names == ["No Finding", "Edema", "Pleural Effusion"]  # CheXpert's order


def test_uncertain_policies_and_blanks_as_chexpert(tmp_path):
    root = _write(tmp_path)

    def value(t, image, label):
        return t.labels.set_index(["image_id", "label"]).value[(image, label)]

    zeros, ones, ignore = (_load(root, uncertain=u) for u in ("zeros", "ones", "ignore"))
    assert value(zeros, "d1", "Edema") == 1 and value(zeros, "d1", "Pleural Effusion") == 0
    assert value(ones, "d1", "Pleural Effusion") == 1 and pd.isna(value(ignore, "d1", "Pleural Effusion"))
    assert value(zeros, "d4", "Edema") == 0 and value(ignore, "d4", "Edema") == 0  # blank: not mentioned = 0
    # both films of a study carry the study's labels
    assert value(ones, "d2", "Pleural Effusion") == 1 and value(zeros, "d3", "Edema") == 0
    assert value(_load(root, labeler="negbio"), "d4", "Edema") == 1
    with pytest.raises(UnknownNameError, match="uncertain"):
        _load(root, uncertain="maybe")
    with pytest.raises(UnknownNameError, match="labeler"):
        _load(root, labeler="chexbert")


def test_a_film_whose_study_has_no_labels_is_skipped_with_a_problem_row(tmp_path):
    t = _load(_write(tmp_path))
    assert "d6" not in set(t.images.image_id) and "d6" not in set(t.labels.image_id)
    row = t.problems[t.problems.image_id == "d6"]
    expected = "study 59999999 has no row in mimic-cxr-2.0.0-chexpert.csv.gz; image skipped"
    assert row.problem.tolist() == [expected]
    with pytest.raises(DataError, match="59999999"):
        _load(tmp_path, strict=True)


def test_official_split_maps_validate_to_val_and_reports_what_it_cannot(tmp_path):
    split_of = {"d1": "train", "d2": "train", "d3": "validate", "d4": "test", "d5": "holdout"}  # d6 absent
    t = _load(_write(tmp_path, split_of=split_of))
    split = t.images.set_index("image_id").split
    assert split.to_dict() == {"d1": "train", "d2": "train", "d3": "val", "d4": "test", "d5": None}
    expected = "split 'holdout' is not one of ['train', 'validate', 'test']; split set to missing"
    assert expected in set(t.problems.problem)


def test_patient_split_keeps_each_patient_in_one_split(tmp_path):
    t = _load(_write(tmp_path), split="patient", fractions=(0.5, 0.25, 0.25), seed=3)
    assert (t.images.groupby("patient_id").split.nunique() == 1).all()
    assert set(t.images.split) <= {"train", "val", "test"}
    with pytest.raises(UnknownNameError, match="split"):
        _load(tmp_path, split="random")


def test_sex_and_age_from_mimic_iv_with_their_sources(tmp_path):
    t = _load(_write(tmp_path))
    images = t.images.set_index("image_id")
    assert images.loc[["d1", "d3", "d4"], "sex"].tolist() == ["F", "F", "M"]
    assert images.loc[["d1", "d3", "d4"], "age"].tolist() == [52.0, 52.0, 76.0]  # anchor_age, per patient
    assert set(images.loc[["d1", "d4"], "sex_source"]) == {"csv:patients.csv.gz"}
    assert set(images.loc[["d1", "d4"], "age_source"]) == {"csv:patients.csv.gz"}
    assert images.at["d4", "age_bin"] == "60-80"
    # subject 19999999 is not in MIMIC-IV: sex and age stay missing, said once for the subject
    assert images.at["d5", "sex"] is None and images.at["d5", "sex_source"] is None
    assert np.isnan(images.at["d5", "age"]) and images.at["d5", "age_source"] is None
    expected = "subject 19999999 (1 films) is not in patients.csv.gz; sex and age left missing"
    assert expected in set(t.problems.problem)


def test_age_at_each_study_is_derived_from_the_anchor_year(tmp_path):
    t = _load(_write(tmp_path), age="study")
    images = t.images.set_index("image_id")
    # anchor_age 52 in 2180; the study of d3 is in 2185
    assert images.loc[["d1", "d3", "d4"], "age"].tolist() == [52.0, 57.0, 76.0]
    assert images.at["d3", "age_source"] == "derived:anchor_age+year(StudyDate)-anchor_year"


def test_without_mimic_iv_sex_and_age_are_missing_and_said_once(tmp_path):
    root = _write(tmp_path, films=FILMS[:5], patients=False)
    t = load_dataset("mimic", root, strict=True)  # a missing companion file is not a bad row: no raise
    assert t.images.sex.isna().all() and t.images.age.isna().all() and t.images.sex_source.isna().all()
    note = t.problems[t.problems.problem.str.startswith("no MIMIC-IV patients.csv")]
    assert len(note) == 1 and "pass mimic_iv=FOLDER" in note.problem.iloc[0]
    assert t.source == "MIMIC-CXR-JPG 2.0.0"


def test_a_patients_file_of_other_subjects_is_refused(tmp_path):
    root = _write(tmp_path)
    pd.DataFrame({"subject_id": [1], "gender": ["F"], "anchor_age": [40], "anchor_year": [2100]}) \
        .to_csv(root / "mimic-iv" / "hosp" / "patients.csv.gz", index=False)
    with pytest.raises(DataError, match="shares no subject_id"):
        _load(root)


def test_views_option_keeps_those_and_counts_the_rest(tmp_path):
    t = _load(_write(tmp_path), views="PA,AP")
    assert set(t.images.view) == {"PA", "AP"}
    note = t.problems[t.problems.problem.str.startswith("views")].problem.tolist()
    assert note == ["views ['PA', 'AP'] kept: 2 films of other views left out (LATERAL 1, blank 1)"]


def test_missing_files_and_columns_name_the_file(tmp_path):
    root = _write(tmp_path)
    (root / "mimic-cxr-2.0.0-split.csv.gz").unlink()
    with pytest.raises(DataError, match="mimic-cxr-2.0.0-split.csv"):
        _load(root)
    assert len(_load(root, split="patient").images) == 5
    pd.DataFrame({"dicom_id": ["x"], "subject_id": [1]}).to_csv(root / META, index=False)
    with pytest.raises(DataError, match="study_id"):
        _load(root, split="patient")


# --------------------------------------------------------------------------- race and insurance

#: MIMIC-IV 2.2's hosp/admissions.csv columns, as published (1.0 names ``race`` ``ethnicity``).
ADMISSION_COLUMNS = ["subject_id", "hadm_id", "admittime", "dischtime", "deathtime", "admission_type",
                     "admit_provider_id", "admission_location", "discharge_location", "insurance", "language",
                     "marital_status", "race", "edregtime", "edouttime", "hospital_expire_flag"]


def _admissions(root: Path, *, race_column: str = "race") -> None:
    """Subject 10000032: three stays, listed out of time order — White (and once UNKNOWN, MIMIC's
    word for not recorded), insured by Other first, Medicaid last; 10000764: one stay; 10099999:
    a stay of a subject without a film; 19999999 has no stay."""
    stays = [(10000032, 22841357, "2180-06-26 18:27:00", "Medicaid", "WHITE"),
             (10000032, 22595853, "2180-05-06 22:23:00", "Other", "WHITE"),
             (10000032, 25742920, "2180-06-01 10:00:00", "Medicaid", "UNKNOWN"),
             (10000764, 27897940, "2132-10-14 23:31:00", "Medicare", "BLACK/AFRICAN AMERICAN"),
             (10099999, 20000001, "2150-01-01 00:00:00", "Private", "ASIAN")]
    rows = [{"subject_id": s, "hadm_id": h, "admittime": t, "dischtime": t, "admission_type": "URGENT",
             "admission_location": "TRANSFER FROM HOSPITAL", "discharge_location": "HOME", "insurance": i,
             "language": "ENGLISH", "marital_status": "WIDOWED", "race": r, "hospital_expire_flag": 0}
            for s, h, t, i, r in stays]
    frame = pd.DataFrame(rows).reindex(columns=ADMISSION_COLUMNS).rename(columns={"race": race_column})
    frame.to_csv(root / "mimic-iv" / "hosp" / "admissions.csv.gz", index=False)


def test_race_and_insurance_from_mimic_iv_admissions_by_subject(tmp_path):
    root = _write(tmp_path)
    _admissions(root)
    t = _load(root)
    images = t.images.set_index("image_id")
    assert images.loc[["d1", "d3", "d4"], "race"].tolist() == ["WHITE", "WHITE", "BLACK/AFRICAN AMERICAN"]
    assert images.at["d4", "insurance"] == "Medicare"
    assert images.at["d1", "insurance"] is None  # Other, then Medicaid: the stays disagree
    assert images.at["d5", "race"] is None and images.at["d5", "insurance"] is None  # no stay
    assert images.at["d1", "race_source"] == "csv:admissions.csv.gz"
    assert images.at["d1", "insurance_source"] is None
    notes = set(t.problems.problem)
    assert ("insurance differs between the admissions of 1 of 2 subjects with films (e.g. 10000032: Other, "
            "Medicaid); insurance left missing for their 3 films (admission='agree'; 'first' or 'last' takes "
            "the earliest or latest admission's)") in notes
    assert ("1 subject(s) (1 films) have no admission in admissions.csv.gz (e.g. 19999999); race and "
            "insurance left missing") in notes
    first = _load(root, admission="first").images.set_index("image_id")
    last = _load(root, admission="last").images.set_index("image_id")
    assert (first.at["d1", "insurance"], last.at["d1", "insurance"]) == ("Other", "Medicaid")
    with pytest.raises(UnknownNameError, match="admission"):
        _load(root, admission="mode")


def test_an_unreadable_admission_is_a_problem_row_not_a_silent_drop(tmp_path):
    """A subject_id that is not a number leaves its admission out, an admittime that is not a date
    keeps it (ordered after the dated ones); each is a problem row with its spreadsheet row, and
    strict refuses the file (read alone: the films' own bad rows would be refused first)."""
    root = _write(tmp_path)
    _admissions(root)
    path = root / "mimic-iv" / "hosp" / "admissions.csv.gz"
    stays = pd.read_csv(path, dtype=str, keep_default_na=False)
    bad = stays.iloc[[3, 3]].assign(subject_id=["S10000764", ""])  # spreadsheet rows 7 and 8
    stays.loc[3, "admittime"] = "sometime in 2132"  # spreadsheet row 5: 10000764's one stay
    pd.concat([stays, bad]).to_csv(path, index=False)
    t = _load(root)
    rows = t.problems.set_index("row").problem
    assert rows[7] == "subject_id 'S10000764' is not a number; admission left out"
    assert rows[8] == "no subject_id; admission left out"
    assert rows[5] == ("admittime 'sometime in 2132' is not a date; admission kept, ordered after the "
                       "subject's dated admissions")
    assert t.images.set_index("image_id").at["d4", "race"] == "BLACK/AFRICAN AMERICAN"  # kept
    with pytest.raises(DataError, match="admissions.csv.gz, row 7: subject_id"):
        admission_demographics(path, path.parent, pd.Series([10000764]), "agree", Problems(strict=True))


def test_race_from_older_releases_ethnicity_column(tmp_path):
    root = _write(tmp_path)
    _admissions(root, race_column="ethnicity")
    images = _load(root).images.set_index("image_id")
    assert images.at["d4", "race"] == "BLACK/AFRICAN AMERICAN"
    assert images.at["d4", "race_source"] == "csv:admissions.csv.gz:ethnicity"


def test_subgroup_reports_by_race_and_insurance(tmp_path, capsys):
    from cxrxai.cli import main
    from cxrxai.reports import run_report
    from cxrxai.store import open_store

    root = _write(tmp_path / "mimic")
    _admissions(root)
    preds = pd.DataFrame({"dicom_id": [f"d{k}" for k in (1, 2, 3, 4, 6)],
                          "prob_Edema": [0.9, 0.2, 0.8, 0.7, 0.1]})
    preds.to_csv(tmp_path / "preds.csv", index=False)
    pd.DataFrame({"label": ["Edema"], "threshold": [0.5]}).to_csv(tmp_path / "thr.csv", index=False)
    store = tmp_path / "s.duckdb"
    assert main(["import-predictions", "--dataset", "mimic", "--root", str(root), "--data-option",
                 f"mimic_iv={root / 'mimic-iv'}", "--predictions", str(tmp_path / "preds.csv"),
                 "--thresholds", str(tmp_path / "thr.csv"), "--name", "m", "--store", str(store)]) == 0
    with open_store(store) as s:
        by_race = run_report(s, "subgroup-tpr", "m", by="race", split="all")
        by_insurance = run_report(s, "subgroup-tpr", "m", by="insurance", split="all")
    assert set(by_race["race"]) == {"WHITE", "BLACK/AFRICAN AMERICAN"}
    assert set(by_insurance["insurance"]) == {"Medicare"}
    capsys.readouterr()
    assert main(["report", "subgroup-tpr", "--store", str(store), "--option", "by=race", "--option",
                 "split=all"]) == 0
    assert "BLACK/AFRICAN AMERICAN" in capsys.readouterr().out


def test_metadata_headers_with_spaces_around_them_are_read(tmp_path):
    root = _write(tmp_path)
    meta = pd.read_csv(root / META)
    padded = meta.rename(columns={"ViewPosition": "ViewPosition ", "dicom_id": " dicom_id"})
    padded.to_csv(root / META, index=False)
    t = _load(root)
    assert t.images.set_index("image_id").at["d2", "view"] == "LATERAL"
    assert any("have spaces around them" in p for p in t.problems.problem)
