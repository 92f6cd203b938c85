"""PadChest adapter on a small CSV written as PadChest publishes it (gzipped, its column names,
label lists as Python-style strings with the stray spaces and empty names the real file has)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cxrxai.data.adapters import ADAPTERS, load_dataset
from cxrxai.data.adapters.padchest import PADCHEST_CSV, parse_label_list
from cxrxai.errors import DataError, UnknownNameError

#: ImageID, ImageDir, PatientID, sex, birth, study date, projection, labels
ROWS = [("a.png", 0, "p1", "F", 1930.0, 20140915, "PA", "['pleural effusion', ' cardiomegaly']"),
        ("b.png", 0, "p1", "F", 1930.0, 20140915, "L", "['normal']"),
        ("c.png", 12, "p2", "M", 1960.0, 20150101, "AP_horizontal", "['COPD signs', 'pleural effusion']"),
        ("d.png", 12, "p3", "O", 1975.0, 20160302, "PA", "['']"),
        ("e.png", 54, "p4", "M", None, 20160302, "PA", None),
        ("f.png", 54, "p5", "F", 2017.0, 20160302, "PA", "['normal'"),
        ("g.png", None, "p6", "M", 1950.0, 20160302, "PA", "['cardiomegaly']"),
        ("h.png", 3, "p7", "F", 1950.0, 2016, "COSTAL", "['cardiomegaly']")]


def _write(root: Path, rows=ROWS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(rows, columns=["ImageID", "ImageDir", "PatientID", "PatientSex_DICOM", "PatientBirth",
                                     "StudyDate_DICOM", "Projection", "Labels"])
    df.insert(0, "Unnamed: 0", range(len(df)))
    df = df.assign(StudyID="s", MethodLabel="Physician", Report="sin hallazg", BitsStored_DICOM=12)
    df.to_csv(root / (PADCHEST_CSV + ".gz"), index=False)
    return root


def _problem(t, image_id: str) -> list[str]:
    return t.problems.loc[t.problems.image_id == image_id, "problem"].tolist()


def test_labels_keep_padchests_names_stripped_case_kept(tmp_path):
    t = load_dataset("padchest", _write(tmp_path))
    assert "padchest" in ADAPTERS
    assert t.label_names == ["cardiomegaly", "COPD signs", "normal", "pleural effusion"]
    wide = t.labels.pivot(index="image_id", columns="label", values="value")
    assert wide.loc["a.png"].to_dict() == {"cardiomegaly": 1, "COPD signs": 0, "normal": 0,
                                           "pleural effusion": 1}
    assert wide.loc["c.png", "COPD signs"] == 1 and wide.loc["b.png", "normal"] == 1


def test_blank_and_empty_lists_leave_labels_missing_unreadable_ones_skip_the_film(tmp_path):
    t = load_dataset("padchest", _write(tmp_path))
    wide = t.labels.pivot(index="image_id", columns="label", values="value")
    assert wide.loc["d.png"].isna().all() and wide.loc["e.png"].isna().all()
    assert _problem(t, "d.png")[-1] == "no labels (Labels \"['']\"); labels set to missing"
    assert _problem(t, "e.png") == ["no labels (Labels blank); labels set to missing"]
    assert "f.png" not in set(t.images.image_id) and "f.png" not in set(t.labels.image_id)
    assert _problem(t, "f.png")[-1] == "Labels \"['normal'\" is not a list of names; image skipped"
    with pytest.raises(DataError, match="row 8: ImageDir blank"):
        load_dataset("padchest", tmp_path, strict=True)


def test_parse_label_list_reads_the_published_cells():
    assert parse_label_list("['pleural effusion', ' cardiomegaly', '']") == ["pleural effusion",
                                                                             "cardiomegaly"]
    assert parse_label_list('["loc \\\'x\\\'", \'b\']') == ["loc 'x'", "b"]  # escapes: the slow path
    assert parse_label_list("['a', 2]") is None and parse_label_list("normal") is None
    assert parse_label_list(float("nan")) == [] and parse_label_list("[]") == []


def test_sex_age_and_view_with_their_sources(tmp_path):
    t = load_dataset("padchest", _write(tmp_path))
    images = t.images.set_index("image_id")
    assert images.loc[["a.png", "c.png"], "sex"].tolist() == ["F", "M"]
    assert images.at["d.png", "sex"] is None and images.at["d.png", "sex_source"] is None
    assert _problem(t, "d.png")[0] == "sex 'O' is not one of M, F (male, female); sex set to missing"
    assert images.at["a.png", "sex_source"] == f"csv:{PADCHEST_CSV}.gz"
    # 2014 − 1930, 2015 − 1960: the study's year minus the birth year
    assert images.loc[["a.png", "c.png"], "age"].tolist() == [84.0, 55.0]
    assert images.at["a.png", "age_source"] == "derived:StudyDate_DICOM-PatientBirth"
    assert np.isnan(images.at["e.png", "age"]) and images.at["e.png", "age_source"] is None  # no birth year
    assert images.at["c.png", "view"] == "AP_horizontal"
    assert images.at["c.png", "view_source"] == f"csv:{PADCHEST_CSV}.gz"


def test_bad_dates_and_ages_become_missing_with_a_problem_row(tmp_path):
    rows = ROWS + [("i.png", 3, "p8", "F", 2017.0, 20160302, "PA", "['normal']")]
    t = load_dataset("padchest", _write(tmp_path, rows))
    images = t.images.set_index("image_id")
    assert np.isnan(images.at["h.png", "age"])  # StudyDate 2016 is no yyyymmdd date
    assert _problem(t, "h.png") == ["StudyDate_DICOM '2016' is not a yyyymmdd date; age set to missing"]
    assert np.isnan(images.at["i.png", "age"])  # born the year after the study
    assert _problem(t, "i.png") == ["absurd age -1.0 (allowed 0–120 years); age set to missing"]


def test_film_paths_in_numbered_folders_or_flat(tmp_path):
    folders = load_dataset("padchest", _write(tmp_path / "a")).images.set_index("image_id").path
    assert folders["a.png"] == "0/a.png" and folders["c.png"] == "12/c.png"
    t = load_dataset("padchest", tmp_path / "a")
    assert "g.png" not in set(t.images.image_id)  # no ImageDir: the film cannot be found
    assert _problem(t, "g.png") == ["ImageDir blank is not a folder number; image skipped"]
    flat_root = _write(tmp_path / "b")
    (flat_root / "a.png").write_bytes(b"")
    flat = load_dataset("padchest", flat_root).images.set_index("image_id").path
    assert flat["a.png"] == "a.png" and flat["g.png"] == "g.png"  # no ImageDir needed
    (flat_root / "7").mkdir()  # a numbered folder: the unzipped layout
    assert load_dataset("padchest", flat_root).images.set_index("image_id").path["a.png"] == "0/a.png"
    forced = load_dataset("padchest", flat_root, layout="flat").images.set_index("image_id").path
    assert forced["a.png"] == "a.png"
    with pytest.raises(UnknownNameError, match="layout"):
        load_dataset("padchest", flat_root, layout="zip")


def test_labels_and_views_options(tmp_path):
    root = _write(tmp_path)
    t = load_dataset("padchest", root, labels="pleural effusion,normal", views="PA,L")
    assert t.label_names == ["pleural effusion", "normal"] and set(t.labels.label) == set(t.label_names)
    assert set(t.images.view) == {"PA", "L"}
    note = t.problems[t.problems.image_id.isna()].problem.tolist()
    assert note == ["views ['PA', 'L'] kept: 2 films of other views left out (AP_horizontal 1, COSTAL 1)"]
    with pytest.raises(DataError, match="Effusion"):
        load_dataset("padchest", root, labels=["Effusion"])


def test_missing_file_or_column_names_it(tmp_path):
    with pytest.raises(DataError, match="PADCHEST"):
        load_dataset("padchest", tmp_path)
    csv = tmp_path / "pc.csv"
    pd.DataFrame({"ImageID": ["a.png"], "Labels": ["['normal']"]}).to_csv(csv, index=False)
    with pytest.raises(DataError, match="PatientSex_DICOM"):
        load_dataset("padchest", tmp_path, csv=csv)
