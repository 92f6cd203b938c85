"""The data audit (``audit-data``, the Overview's Data section) on a small store written with the
StoreWriter the way a precompute writes one: every number below is counted by hand from the rows."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd
import pytest
from PIL import Image

from cxrxai.audit import AS_IS, action, audit_store, reason, to_frame, to_records, to_text
from cxrxai.cli import main
from cxrxai.data.io import read_image
from cxrxai.errors import DataError, UnknownNameError
from cxrxai.store import open_store, write_store
from cxrxai.store._schema import MIGRATIONS

CSV, SEX_DICOM, VIEW_DICOM, VIEW_RULE = "csv:Data_Entry_2017.csv", "dicom:PatientSex", "dicom:ViewPosition", \
    "derived:file name"
BIT_NOTE = "16-bit PNG (sBIT 12) rescaled to 8 bits by its 0–4095 range"
EXIF_NOTE = "EXIF orientation 6 applied (rotated 90° clockwise)"
RGB_NOTE = "RGB converted to grey (equal channels)"
UNKNOWN_LABEL = "unknown label(s) ['Foo']; allowed: ['Atelectasis', 'Effusion']; image skipped"
UNRECORDED = ("no label matches recorded: the store was built before cxrxai recorded them; re-run "
              "precompute to record them")
IMAGES = "/data/nih/images"
ADMISSIONS_ONLY = ("only the mimic layout reads it, from MIMIC-IV's admissions.csv(.gz) "
                   "(--data-option mimic_iv=DIR)")


def _nih_images() -> pd.DataFrame:
    """20 images: 10 train, 4 val, 6 test; sex known for 18 (15 from the CSV, 3 from DICOM), age
    for 16 (15 from the CSV, 1 with no source recorded), view for all (12 DICOM, 8 derived);
    reader notes: 3 rescaled, 2 turned by EXIF, 1 channel conversion, 14 read as is."""
    ids = [f"i{k:02d}" for k in range(20)]
    sex = ["F", "M"] * 9 + [None, None]
    sex_source = [CSV] * 15 + [SEX_DICOM] * 3 + [None, None]
    age = [50.0] * 16 + [None] * 4
    age_source = [CSV] * 15 + [None] * 5
    view_source = [VIEW_DICOM] * 12 + [VIEW_RULE] * 8
    notes = [BIT_NOTE] * 3 + [EXIF_NOTE] * 2 + [RGB_NOTE] + [None] * 14
    split = ["test"] * 6 + ["val"] * 4 + ["train"] * 10
    return pd.DataFrame({"image_id": ids, "dataset": "nih", "path": [f"images/{i}.png" for i in ids],
                         "patient_id": ids, "sex": sex, "age": age, "view": "PA", "split": split,
                         "width": 64, "height": 64, "sex_source": sex_source, "age_source": age_source,
                         "view_source": view_source, "decode_note": notes})


def _problems() -> pd.DataFrame:
    adapter = [("Data_Entry_2017.csv", r, f"x{r}", UNKNOWN_LABEL) for r in (5, 9, 12)]
    adapter.append(("Data_Entry_2017.csv", 7, "i03",
                    "absurd age 412 (allowed 0–120 years); age set to missing"))
    decode = [(f"{IMAGES}/{i}.png", None, i, f"{IMAGES}/{i}.png is not a readable PNG/JPEG image "
               "(corrupt, truncated or another format): cannot identify image file; image skipped")
              for i in ("i00", "i01")]
    decode.append((f"{IMAGES}/i15.png", None, "i15", f"no image file at {IMAGES}/i15.png; image skipped"))
    rows = ([{"stage": "adapter", "file": f, "row": r, "image_id": i, "problem": p} for f, r, i, p in adapter]
            + [{"stage": "decode", "file": f, "row": r, "image_id": i, "problem": p} for f, r, i, p in decode]
            + [{"stage": "import", "file": "preds.csv", "row": None, "image_id": "zz",
                "problem": "prediction for an image not in the dataset; prediction skipped"}])
    return pd.DataFrame(rows).assign(dataset="nih")


def _predict(w, model_id: str, ids: list[str]) -> None:
    labels = ("Atelectasis", "Effusion")
    w.put_predictions(model_id, ids, labels, np.zeros((len(ids), 2), np.float32), np.full((len(ids), 2), 0.5))


def _put_label_matches(w, rows: list[tuple]) -> None:
    """(dataset, model, output, label, how) rows through the writer, one (dataset, model) at a time."""
    frame = pd.DataFrame(rows, columns=["dataset", "model_id", "model_output", "dataset_label", "how"])
    for (dataset, model_id), group in frame.groupby(["dataset", "model_id"]):
        w.put_label_matches(dataset, model_id, group.drop(columns=["dataset", "model_id"]).to_dict("records"))


@pytest.fixture()
def store_path(tmp_path):
    """nih (above); cxp: 3 images, a prediction, no label matches, no notes, no problems; empty: no images."""
    path = tmp_path / "audit.duckdb"
    with write_store(path) as w:
        w.put_dataset("nih", source="nih", labels=["Atelectasis", "Effusion", "Hernia"])
        w.put_dataset("cxp", source="chexpert", labels=["Atelectasis"])
        w.put_dataset("empty", source="folder", labels=["Atelectasis"])
        w.put_images(_nih_images())
        w.put_images(pd.DataFrame({"image_id": ["c0", "c1", "c2"], "dataset": "cxp", "split": "valid",
                                   "sex": [None] * 3, "view": [None] * 3}))
        w.put_labels(pd.DataFrame({"image_id": ["i02", "c0"], "label": "Atelectasis", "value": [1, 0]}))
        w.put_problems(_problems())
        # m1: the test split but i00, i01 (not decoded), and the val split; m2: the same test images
        _predict(w, "m1", ["i02", "i03", "i04", "i05", "i06", "i07", "i08", "i09"])
        _predict(w, "m2", ["i02", "i03", "i04", "i05"])
        _predict(w, "m1", ["c0"])
        _put_label_matches(w, [("nih", "m1", "Atelectasis", "Atelectasis", "exact"),
                               ("nih", "m1", "effusion", "Effusion", "case"),
                               ("nih", "m1", "Pleural_Thickening", "Pleural Thickening", "alias"),
                               ("nih", "m1", "Lung Opacity", None, "unmatched output"),
                               ("nih", "m1", None, "Hernia", "unmatched label")])
    return path


def _nih(path):
    with open_store(path) as s:
        return audit_store(s, dataset="nih").datasets[0]


def test_films_read_and_skipped_by_reason(store_path):
    films = _nih(store_path).section("films")
    assert films.lines == ("20 images in the store",
                           "3 rows of the dataset's files left out by the adapter (not in the store)",
                           "3 films in the store could not be decoded and have no prediction: "
                           "15.0% (n = 3 of 20)",
                           "1 row kept with a change (a value set to missing, a box clipped or skipped)")
    assert films.table.values.tolist() == [["adapter", "unknown label", "image skipped", 3],
                                           ["adapter", "absurd age", "age set to missing", 1],
                                           ["decode", "unreadable file", "image skipped", 2],
                                           ["decode", "file missing", "image skipped", 1]]


def test_bit_depth_rescaling_and_orientation_per_reader_note(store_path):
    audit = _nih(store_path)
    notes, turned = audit.section("film_notes"), audit.section("orientation")
    assert notes.table[["note", "n", "percent"]].values.tolist() == [
        [AS_IS, 14, 70.0], [BIT_NOTE, 3, 15.0], [EXIF_NOTE, 2, 10.0], [RGB_NOTE, 1, 5.0]]
    assert notes.lines[0].startswith("6 films changed by the reader: 30.0% (n = 6 of 20)")
    assert turned.lines == ("2 films turned by their EXIF orientation: 10.0% (n = 2 of 20)",)
    assert turned.table["note"].tolist() == [EXIF_NOTE] and turned.empty is None


def test_demographic_coverage_and_sources_carry_n(store_path):
    demo = _nih(store_path).section("demographics")
    assert demo.lines[:3] == (f"sex known for 90.0% (n = 18 of 20), from {CSV} 15, {SEX_DICOM} 3",
                          f"age known for 80.0% (n = 16 of 20), from {CSV} 15, source not recorded 1",
                          f"view known for 100.0% (n = 20 of 20), from {VIEW_DICOM} 12, {VIEW_RULE} 8")
    table = demo.table.set_index(["field", "source"])["n"].to_dict()
    assert table == {("age", CSV): 15, ("age", "source not recorded"): 1, ("age", "missing"): 4,
                     ("sex", CSV): 15, ("sex", SEX_DICOM): 3, ("sex", "missing"): 2,
                     ("view", VIEW_DICOM): 12, ("view", VIEW_RULE): 8,
                     ("race", "missing"): 20, ("insurance", "missing"): 20}
    assert demo.lines[3:] == (f"race known for 0.0% (n = 0 of 20): {ADMISSIONS_ONLY}",
                              f"insurance known for 0.0% (n = 0 of 20): {ADMISSIONS_ONLY}")


def test_race_and_insurance_coverage_with_sources_and_the_values_the_papers_groups_put_in_other(tmp_path):
    path, adm = tmp_path / "mimic.duckdb", "csv:admissions.csv.gz"
    race = ["WHITE - OTHER EUROPEAN", "PORTUGUESE", "ASIAN - JAPANESE", "PORTUGUESE", "OTHER", None]
    insurance = ["Medicare", "Private", "Medicaid", None, None, "Medicare"]
    with write_store(path) as w:
        w.put_dataset("mimic", source="mimic", labels=["Edema"])
        w.put_images(pd.DataFrame({
            "image_id": list("abcdef"), "dataset": "mimic", "race": race, "insurance": insurance,
            "race_source": [adm] * 5 + [None], "insurance_source": [adm, adm, adm, None, None, adm]}))
    with open_store(path) as s:
        demo = audit_store(s, dataset="mimic").datasets[0].section("demographics")
    assert demo.lines[3:] == (
        f"race known for 83.3% (n = 5 of 6), from {adm} 5",
        f"insurance known for 66.7% (n = 4 of 6), from {adm} 4",
        "race in the Underdiagnosis paper's groups (report option race=paper): Other holds PORTUGUESE 2, "
        "ASIAN - JAPANESE 1, OTHER 1 (ASIAN - JAPANESE not in cxrxai.demographic_groups.RACE_GROUPS: "
        "Other by its rule)",
        "insurance in the Underdiagnosis paper's groups (report option insurance=paper): Other holds "
        "Private 1")
    table = demo.table.set_index(["field", "source"])["n"].to_dict()
    assert (table[("race", adm)], table[("race", "missing")]) == (5, 1)
    assert (table[("insurance", adm)], table[("insurance", "missing")]) == (4, 2)


def test_label_matches_name_each_unmatched_output_and_label(store_path):
    matches = _nih(store_path).section("label_matches")
    assert matches.lines == ("m1: outputs matched to labels 1 exact, 1 alias, 1 case; 1 output(s) score no "
                             "dataset label (Lung Opacity); 1 dataset label(s) have no model output (Hernia)",
                             f"m2: {UNRECORDED}")
    assert sorted(matches.table["how"]) == ["alias", "case", "exact", "unmatched label", "unmatched output"]


def test_split_sizes_with_decode_failures_and_predictions_per_model(store_path):
    splits = _nih(store_path).section("splits")
    assert splits.table.values.tolist() == [["test", 6, 2, 4, 4], ["train", 10, 1, 0, 0], ["val", 4, 0, 4, 0]]
    assert list(splits.table.columns) == ["split", "images", "not decoded", "predicted by m1",
                                          "predicted by m2"]
    assert splits.lines == ("m1 has predictions for 40.0% (n = 8 of 20)",
                            "m2 has predictions for 20.0% (n = 4 of 20)")


def test_every_problem_row_with_its_reason_and_the_counts_per_kind(store_path):
    audit = _nih(store_path)
    kinds, rows = audit.section("problem_kinds"), audit.section("problems")
    assert kinds.table.values.tolist() == [["adapter", "unknown label", "image skipped", 3],
                                           ["decode", "unreadable file", "image skipped", 2],
                                           ["adapter", "absurd age", "age set to missing", 1],
                                           ["decode", "file missing", "image skipped", 1],
                                           ["import", "prediction of an unknown image", "prediction skipped",
                                            1]]
    assert len(rows.table) == 8 and set(rows.table["problem"]) == set(_problems()["problem"])
    assert f"--store {store_path} --dataset nih --format csv" in kinds.lines[0]


def test_each_empty_section_says_why_and_how_to_fill_it(store_path):
    with open_store(store_path) as s:
        cxp, empty = (audit_store(s, dataset=d).datasets[0] for d in ("cxp", "empty"))
    assert cxp.section("label_matches").empty == UNRECORDED
    assert cxp.section("films").empty.startswith("no film or row was skipped or changed")
    assert cxp.section("orientation").empty == "no film carried an EXIF orientation to apply (n = 0 of 3)"
    assert cxp.section("problems").empty.startswith("no problem rows")
    assert cxp.section("demographics").lines[0] == "sex known for 0.0% (n = 0 of 3)"
    assert empty.section("label_matches").empty.startswith(
        "no model has predictions on this dataset yet: run ")
    assert {k: empty.section(k).empty for k in ("film_notes", "demographics", "splits")} == {
        k: "the dataset has no images in the store" for k in ("film_notes", "demographics", "splits")}
    for sec in (*cxp.sections, *empty.sections):  # a section shows rows or says why it has none
        assert (sec.empty is None) == (len(sec.table) > 0), sec.key


def _v4_store(path) -> None:
    """A store as cxrxai wrote it before schema v5 (no sources, notes or label matches)."""
    con = duckdb.connect(str(path))
    for v in range(1, 5):
        for ddl in MIGRATIONS[v]:
            con.execute(ddl)
    con.execute("INSERT INTO meta VALUES ('schema_version', '4')")
    con.execute("INSERT INTO datasets (dataset, source) VALUES ('old', 'nih')")
    con.execute("INSERT INTO images (image_id, dataset, sex, age, split) VALUES "
                "('a', 'old', 'F', 40, 'test'), ('b', 'old', NULL, 50, 'test')")
    con.close()


def test_a_store_before_schema_v5_reads_and_says_what_is_missing(tmp_path):
    path = tmp_path / "v4.duckdb"
    _v4_store(path)
    with open_store(path) as s:
        old = audit_store(s).datasets[0]
    why = "not recorded in this store (schema v4, before v5): re-run `python -m cxrxai precompute`"
    for key in ("film_notes", "orientation", "label_matches"):
        assert why in old.section(key).empty, key
    demo = old.section("demographics")
    assert demo.lines[0] == "sex known for 50.0% (n = 1 of 2), from source not recorded 1"
    assert why in demo.lines[-1]
    assert not any(line.startswith(("race", "insurance")) for line in demo.lines)  # no such columns
    assert set(demo.table["field"]) == {"sex", "age", "view"}


def test_a_store_without_a_problems_table_says_what_was_skipped_is_not_recorded(tmp_path):
    path = tmp_path / "v1.duckdb"
    con = duckdb.connect(str(path))
    for ddl in MIGRATIONS[1]:
        con.execute(ddl)
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute("INSERT INTO datasets (dataset, source) VALUES ('old', 'nih')")
    con.execute("INSERT INTO images (image_id, dataset) VALUES ('a', 'old')")
    con.close()
    with open_store(path) as s:
        old = audit_store(s).datasets[0]
    assert old.section("films").empty.startswith(
        "what was skipped is not recorded in this store (no problems table)")
    assert old.section("problems").empty.startswith("this store (schema v1) has no problems table")


def test_the_reasons_of_the_readers_own_messages(tmp_path):
    """The classifier names the messages the film reader really raises (pinned to its wording)."""
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10)
    Image.fromarray(np.zeros((4, 6), np.uint8)).save(tmp_path / "tiny.png")
    found = {}
    for name in ("broken.png", "absent.png", "tiny.png"):
        with pytest.raises(DataError) as err:
            read_image(tmp_path / name)
        found[name] = reason(f"{err.value}; image skipped")
    assert found == {"broken.png": "unreadable file", "absent.png": "file missing",
                     "tiny.png": "film too small"}
    odd = "odd header '0x7fe0' in /a/b.dcm at byte 132: bad; image skipped"
    assert reason(odd) == "odd header … in <file> at byte N"
    assert action("no threshold for label 'A'; its decisions (TPR/FPR) stay missing") == \
        "its decisions (TPR/FPR) stay missing"


def test_cli_text_json_csv_and_exit_status(store_path, tmp_path, capsys):
    assert main(["audit-data", "--store", str(store_path), "--dataset", "nih"]) == 0
    text = capsys.readouterr().out
    assert "sex known for 90.0% (n = 18 of 20)" in text and "Dataset nih (source nih): 20 images" in text
    assert "e.g. Data_Entry_2017.csv, row 5, image x5: unknown label(s) ['Foo']" in text
    assert text.count("e.g. ") == 7  # 2 + 2 + 1 + 1 + 1 examples of the five kinds
    assert main(["audit-data", "--store", str(store_path), "--format", "json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [d["dataset"] for d in records["datasets"]] == ["cxp", "empty", "nih"]
    nih = records["datasets"][2]["sections"]
    assert len(nih["problems"]["rows"]) == 8 and nih["problems"]["rows"][0]["row"] == 5
    assert records["datasets"][1]["sections"]["splits"]["empty"] == "the dataset has no images in the store"
    assert main(["audit-data", "--store", str(store_path), "--dataset", "nih", "--format", "csv"]) == 0
    from io import StringIO

    raw = capsys.readouterr().out
    csv = pd.read_csv(StringIO(raw))
    assert (csv["section"] == "problems").sum() == 8 and list(csv.columns[:2]) == ["dataset", "section"]
    assert "nih,films,adapter,unknown label,image skipped,3," in raw  # a count prints 3, not 3.0
    assert main(["audit-data", "--store", str(store_path), "--dataset", "nope"]) == 2
    assert "unknown dataset 'nope'; allowed: 'cxp', 'empty', 'nih'" in capsys.readouterr().err


def test_a_store_without_datasets_exits_1_and_says_how_to_build_one(tmp_path, capsys):
    path = tmp_path / "empty.duckdb"
    with write_store(path):
        pass
    assert main(["audit-data", "--store", str(path)]) == 1
    out = capsys.readouterr().out
    assert "the store holds no dataset yet: build one with `python -m cxrxai precompute" in out
    with open_store(path) as s, pytest.raises(UnknownNameError):
        audit_store(s, dataset="nih")


def test_records_and_frame_hold_the_same_rows(store_path):
    with open_store(store_path) as s:
        audit = audit_store(s)
    frame, records = to_frame(audit), to_records(audit)
    for d in records["datasets"]:
        for key, sec in d["sections"].items():
            n = ((frame["dataset"] == d["dataset"]) & (frame["section"] == key)).sum()
            assert n == (len(sec["rows"]) or 1), (d["dataset"], key)  # an empty section: one row saying why
    assert "Data audit of" in to_text(audit).splitlines()[0]


@pytest.mark.slow
def test_the_overview_data_section_shows_each_section_with_n_and_says_why_when_empty(store_path):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120)
    at.session_state["store_path"] = str(store_path)
    at.session_state["dataset"] = "nih"
    at.run()
    at.switch_page("pages/overview.py").run()
    assert not at.exception, at.exception
    labels = [e.label for e in at.expander if e.label != "Rows per table"]
    assert labels[:7] == ["Films read and skipped", "Bit depth and rescaling", "Orientation fixes",
                          "Demographic coverage", "Model outputs and dataset labels", "Splits",
                          "Problems by kind"]
    text = "\n".join(m.value for m in at.markdown)
    assert "sex known for 90.0% (n = 18 of 20), from csv:Data\\_Entry\\_2017.csv 15, " \
           "dicom:PatientSex 3" in text  # underscores escaped, so that markdown shows them
    assert "3 films in the store could not be decoded and have no prediction: 15.0% (n = 3 of 20)" in text
    assert "m1 has predictions for 40.0% (n = 8 of 20)" in text
    tables = [t.value for t in at.dataframe]
    assert any(list(t.columns) == ["split", "images", "not decoded", "predicted by m1", "predicted by m2"]
               and t.values.tolist()[0] == ["test", 6, 2, 4, 4] for t in tables)
    assert any(len(t) == 8 and "problem" in t.columns for t in tables)  # every problem row
    at.selectbox(key="dataset").set_value("cxp").run()
    assert not at.exception, at.exception
    infos = [i.value for i in at.info]
    assert UNRECORDED in infos
    assert "no film carried an EXIF orientation to apply (n = 0 of 3)" in infos
    assert "Orientation fixes — nothing to show" in [e.label for e in at.expander]
