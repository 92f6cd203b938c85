"""Sex, age and view read from DICOM headers for every dataset whose images are DICOM files, with
where each value came from; a CSV value wins over the tag; a bad tag is a problem row; a subgroup
report without groups says why (in the library, on the command line, on the Subgroups page) instead
of printing nothing.

The files are real DICOMs written with pydicom in RSNA's published layout (64 × 64 pixels)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cxrxai.cli import main
from cxrxai.data.adapters import load_dataset
from cxrxai.errors import DataError, StoreError, UnknownNameError
from cxrxai.reports import run_report
from cxrxai.store import open_store, write_store

pytestmark = pytest.mark.filterwarnings("ignore:Invalid value for VR AS")  # pydicom on writing the bad age
#: patientId → (PatientSex, PatientAge, ViewPosition); None leaves the tag out of the header.
HEADERS = {
    "p0": ("F", "058Y", "PA"),
    "p1": ("M", "006M", "AP"),
    "p2": (None, None, None),
    "p3": ("O", "XXXY", "PA"),  # sex "other" and an unreadable age: problems, values left missing
}


def write_dicom(path: Path, *, sex: str | None, age: str | None, view: str | None) -> Path:
    """A 64 × 64 8-bit MONOCHROME2 CR image carrying only the tags given."""
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, SecondaryCaptureImageStorage, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = SecondaryCaptureImageStorage
    meta.MediaStorageSOPInstanceUID = generate_uid(entropy_srcs=[path.name])
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset(str(path), {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
    ds.Modality, ds.PatientID = "CR", path.stem
    for keyword, value in (("PatientSex", sex), ("PatientAge", age), ("ViewPosition", view)):
        if value is not None:
            setattr(ds, keyword, value)
    ds.Rows = ds.Columns = 64
    ds.SamplesPerPixel, ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 1, 8, 8, 7, 0
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.PixelData = (np.arange(64 * 64) % 251).astype(np.uint8).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.save_as(str(path), enforce_file_format=True)
    return path


def rsna_root(root: Path, headers: dict = HEADERS) -> Path:
    for pid, (sex, age, view) in headers.items():
        write_dicom(root / "stage_2_train_images" / f"{pid}.dcm", sex=sex, age=age, view=view)
    rows = [{"patientId": pid, "x": 10 if k % 2 else None, "y": 10 if k % 2 else None,
             "width": 20 if k % 2 else None, "height": 20 if k % 2 else None, "Target": k % 2}
            for k, pid in enumerate(headers)]
    pd.DataFrame(rows).to_csv(root / "stage_2_train_labels.csv", index=False)
    return root


def test_rsna_demographics_come_from_the_dicom_headers(tmp_path):
    t = load_dataset("rsna", rsna_root(tmp_path))
    img = t.images.set_index("image_id")
    assert img.loc["p0", ["sex", "age", "view"]].tolist() == ["F", 58.0, "PA"]
    assert img.loc["p1", ["sex", "view"]].tolist() == ["M", "AP"]
    assert img.loc["p1", "age"] == pytest.approx(0.5)  # "006M": six months
    assert img.loc["p0", ["sex_source", "age_source", "view_source"]].tolist() == \
        ["dicom:PatientSex", "dicom:PatientAge", "dicom:ViewPosition"]
    assert img.loc["p0", "age_bin"] is not None and pd.notna(img.loc["p0", "age_bin"])
    # no tag: missing, with no source
    assert img.loc["p2", ["sex", "age", "view"]].isna().all()
    assert img.loc["p2", ["sex_source", "age_source", "view_source"]].isna().all()
    # bad tags: problem rows naming the DICOM file, values left missing, the view still read
    assert img.loc["p3", ["sex", "age"]].isna().all() and img.loc["p3", "view"] == "PA"
    bad = t.problems[t.problems.image_id == "p3"]
    assert len(bad) == 2 and bad.file.str.endswith("p3.dcm").all() and bad.row.isna().all()
    assert bad.problem.str.contains("'O'").any() and bad.problem.str.endswith("sex set to missing").any()
    assert bad.problem.str.contains("XXXY").any() and bad.problem.str.endswith("age set to missing").any()
    record = t.config["demographics"]["sex"]
    assert (record["images"], record["missing"], record["csv"], record["dicom"]) == (4, 2, 0, 2)
    assert "PatientSex" in record["why"] and "headers_csv" in record["supply"]


def test_a_csv_value_wins_over_the_tag_and_the_tag_fills_only_the_missing(tmp_path):
    root = rsna_root(tmp_path)
    pd.DataFrame({"patientId": ["p0", "p1"], "PatientSex": ["M", "F"], "PatientAge": [None, 40]}).to_csv(
        root / "headers.csv", index=False)
    img = load_dataset("rsna", root, headers_csv=root / "headers.csv").images.set_index("image_id")
    # p0: the CSV's sex (M, the header says F); its blank age comes from the header
    assert img.loc["p0", ["sex", "sex_source"]].tolist() == ["M", "csv:headers.csv"]
    assert img.loc["p0", ["age", "age_source"]].tolist() == [58.0, "dicom:PatientAge"]
    assert img.loc["p1", ["sex", "age", "age_source"]].tolist() == ["F", 40.0, "csv:headers.csv"]
    assert img.loc["p1", ["view", "view_source"]].tolist() == ["AP", "dicom:ViewPosition"]


def test_any_folder_of_dicoms_and_a_missing_file(tmp_path):
    write_dicom(tmp_path / "a.dcm", sex="F", age="071Y", view="AP")
    write_dicom(tmp_path / "b.DICOM", sex="M", age=None, view=None)
    pd.DataFrame({"path": ["a.dcm", "b.DICOM", "gone.dcm"], "sex": [None, "F", None],
                  "Effusion": [1, 0, 0]}).to_csv(tmp_path / "cases.csv", index=False)
    t = load_dataset("folder", tmp_path, csv=tmp_path / "cases.csv", labels="Effusion")
    img = t.images.set_index("image_id")
    assert img.loc["a.dcm", ["sex", "age", "view"]].tolist() == ["F", 71.0, "AP"]
    assert img.loc["a.dcm", "sex_source"] == "dicom:PatientSex"
    assert img.loc["b.DICOM", ["sex", "sex_source"]].tolist() == ["F", "csv:cases.csv"]
    assert img.loc["gone.dcm", ["sex", "age", "view"]].isna().all()
    absent = t.problems[t.problems.problem.str.contains("not under the root")]
    assert len(absent) == 1 and absent.problem.iloc[0].startswith("1 of 3 DICOM files")
    assert "gone.dcm" in absent.problem.iloc[0]
    off = load_dataset("folder", tmp_path, csv=tmp_path / "cases.csv", labels="Effusion", dicom_headers=False)
    assert off.images.set_index("image_id").loc["a.dcm", ["sex", "sex_source"]].isna().all()


def test_dicom_ages_in_weeks_and_days_are_ages(tmp_path):
    """PatientAge is nnnD, nnnW, nnnM or nnnY (DICOM PS3.5, VR AS): a newborn's "002W" is 2 weeks."""
    ages = {"w": "002W", "d": "010D", "m": "006M", "y": "058Y"}
    root = rsna_root(tmp_path, {pid: ("F", age, "AP") for pid, age in ages.items()})
    t = load_dataset("rsna", root)
    img = t.images.set_index("image_id")
    assert img.loc[list(ages), "age"].tolist() == pytest.approx([14 / 365, 10 / 365, 0.5, 58.0])
    assert (img.loc[list(ages), "age_source"] == "dicom:PatientAge").all()
    assert img.loc["w", "age_bin"] == "0-20" and t.problems.empty


