"""DICOM films shown as a viewer shows them: the VOI LUT's or window's output range maps to 0–255
(PS3.3 C.11.2), never re-stretched to the film's own range unless asked; pixels equal to Pixel
Padding Value (or within Pixel Padding Range Limit, PS3.3 C.7.5.1.1.2) left out of the range and
painted black; and the film note saying both.

Each file is written here with pydicom as a modality would write it; the expected pixels are
pydicom's own ``apply_modality_lut`` + ``apply_voi_lut``, mapped linearly from the output range
(derived by hand from the header, written beside each case) to 0–255."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cxrxai.data.io import read_film
from cxrxai.errors import UnknownNameError

H, W = 24, 32
#: 12-bit anatomy 1000 … 3000 inside a 4-pixel border (the padding, when a case has one).
ANATOMY = np.tile(np.linspace(1000, 3000, W - 8).round(), (H - 8, 1)).astype(np.uint16)


def _film(border: int | np.ndarray = 1000) -> np.ndarray:
    film = np.zeros((H, W), np.uint16)
    film[:] = border
    film[4:-4, 4:-4] = ANATOMY
    return film


def _dcm(path: Path, stored: np.ndarray, *, photometric="MONOCHROME2", window=None, function=None,
         lut=None, padding=None, limit=None) -> Path:
    """A 12-bit unsigned film (rescale 1, 0); ``lut``: (first mapped value, bits, entries)."""
    from pydicom.dataset import Dataset, FileDataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.1"
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset(str(path), {}, file_meta=meta, preamble=b"\0" * 128)
    ds.Rows, ds.Columns = stored.shape
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, photometric
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
    ds.RescaleSlope, ds.RescaleIntercept = 1, 0
    if window:
        ds.WindowCenter, ds.WindowWidth = window
    if function:
        ds.VOILUTFunction = function
    if lut:
        item = Dataset()
        first, bits, entries = lut
        item.add_new(0x00283002, "US", [len(entries), first, bits])  # LUT Descriptor
        item.add_new(0x00283006, "US", [int(v) for v in entries])  # LUT Data
        ds.VOILUTSequence = [item]
    if padding is not None:
        ds.add_new(0x00280120, "US", padding)
    if limit is not None:
        ds.add_new(0x00280121, "US", limit)
    ds.PixelData = stored.astype(np.uint16).tobytes()
    ds.save_as(str(path), enforce_file_format=True)
    return path


def _viewer(path: Path, lo: float, hi: float, pad: np.ndarray | None = None) -> np.ndarray:
    """pydicom's VOI output mapped linearly from ``lo``–``hi`` to 0–255 (MONOCHROME1 inverted,
    padding black): what a viewer shows, as floats."""
    import pydicom
    from pydicom.pixels import apply_modality_lut, apply_voi_lut

    ds = pydicom.dcmread(str(path))
    modality = apply_modality_lut(ds.pixel_array, ds)  # whole numbers, as floats: a LUT indexes by them
    values = apply_voi_lut(modality.astype(np.int64), ds).astype(np.float64)
    shown = np.clip(255 * (values - lo) / (hi - lo), 0, 255)
    if ds.PhotometricInterpretation == "MONOCHROME1":
        shown = 255 - shown
    if pad is not None:
        shown[pad] = 0
    return shown


def _off(path: Path, expected: np.ndarray) -> float:
    return float(np.abs(read_film(path).pixels.astype(np.float64) - expected).max())


# ---- the VOI output range is the display range ---------------------------------------------------

GAMMA = np.round(1023 * (np.arange(4096) / 4095) ** 0.5)  # a 10-bit LUT: output 0 … 1023


@pytest.mark.parametrize("name,kwargs,lo,hi,said", [
    ("lut", dict(lut=(0, 10, GAMMA)), 0, 1023, "VOI LUT from the header (10-bit output 0–1023"),
    ("sigmoid", dict(window=(2048, 4096), function="SIGMOID"), 0, 4095,
     "window centre 2048 width 4096 (SIGMOID) from the header (output 0–4095"),
    ("wide", dict(window=(2048, 8192)), 0, 4095,
     "window centre 2048 width 8192 from the header (output 0–4095"),
])
def test_the_voi_output_range_maps_to_0_255_as_a_viewer_shows_it(tmp_path, name, kwargs, lo, hi, said):
    path = _dcm(tmp_path / f"{name}.dcm", _film(), **kwargs)
    assert _off(path, _viewer(path, lo, hi)) <= 1  # re-stretched to the film's own range: 72–126 levels off
    note = read_film(path).note
    assert said in note and "shown as 0–255 as a viewer shows it" in note and "own range" not in note


def test_a_re_stretch_is_an_explicit_option_and_the_note_says_so(tmp_path):
    path = _dcm(tmp_path / "wide.dcm", _film(), window=(2048, 8192))
    film = read_film(path, voi_range="film")
    viewer = _viewer(path, 0, 4095)
    stretched = 255 * (viewer - viewer.min()) / (viewer.max() - viewer.min())
    assert np.abs(film.pixels - stretched).max() <= 1 and film.pixels.max() == 255
    assert "then stretched to the film's own range" in film.note and "voi_range='film'" in film.note
    with pytest.raises(UnknownNameError, match="voi_range"):
        read_film(path, voi_range="own")


# ---- padding -------------------------------------------------------------------------------------

def test_pixel_padding_value_is_left_out_of_the_range_and_painted_black(tmp_path):
    """No window: the range is the anatomy's 1000–3000, not 0–3000 with the padding's 0."""
    path = _dcm(tmp_path / "pad.dcm", _film(border=0), padding=0)
    pad = _film(border=0) == 0
    assert _off(path, np.where(pad, 0, _viewer(path, 1000, 3000))) <= 1  # the padding in the range: 85 off
    assert read_film(path).note == (
        "DICOM, 12 bits stored, no window in the header: scaled from its own range 1000–3000 to 0–255; "
        f"{int(pad.sum())} padding pixels (Pixel Padding Value 0) left out of the range and painted black")


def test_a_padding_range_limit_covers_noisy_background(tmp_path):
    noise = (np.arange(H * W).reshape(H, W) * 7) % 51  # background 0 … 50, as detector noise
    stored = _film(border=noise)
    path = _dcm(tmp_path / "range.dcm", stored, padding=0, limit=50)
    pad = stored <= 50
    assert _off(path, np.where(pad, 0, _viewer(path, 1000, 3000))) <= 1
    assert "(Pixel Padding Value 0 to Pixel Padding Range Limit 50)" in read_film(path).note


def test_padding_inside_the_window_is_painted_black_not_drawn_as_anatomy(tmp_path):
    stored = _film(border=2500)  # a bright padding value the window would show as tissue
    path = _dcm(tmp_path / "win.dcm", stored, window=(2000, 2000), padding=2500)
    pad = stored == 2500
    assert _off(path, _viewer(path, 0, 4095, pad)) <= 1
    assert "painted black" in read_film(path).note


def test_monochrome1_padding_is_black_after_the_inversion(tmp_path):
    """MONOCHROME1 pads with the top stored value (PS3.3's recommendation, black once inverted)."""
    stored = _film(border=4095)
    path = _dcm(tmp_path / "m1.dcm", stored, photometric="MONOCHROME1", window=(2000, 2000), padding=4095)
    pad = stored == 4095
    assert _off(path, _viewer(path, 0, 4095, pad)) <= 1 and (read_film(path).pixels[pad] == 0).all()
    note = read_film(path).note
    assert note.endswith("MONOCHROME1: inverted so bone is bright") and "painted black" in note


# ---- the note reaches the store and audit-data ---------------------------------------------------

def test_audit_data_lists_the_windowing_and_padding_of_each_film(tmp_path):
    import pandas as pd
    import torch

    from cxrxai.audit import audit_store
    from cxrxai.data.adapters import load_dataset
    from cxrxai.models.registry import LoadedModel
    from cxrxai.models.spec import ModelSpec
    from cxrxai.pipeline import BuildPlan, build_dataset
    from cxrxai.store import open_store

    films = tmp_path / "films"
    films.mkdir()
    _dcm(films / "wide.dcm", _film(), window=(2048, 8192))
    _dcm(films / "pad.dcm", _film(border=0), padding=0)
    paths = ["wide.dcm", "pad.dcm"]
    pd.DataFrame({"path": paths, "Mass": [1, 0]}).to_csv(tmp_path / "cases.csv", index=False)
    tables = load_dataset("folder", films, csv=tmp_path / "cases.csv", labels=["Mass"])
    spec = ModelSpec(name="tiny", arch="densenet121", labels=("Mass",), input_size=16, cam_layer="features")
    model = LoadedModel(torch.nn.Identity(), spec, torch.device("cpu"))
    build_dataset(tmp_path / "s.duckdb", tables, model, BuildPlan(split=None), cache_dir=tmp_path / "cache",
                  workers=1)
    with open_store(tmp_path / "s.duckdb") as store:
        notes = audit_store(store).datasets[0].section("film_notes").table["note"].tolist()
    assert sorted(notes) == sorted(read_film(films / p).note for p in paths)
    assert any("width 8192 from the header (output 0–4095 shown as 0–255" in n for n in notes)
    assert any("padding pixels (Pixel Padding Value 0) left out of the range and painted black" in n
               for n in notes)
