"""Image reading (PNG/JPEG/DICOM) and the generic folder adapter, with bad input by name."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest

from cxrxai.audit._reasons import reason
from cxrxai.data.adapters import load_dataset
from cxrxai.data.io import read_dicom, read_image
from cxrxai.errors import DataError, UnknownNameError

FIX = Path(__file__).parents[1] / "fixtures" / "chexlocalize"


def _dicom(path: Path, pixels: np.ndarray, *, photometric="MONOCHROME2", slope=1.0, intercept=0.0, window=None,
           with_pixels=True):
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.1"
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset(str(path), {}, file_meta=meta, preamble=b"\0" * 128)
    ds.Rows, ds.Columns = pixels.shape
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, photometric
    ds.BitsAllocated = ds.BitsStored = 16
    ds.HighBit, ds.PixelRepresentation = 15, 0
    ds.RescaleSlope, ds.RescaleIntercept = slope, intercept
    if window:
        ds.WindowCenter, ds.WindowWidth = window
    if with_pixels:
        ds.PixelData = pixels.astype(np.uint16).tobytes()
    ds.save_as(str(path), enforce_file_format=True)
    return path


def test_png_8_and_16_bit(tmp_path):
    img = np.tile(np.arange(0, 256, 16, dtype=np.uint8), (16, 1))
    cv2.imwrite(str(tmp_path / "a.png"), img)
    cv2.imwrite(str(tmp_path / "b.png"), img.astype(np.uint16) * 257)
    assert np.array_equal(read_image(tmp_path / "a.png"), img)
    assert np.array_equal(read_image(tmp_path / "b.png"), img)


def test_jpeg_real_radiograph_is_grey_and_full_size():
    img = read_image(FIX / "valid/patient64541/study1/view1_frontal.jpg")
    assert img.dtype == np.uint8 and img.shape == (2320, 2828)


def test_dicom_monochrome1_is_inverted_and_rescaled(tmp_path):
    ramp = np.tile(np.arange(0, 1600, 100, dtype=np.uint16), (16, 1))
    m2 = read_dicom(_dicom(tmp_path / "m2.dcm", ramp))
    m1 = read_dicom(_dicom(tmp_path / "m1.dcm", ramp, photometric="MONOCHROME1"))
    assert m2[0, 0] == 0 and m2[0, -1] == 255
    assert np.array_equal(m1, 255 - m2)
    scaled = read_dicom(_dicom(tmp_path / "s.dcm", ramp, slope=2.0, intercept=-1000.0))
    assert np.array_equal(scaled, m2)  # a linear modality LUT then full-range scaling changes nothing
    windowed = read_dicom(_dicom(tmp_path / "w.dcm", ramp, window=(500, 400)))
    assert windowed[0, 0] == 0 and windowed[0, -1] == 255 and (windowed == 0).sum() > (m2 == 0).sum()


def test_dicom_without_pixel_data_is_refused(tmp_path):
    with pytest.raises(DataError, match="no pixel data"):
        read_dicom(_dicom(tmp_path / "empty.dcm", np.zeros((8, 8)), with_pixels=False))


@pytest.mark.parametrize("make,match", [
    (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 20), "not a readable"),
    (lambda p: cv2.imwrite(str(p), np.dstack([np.zeros((16, 16)), np.full((16, 16), 200), np.zeros((16, 16))])), "colour"),
    (lambda p: cv2.imwrite(str(p), np.zeros((4, 9000), np.uint8)), "refused"),
])
def test_bad_images_are_refused_with_the_file_named(tmp_path, make, match):
    path = tmp_path / "bad.png"
    make(path)
    with pytest.raises(DataError, match=match) as err:
        read_image(path)
    assert "bad.png" in str(err.value)


def test_truncated_jpeg_is_refused(tmp_path):
    data = (FIX / "valid/patient64542/study1/view1_frontal.jpg").read_bytes()
    (tmp_path / "cut.jpg").write_bytes(data[:400])
    with pytest.raises(DataError):
        read_image(tmp_path / "cut.jpg")


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "imgs").mkdir()
    for i in range(4):
        cv2.imwrite(str(tmp_path / "imgs" / f"{i}.png"), np.full((32, 32), 40 * i, np.uint8))
    pd.DataFrame({
        "path": ["imgs/0.png", "imgs/1.png", "imgs/2.png", "../escape.png", "imgs/3.png"],
        "patient_id": ["a", "a", "b", "c", "d"], "sex": ["F", "M", "female", "M", None], "age": [30, 61, 150, 40, None],
        "Mass": [1, 0, 0, 1, 2], "Nodule": [0, 1, None, 0, 0],
    }).to_csv(tmp_path / "cases.csv", index=False)
    pd.DataFrame({"path": ["imgs/0.png", "imgs/1.png"], "label": ["Mass", "Mass"], "x": [2, 3], "y": [2, 3],
                  "w": [5, -1], "h": [5, 4]}).to_csv(tmp_path / "boxes.csv", index=False)
    return tmp_path


def test_folder_adapter_reports_each_bad_row_and_keeps_the_rest(tmp_path):
    root = _folder(tmp_path)
    t = load_dataset("folder", root, csv=root / "cases.csv", labels=["Mass", "Nodule"], boxes_csv=root / "boxes.csv")
    problems = t.problems.set_index("row")["problem"]
    assert "absurd age" in problems[4] and "escapes" in problems[5] and "allowed 0, 1" in problems[6]
    assert "no area" in t.problems[t.problems.file.str.endswith("boxes.csv")]["problem"].iloc[0]
    # a bad path or label drops the image, an absurd age only the age, a bad box only the box
    assert t.images.image_id.tolist() == ["imgs/0.png", "imgs/1.png", "imgs/2.png"]
    assert t.images.sex.tolist() == ["F", "M", "F"] and np.isnan(t.images.age.iloc[2])
    assert problems[4].endswith("age set to missing") and problems[5].endswith("image skipped")
    assert len(t.annotations) == 1
    assert t.labels.set_index(["image_id", "label"]).loc[("imgs/1.png", "Nodule"), "value"] == 1


def test_strict_mode_raises_on_the_first_problem_with_file_and_row(tmp_path):
    root = _folder(tmp_path)  # paths are checked before ages
    with pytest.raises(DataError, match=r"cases.csv, row 5: path '../escape.png' escapes"):
        load_dataset("folder", root, csv=root / "cases.csv", labels=["Mass", "Nodule"], strict=True)


def test_missing_column_names_the_file(tmp_path):
    pd.DataFrame({"file": ["x.png"]}).to_csv(tmp_path / "c.csv", index=False)
    with pytest.raises(DataError, match=r"c.csv: missing column\(s\) \['path'\]"):
        load_dataset("folder", tmp_path, csv=tmp_path / "c.csv", labels=[])


def test_chexlocalize_sample_polygons_match_their_masks_and_the_anatomy():
    t = load_dataset("chexpert", FIX, files=["valid.csv"], chexlocalize=FIX)
    assert set(t.images.image_id) == {"patient64541_study1_view1_frontal", "patient64542_study1_view1_frontal"}
    from cxrxai.data.cases import case_masks
    from cxrxai.data.masks import decode_rle

    gt = json.loads((FIX / "gt_segmentations_val.json").read_text())
    for cxr in gt:
        h, w = t.images.set_index("image_id").loc[cxr, ["height", "width"]]
        masks = case_masks(t.annotations[t.annotations.image_id == cxr], int(h), int(w))
        for task, rle in gt[cxr].items():
            label = "Lung Opacity" if task == "Airspace Opacity" else task
            theirs = decode_rle(rle["counts"], *rle["size"])
            ours = masks.get((label, "gt"), np.zeros_like(theirs))
            assert (ours != theirs).sum() <= 0.01 * max(theirs.sum(), 1), (cxr, task)
    # On the non-square image the heart mask sits over the bright mediastinum, not shifted off it.
    img = read_image(FIX / "valid/patient64541/study1/view1_frontal.jpg")
    heart = case_masks(t.annotations[t.annotations.image_id == "patient64541_study1_view1_frontal"], *img.shape)[
        ("Cardiomegaly", "gt")]
    assert heart.shape == img.shape and img[heart].mean() > img.mean() + 20


def test_folder_box_labels_take_the_datasets_spelling_or_are_problems(tmp_path):
    """Boxes spelled as another source spells the finding ("Effusion" for the CSV's "Pleural
    Effusion", "nodule" for "Nodule") are that label's boxes, said once per spelling; a box of a label
    the dataset does not have is a problem row, never a box no map can be scored against."""
    for i in range(2):
        cv2.imwrite(str(tmp_path / f"{i}.png"), np.full((40, 40), 90, np.uint8))
    pd.DataFrame({"path": ["0.png", "1.png"], "Pleural Effusion": [1, 0], "Nodule": [1, 1]}).to_csv(
        tmp_path / "cases.csv", index=False)
    pd.DataFrame({"path": ["0.png", "0.png", "1.png", "1.png", "1.png"],
                  "label": ["Effusion", "nodule", "Nodule", "Dragon", "Effusion"],
                  "x": 2, "y": 2, "w": 5, "h": 5}).to_csv(tmp_path / "boxes.csv", index=False)
    t = load_dataset("folder", tmp_path, csv=tmp_path / "cases.csv", labels=["Pleural Effusion", "Nodule"],
                     boxes_csv=tmp_path / "boxes.csv")
    ann = t.annotations.sort_values(["image_id", "label", "instance"])
    assert ann[["image_id", "label", "instance"]].values.tolist() == [
        ["0.png", "Nodule", 0], ["0.png", "Pleural Effusion", 0], ["1.png", "Nodule", 0],
        ["1.png", "Pleural Effusion", 0]]
    said = t.problems.set_index(t.problems.row.fillna(0).astype(int))["problem"]
    notes = said[0].tolist()
    assert ("2 box(es) labelled 'Effusion', the dataset's label 'Pleural Effusion' spelled otherwise "
            "(alias); read as 'Pleural Effusion'") in notes
    assert ("1 box(es) labelled 'nodule', the dataset's label 'Nodule' spelled otherwise (case); "
            "read as 'Nodule'") in notes
    reasons = {reason(p) for p in said}
    assert {"box label spelled otherwise", "unknown label"} <= reasons
    assert said[5].startswith("box of 'Dragon', which is none of the dataset's labels "
                              "(Pleural Effusion, Nodule)")
    assert said[5].endswith("annotation skipped") and t.images.image_id.tolist() == ["0.png", "1.png"]


def test_folder_split_names_spelled_otherwise_are_the_pipelines_splits(tmp_path):
    """'Test' and 'validation' in a CSV are the test and val splits (precompute's default split, the
    split thresholds are chosen on), each renaming said once; an unknown name is kept as written."""
    for i in range(5):
        cv2.imwrite(str(tmp_path / f"{i}.png"), np.full((40, 40), 90, np.uint8))
    pd.DataFrame({"path": [f"{i}.png" for i in range(5)], "Mass": [1, 0, 1, 0, 1],
                  "split": ["test", "Test", "validation", "holdout", None]}).to_csv(tmp_path / "c.csv",
                                                                                      index=False)
    t = load_dataset("folder", tmp_path, csv=tmp_path / "c.csv", labels="Mass")
    assert t.images.split.tolist() == ["test", "test", "val", "holdout", None]
    notes = t.problems.problem.tolist()
    assert notes == ["1 row(s) with split 'Test', the 'test' split spelled otherwise; read as 'test'",
                     "1 row(s) with split 'validation', the 'val' split spelled otherwise; read as 'val'"]
    assert {reason(n) for n in notes} == {"split spelled otherwise"}


def test_folder_uncertain_labels_follow_the_uncertain_option_as_chexpert(tmp_path):
    (tmp_path / "imgs").mkdir()
    pd.DataFrame({"path": ["imgs/0.png", "imgs/1.png"], "Edema": [-1, 1], "Effusion": [1, -1.0]}) \
        .to_csv(tmp_path / "cases.csv", index=False)

    def values(**options):
        t = load_dataset("folder", tmp_path, csv=tmp_path / "cases.csv", labels=["Edema", "Effusion"],
                         **options)
        assert t.images.image_id.tolist() == ["imgs/0.png", "imgs/1.png"]  # no film lost to a −1
        return t, t.labels.set_index(["image_id", "label"])["value"]

    t, default = values()
    assert default[("imgs/0.png", "Edema")] == 0 and default[("imgs/0.png", "Effusion")] == 1  # zeros
    assert ("2 label value(s) -1 (uncertain) in cases.csv; read as 0 (uncertain='zeros'; 'ignore' leaves "
            "them missing, 'ones' reads them as 1)") in set(t.problems.problem)
    assert pd.isna(values(uncertain="ignore")[1][("imgs/1.png", "Effusion")])
    assert values(uncertain="ones")[1][("imgs/0.png", "Edema")] == 1
    with pytest.raises(UnknownNameError, match="uncertain-label policy"):
        values(uncertain="maybe")