def test_dicom_files_named_without_a_suffix_give_their_headers(tmp_path):
    """The film reader reads a file by its DICM magic whatever its name (RSNA-style UIDs, IM-0001):
    its header's sex, age and view are read too, not said to be missing."""
    write_dicom(tmp_path / "scans" / "1.2.840.113619.2.55", sex="F", age="071Y", view="AP")
    write_dicom(tmp_path / "scans" / "IM-0001-0001", sex="M", age="040Y", view="PA")
    png = tmp_path / "scans" / "film.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n")  # a PNG name is never opened for a header
    pd.DataFrame({"path": ["scans/1.2.840.113619.2.55", "scans/IM-0001-0001", "scans/film.png"],
                  "Effusion": [1, 0, 0]}).to_csv(tmp_path / "cases.csv", index=False)
    t = load_dataset("folder", tmp_path, csv=tmp_path / "cases.csv", labels="Effusion")
    img = t.images.set_index("image_id")
    assert img.loc["scans/1.2.840.113619.2.55", ["sex", "age", "view"]].tolist() == ["F", 71.0, "AP"]
    assert img.loc["scans/IM-0001-0001", ["sex_source", "age_source", "view_source"]].tolist() == \
        ["dicom:PatientSex", "dicom:PatientAge", "dicom:ViewPosition"]
    assert img.loc["scans/film.png", ["sex", "sex_source"]].isna().all() and t.problems.empty
    assert t.config["demographics"]["sex"]["dicom"] == 2


