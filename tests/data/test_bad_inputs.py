"""Bad input at every door: each a typed error naming what was wrong, or a problem row, and
nothing already stored lost."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from cxrxai.data.adapters import load_dataset
from cxrxai.data.io import read_dicom, read_image, to_uint8
from cxrxai.errors import DataError, StoreError
from cxrxai.store import open_store, write_store

NIH_ENTRY = ("Image Index,Finding Labels,Follow-up #,Patient ID,Patient Age,Patient Gender,View Position,"
             "OriginalImage[Width,Height],OriginalImagePixelSpacing[x,y]\n"
             "a.png,Mass,0,1,50,F,PA,1024,1024,0.14,0.14\n"
             "b.png,Dragon|Mass,0,2,60,M,AP,1024,1024,0.14,0.14\n"
             "c.png,No Finding,0,3,70,M,PA,1024,1024,0.14,0.14\n")


def test_nih_unknown_label_and_boxes_outside_or_of_unknown_findings(tmp_path):
    (tmp_path / "Data_Entry_2017.csv").write_text(NIH_ENTRY)
    (tmp_path / "BBox_List_2017.csv").write_text(
        "Image Index,Finding Label,Bbox [x,y,w,h]\n"
        "a.png,Mass,10,10,50,50\n"  # row 2: fine
        "a.png,Mass,1000,10,60,50\n"  # row 3: past the 1024 px edge
        "a.png,Dragon,10,10,5,5\n"  # row 4: unknown finding
        "z.png,Mass,10,10,5,5\n")  # row 5: image not in Data_Entry
    t = load_dataset("nih", tmp_path)
    p = t.problems.assign(file=t.problems.file.map(lambda f: f.split("/")[-1]))
    assert p[["file", "row", "image_id"]].values.tolist() == [
        ["Data_Entry_2017.csv", 3, "b.png"], ["BBox_List_2017.csv", 3, "a.png"], ["BBox_List_2017.csv", 4, "a.png"],
        ["BBox_List_2017.csv", 5, "z.png"]]
    assert p.problem.iloc[0].startswith("unknown label(s) ['Dragon']") and p.problem.iloc[0].endswith("image skipped")
    assert "lies outside the 1024×1024 image" in p.problem.iloc[1]
    assert set(t.images.image_id) == {"a.png", "c.png"} and len(t.annotations) == 1


def test_chexpert_path_escaping_the_root(tmp_path):
    (tmp_path / "valid.csv").write_text("Path,Sex,Age,Frontal/Lateral,AP/PA,Cardiomegaly\n"
                                        "CheXpert-v1.0/valid/patient1/study1/view1_frontal.jpg,Male,50,Frontal,AP,1\n"
                                        "CheXpert-v1.0/valid/../../../../etc/passwd,Male,50,Frontal,AP,0\n")
    t = load_dataset("chexpert", tmp_path, files=("valid.csv",))
    assert len(t.images) == 1 and t.problems.row.tolist() == [3]
    assert "escapes the dataset root" in t.problems.problem.iloc[0]
    with pytest.raises(DataError, match="valid.csv, row 3: path .* escapes the dataset root"):
        load_dataset("chexpert", tmp_path, files=("valid.csv",), strict=True)


def test_siim_malformed_rle(tmp_path):
    (tmp_path / "train-rle.csv").write_text("ImageId, EncodedPixels\n"
                                            "good, 5 10\n"  # row 2
                                            "odd, 5 10 3\n"  # row 3: not pairs
                                            "text, a b\n"  # row 4: not numbers
                                            "past, 1048570 100\n"  # row 5: runs past 1024×1024
                                            "none, -1\n")
    t = load_dataset("siim", tmp_path)
    rows = t.problems[t.problems.row.notna()]
    assert rows.row.tolist() == [3, 4, 5]
    assert [p.split(";")[0] for p in rows.problem] == [
        "SIIM RLE must hold (offset, length) pairs", "invalid SIIM RLE 'a b'…", "SIIM RLE runs past a 1024×1024 image"]
    # metadata without its DICOM files: the headers that would give sex, age and view are missing, and it says so
    assert t.problems.problem.iloc[-1].startswith("2 of 2 DICOM files whose header was needed are not under the root")
    assert set(t.images.image_id) == {"good", "none"}


def test_duplicate_image_ids_and_unreadable_csvs(tmp_path):
    (tmp_path / "dup.csv").write_text("path,image_id,Mass\na.png,x,1\nb.png,x,0\n")
    with pytest.raises(DataError, match="duplicate image ids, e.g. 'x'"):
        load_dataset("folder", tmp_path, csv=tmp_path / "dup.csv", labels="Mass")
    with pytest.raises(DataError, match="missing file .*absent.csv"):
        load_dataset("folder", tmp_path, csv=tmp_path / "absent.csv", labels="Mass")
    (tmp_path / "garbage.csv").write_bytes(b"\xff\xfe\x00\x81binary\x00\x00garbage")
    with pytest.raises(DataError, match="cannot parse .*garbage.csv"):
        load_dataset("folder", tmp_path, csv=tmp_path / "garbage.csv", labels="Mass")


def test_a_corrupt_store_is_a_clear_error_and_is_left_as_it_was(tmp_path):
    path = tmp_path / "s.duckdb"
    with write_store(path) as w:
        w.set_meta("note", "kept")
    good = path.read_bytes()
    path.write_bytes(good[:4096] + b"\x00garbage" * 100)  # a store cut short and overwritten with junk
    corrupt = path.read_bytes()
    with pytest.raises(StoreError, match="cannot open .*s.duckdb as a DuckDB store"):
        open_store(path)
    with pytest.raises(StoreError):
        with write_store(path) as w:
            w.set_meta("note", "overwritten")
    assert path.read_bytes() == corrupt  # nothing replaced it: a user can still recover it from a copy
    shutil.copyfile(tmp_path / "s.duckdb", tmp_path / "copy.duckdb")


def _dicom(path, pixels, **attrs):
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, SecondaryCaptureImageStorage, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID = SecondaryCaptureImageStorage, generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset(str(path), {}, file_meta=meta, preamble=b"\0" * 128)
    arr = np.asarray(pixels)
    frames = arr.shape[0] if arr.ndim == 3 else 1
    ds.Rows, ds.Columns = arr.shape[-2:]
    ds.SamplesPerPixel, ds.BitsAllocated, ds.BitsStored, ds.HighBit = 1, 16, 16, 15
    ds.PixelRepresentation = 1 if arr.dtype == np.int16 else 0
    ds.PhotometricInterpretation = "MONOCHROME2"
    if frames > 1:
        ds.NumberOfFrames = frames
    for k, v in attrs.items():
        setattr(ds, k, v)
    ds.PixelData = arr.tobytes()
    ds.save_as(str(path), enforce_file_format=True)
    return path


def test_signed_compressed_and_multiframe_dicom(tmp_path):
    ramp = np.tile(np.arange(-800, 800, 100, dtype=np.int16), (16, 1))  # signed CT-like values, −800 … 700
    signed = read_dicom(_dicom(tmp_path / "signed.dcm", ramp))
    assert signed[0, 0] == 0 and signed[0, -1] == 255 and np.all(np.diff(signed[0].astype(int)) > 0)
    # the same pixels RLE-compressed (pydicom's own encoder) read back identically
    import pydicom
    from pydicom.uid import RLELossless

    ds = pydicom.dcmread(tmp_path / "signed.dcm")
    ds.compress(RLELossless)
    ds.save_as(tmp_path / "rle.dcm")
    assert pydicom.dcmread(tmp_path / "rle.dcm").file_meta.TransferSyntaxUID == RLELossless
    assert np.array_equal(read_dicom(tmp_path / "rle.dcm"), signed)
    stack = np.stack([ramp, ramp]).astype(np.int16)
    with pytest.raises(DataError, match=r"multi.dcm holds 3-D pixels \(shape \(2, 16, 16\)\); expected one grey frame"):
        read_dicom(_dicom(tmp_path / "multi.dcm", stack))


def test_non_finite_pixels_are_refused():
    with pytest.raises(DataError, match="1 NaN or infinite value"):
        to_uint8(np.array([[0.0, 1.0], [np.inf, 2.0]]))
    with pytest.raises(DataError, match="no image file"):
        read_image("/nonexistent/x.png")
    from cxrxai.models.spec import ModelSpec, preprocess

    with pytest.raises(DataError, match=r"float images must lie in \[0, 1\]"):
        preprocess(np.array([[0.0, np.inf]], np.float32), ModelSpec(name="m", arch="a", labels=("x",)))


def test_problems_frame_is_a_dataframe():
    assert isinstance(load_dataset.__doc__, (str, type(None))) and pd.DataFrame  # module imports stay used