def test_strict_stops_at_a_bad_tag(tmp_path):
    with pytest.raises(DataError, match="p3.dcm.*'O'"):
        load_dataset("rsna", rsna_root(tmp_path), strict=True)


# --------------------------------------------------------------------------- the subgroup reports

@pytest.fixture
def sexless_store(tmp_path) -> Path:
    """An RSNA layout whose headers carry no sex, with predictions imported for every image."""
    root = rsna_root(tmp_path / "rsna", {f"q{k}": (None, f"0{40 + k}Y", "PA") for k in range(6)})
    preds = pd.DataFrame({"patientId": [f"q{k}" for k in range(6)],
                          "prob_Pneumonia": np.linspace(0.1, 0.9, 6)})
    preds.to_csv(tmp_path / "preds.csv", index=False)
    pd.DataFrame({"label": ["Pneumonia"], "threshold": [0.5]}).to_csv(tmp_path / "thr.csv", index=False)
    store = tmp_path / "s.duckdb"
    assert main(["import-predictions", "--dataset", "rsna", "--root", str(root), "--predictions",
                 str(tmp_path / "preds.csv"), "--thresholds", str(tmp_path / "thr.csv"), "--name", "m",
                 "--store", str(store)]) == 0
    return store


def test_a_subgroup_report_without_groups_says_why(sexless_store, capsys):
    with open_store(sexless_store) as store:
        with pytest.raises(StoreError) as err:
            run_report(store, "subgroup-tpr", "m", by="sex", split="all")
        assert len(run_report(store, "subgroup-tpr", "m", by="age_bin", split="all"))  # ages are there
        sources = store.images(columns=["sex_source", "age_source", "view_source"])
    assert sources.sex_source.isna().all() and (sources.age_source == "dicom:PatientAge").all()
    assert (sources.view_source == "dicom:ViewPosition").all()  # the store keeps where each value came from
    text = str(err.value)
    assert "no image of dataset 'rsna' has a sex (0 of 6)" in text
    assert "PatientSex" in text and "headers_csv=FILE" in text
    capsys.readouterr()
    code = main(["report", "subgroup-tpr", "--store", str(sexless_store), "--option", "by=sex",
                 "--option", "split=all"])
    out = capsys.readouterr()
    assert code == 2 and "no image of dataset 'rsna' has a sex (0 of 6)" in out.err and not out.out.strip()


def _localization_store(path: Path, sexes: dict[str, str | None]) -> Path:
    """A store with Nodule localization scores of six cases: i0–i2 men, i3–i5 women (``sexes``); the
    men's positives are true positives, the women's two positives were not predicted."""
    from cxrxai.store import write_store

    ids = list(sexes)
    with write_store(path, fresh=True) as w:
        w.put_dataset("d", source="test", labels=["Nodule"], root=str(path.parent), config={})
        w.put_images(pd.DataFrame({"image_id": ids, "dataset": "d", "path": [f"{i}.png" for i in ids],
                                   "sex": list(sexes.values()), "split": "test"}))
        w.put_table("localization", pd.DataFrame({
            "model_id": "m", "image_id": ids, "label": "Nodule", "source": "explainer", "method": "gradcam",
            "params_key": "{}", "reader": "gt", "gt_positive": [True, True, False, True, True, False],
            "predicted": [True, True, False, False, False, False],
            "roc_auc": [0.9, 0.7, np.nan, 0.8, 0.6, np.nan]}))
        w.publish()
    return path


def test_explanation_auc_by_sex_shows_a_group_without_true_positives(tmp_path):
    sexes = dict(zip([f"i{k}" for k in range(6)], "MMMFFF"))
    with open_store(_localization_store(tmp_path / "s.duckdb", sexes)) as store:
        out = run_report(store, "explanation-auc-subgroups", "m", by="sex", method="gradcam").set_index("sex")
    assert out.loc["M", "n"] == 2 and out.loc["M", "mean"] == pytest.approx(0.8)
    assert pd.isna(out.loc["M", "note"])
    assert out.loc["F", "n"] == 0 and pd.isna(out.loc["F", "mean"])
    note = "no true positive: 2 positive case(s) scored, the model predicted none of them"
    assert out.loc["F", "note"] == note


def test_explanation_auc_by_sex_without_any_sex_says_why(tmp_path):
    with open_store(_localization_store(tmp_path / "s.duckdb", {f"i{k}": None for k in range(6)})) as store:
        with pytest.raises(StoreError, match=r"no image of dataset 'd' has a sex \(0 of 2\).*no source"):
            run_report(store, "explanation-auc-subgroups", "m", by="sex", method="gradcam")


def test_the_subgroups_page_shows_the_reason(sexless_store):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120)
    at.session_state["store_path"] = str(sexless_store)
    at.run()
    at.switch_page("pages/subgroups.py").run()
    assert not at.exception, at.exception
    shown = [m.value for m in [*at.info, *at.warning]]
    reason = re.compile(r"no image of dataset 'rsna' has a sex \(0 of \d+\).*headers_csv=FILE")
    assert any(reason.search(m) for m in shown), shown  # the page evaluates the test split: 0 of its images


def test_a_grouping_the_store_lacks_names_the_ones_it_has_and_how_to_get_it(sexless_store, capsys):
    with open_store(sexless_store) as store:
        for by in ("race", "insurance"):
            with pytest.raises(StoreError) as err:
                run_report(store, "subgroup-tpr", "m", by=by, split="all")
            text = str(err.value)
            assert re.search(f"none of these [0-9,]+ images records {by}", text)
            assert "groupings it has: age_bin, view" in text  # no sex: the headers carry none
            assert "admissions.csv" in text and "mimic_iv=" in text
        with pytest.raises(UnknownNameError, match="grouping 'religion'; allowed: .*race.*insurance"):
            run_report(store, "subgroup-tpr", "m", by="religion", split="all")
    code = main(["report", "subgroup-tpr", "--store", str(sexless_store), "--option", "by=race",
                 "--option", "split=all"])
    out = capsys.readouterr()
    assert code == 2 and "groupings it has: age_bin, view" in out.err and "KeyError" not in out.err


def test_a_store_from_before_race_and_insurance_says_how_to_get_them(tmp_path):
    import duckdb

    from cxrxai.store._schema import MIGRATIONS

    path = tmp_path / "v7.duckdb"
    con = duckdb.connect(str(path))
    for v in range(1, 8):
        for ddl in MIGRATIONS[v]:
            con.execute(ddl)
    con.execute("INSERT INTO meta VALUES ('schema_version', '7')")
    con.execute("INSERT INTO datasets (dataset, source) VALUES ('old', 'nih')")
    con.execute("INSERT INTO images (image_id, dataset, sex, split) VALUES ('a', 'old', 'F', 'test'), "
                "('b', 'old', 'M', 'test')")
    con.execute("INSERT INTO models (model_id, arch, labels, spec) VALUES ('m', 'x', ['Edema'], '{}')")
    con.execute("INSERT INTO predictions VALUES ('m', 'a', 'Edema', 0.0, 0.7), ('m', 'b', 'Edema', 0.0, 0.2)")
    con.execute("INSERT INTO thresholds (model_id, label, threshold, method) VALUES ('m', 'Edema', 0.5, 'f')")
    con.execute("INSERT INTO labels VALUES ('a', 'Edema', 1), ('b', 'Edema', 0)")
    con.close()
    with open_store(path) as store:
        assert len(run_report(store, "subgroup-tpr", "m", by="sex"))  # read as it is
        with pytest.raises(StoreError, match="none of these [0-9,]+ images records insurance.*groupings it has: sex"):
            run_report(store, "subgroup-tpr", "m", by="insurance")


def test_explanation_auc_by_race_reads_the_stored_race(tmp_path):
    path = _localization_store(tmp_path / "s.duckdb", dict(zip([f"i{k}" for k in range(6)], "MMMFFF")))
    with write_store(path) as w:
        w.put_images(pd.DataFrame({"image_id": [f"i{k}" for k in range(6)], "dataset": "d",
                                   "path": [f"i{k}.png" for k in range(6)], "split": "test",
                                   "race": ["WHITE"] * 3 + ["ASIAN"] * 3}))
        w.publish()
    with open_store(path) as store:
        out = run_report(store, "explanation-auc-subgroups", "m", by="race", method="gradcam").set_index("race")
    assert out.loc["WHITE", "n"] == 2 and out.loc["WHITE", "mean"] == pytest.approx(0.8)
