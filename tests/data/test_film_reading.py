"""Films read as their modality means: the bit depth a 16-bit PNG really holds (sBIT, else its
maximum), EXIF orientation, grey + alpha and faintly tinted RGB taken as grey, real colour
refused with the measured difference; and every such change recorded as the image's note."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest
from PIL import Image, ImageOps

from cxrxai.data.io import read_dicom, read_image
from cxrxai.errors import DataError


def _note(path) -> str | None:
    from cxrxai.data.io import read_film

    return read_film(path).note


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _with_chunk_before_idat(png: bytes, kind: bytes, data: bytes) -> bytes:
    """The PNG bytes with one chunk inserted just before the first IDAT (where sBIT must sit)."""
    at = png.index(b"IDAT") - 4
    return png[:at] + _chunk(kind, data) + png[at:]


def _png16(path: Path, pixels: np.ndarray, sbit: int | None = None) -> Path:
    """A 16-bit grey PNG written by OpenCV, with a real sBIT chunk when ``sbit`` is given."""
    ok, buf = cv2.imencode(".png", pixels.astype(np.uint16))
    data = buf.tobytes()
    path.write_bytes(data if sbit is None else _with_chunk_before_idat(data, b"sBIT", bytes([sbit])))
    return path


def _raw_png(path: Path, pixels: np.ndarray, colour_type: int, sbit: bytes | None = None) -> Path:
    """A PNG written byte by byte (filter 0 on every row), for layouts no library here writes:
    16-bit grey + alpha (colour type 4) and 16-bit RGB (2)."""
    h, w = pixels.shape[:2]
    depth = 16 if pixels.dtype == np.uint16 else 8
    rows = pixels.astype(">u2" if depth == 16 else np.uint8).reshape(h, -1).view(np.uint8).reshape(h, -1)
    raw = b"".join(b"\0" + row.tobytes() for row in rows)
    body = _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, colour_type, 0, 0, 0))
    body += _chunk(b"sBIT", sbit) if sbit else b""
    body += _chunk(b"IDAT", zlib.compress(raw)) + _chunk(b"IEND", b"")
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + body)
    return path


FILM = Path(__file__).parents[1] / "fixtures/chexlocalize/valid/patient64541/study1/view1_frontal.jpg"
RAMP12 = np.tile(np.linspace(0, 4095, 32).round().astype(np.uint16), (24, 1))  # 12-bit data, 0 … 4095


def _to_8_bits(data: np.ndarray, top: int) -> np.ndarray:
    return np.round(data.astype(np.float64) * 255 / top).astype(np.uint8)


# ---- bit depth ---------------------------------------------------------------------------------

def test_12_bit_data_in_a_16_bit_png_with_sbit_fills_the_8_bit_range(tmp_path):
    path = _png16(tmp_path / "padchest.png", RAMP12, sbit=12)
    img = read_image(path)
    assert img.dtype == np.uint8 and img[0, 0] == 0 and img[0, -1] == 255  # not 0 … 15: a black film
    assert np.array_equal(img, _to_8_bits(RAMP12, 4095))
    assert _note(path) == "16-bit PNG, sBIT 12: scaled from 0–4095 to 0–255"


def test_sbit_wins_over_the_maximum(tmp_path):
    """sBIT 14 with values only up to 3000: the film is dark, as written; the maximum rule would
    have read it as 12-bit and brightened it."""
    dim = (RAMP12.astype(np.int64) * 3000 // 4095).astype(np.uint16)
    img = read_image(_png16(tmp_path / "dim.png", dim, sbit=14))
    assert img[0, -1] == round(3000 * 255 / 16383) == 47
    assert _note(tmp_path / "dim.png") == "16-bit PNG, sBIT 14: scaled from 0–16383 to 0–255"


def test_sbit_contradicted_by_the_data_means_samples_already_scaled_up(tmp_path):
    """The PNG spec asks encoders to scale 12-bit samples up to 16 bits and record sBIT 12; such a
    film holds values above 4095 and is read over the full 16-bit range."""
    scaled = (RAMP12.astype(np.uint32) * 65535 // 4095).astype(np.uint16)
    path = _png16(tmp_path / "spec.png", scaled, sbit=12)
    assert np.array_equal(read_image(path), np.round(scaled / 257).astype(np.uint8))
    assert _note(path) == ("16-bit PNG, sBIT 12 but values up to 65535 (samples already scaled to 16 bits, "
                           "as the PNG spec asks): scaled from 0–65535 to 0–255")


def test_12_bit_data_without_sbit_is_read_by_its_maximum(tmp_path):
    data = (RAMP12.astype(np.int64) * 3900 // 4095).astype(np.uint16)
    path = _png16(tmp_path / "nosbit.png", data)
    img = read_image(path)
    assert img[0, -1] == round(3900 * 255 / 4095) == 243
    assert _note(path) == "16-bit PNG, no sBIT, max 3900 ≤ 4095: read as 12-bit, scaled from 0–4095 to 0–255"


@pytest.mark.parametrize("top,bits", [(200, 8), (1000, 10), (16000, 14)])
def test_the_maximum_rule_takes_the_smallest_depth_covering_the_data(tmp_path, top, bits):
    data = np.tile(np.linspace(0, top, 16).round().astype(np.uint16), (16, 1))
    img = read_image(_png16(tmp_path / "d.png", data))
    assert img[0, -1] == round(top * 255 / (2**bits - 1))
    assert f"read as {bits}-bit, scaled from 0–{2**bits - 1} to 0–255" in _note(tmp_path / "d.png")


def test_full_range_16_bit_png_is_divided_by_257_and_says_so(tmp_path):
    grey = np.tile(np.arange(0, 256, 16, dtype=np.uint8), (16, 1))
    grey[0, -1] = 255
    path = _png16(tmp_path / "full.png", grey.astype(np.uint16) * 257)
    assert np.array_equal(read_image(path), grey)
    assert _note(path) == ("16-bit PNG, no sBIT, max 65535 > 16383: full 16-bit range, "
                           "scaled from 0–65535 to 0–255")


def test_plain_8_bit_png_and_jpeg_get_no_note(tmp_path):
    grey = np.tile(np.arange(0, 256, 16, dtype=np.uint8), (16, 1))
    cv2.imwrite(str(tmp_path / "a.png"), grey)
    cv2.imwrite(str(tmp_path / "a.jpg"), grey)
    Image.fromarray(np.dstack([grey] * 3)).save(tmp_path / "rgb.png")  # grey saved as RGB: nothing lost
    assert _note(tmp_path / "a.png") is None and _note(tmp_path / "a.jpg") is None
    assert _note(tmp_path / "rgb.png") is None and np.array_equal(read_image(tmp_path / "rgb.png"), grey)


# ---- EXIF orientation ---------------------------------------------------------------------------

def _upright(h=60, w=40) -> np.ndarray:
    """A film as the viewer shows it: a bright marker in the top-left corner, dark elsewhere."""
    img = np.full((h, w), 30, np.uint8)
    img[:10, :8] = 250
    return img


def _with_orientation(img: np.ndarray, path: Path, orientation: int, **save) -> Path:
    exif = Image.Exif()
    exif[0x0112] = orientation
    Image.fromarray(img).save(path, exif=exif, **save)
    return path


def test_jpeg_with_exif_orientation_6_is_read_upright(tmp_path):
    """Orientation 6: the viewer rotates the stored pixels 90° clockwise; so the camera stored the
    upright film rotated 90° counter-clockwise, width and height swapped."""
    upright = _upright()
    stored = np.ascontiguousarray(np.rot90(upright, k=1))
    path = _with_orientation(stored, tmp_path / "side.jpg", 6, quality=95)
    img = read_image(path)
    assert img.shape == upright.shape == (60, 40)
    assert img[:10, :8].mean() > 200 and img[-10:, -8:].mean() < 60 and img[:10, -8:].mean() < 60
    assert _note(path) == "EXIF orientation 6 applied: rotated 90° clockwise"


@pytest.mark.parametrize("orientation", range(1, 9))
def test_every_exif_orientation_reads_as_image_viewers_show_it(tmp_path, orientation):
    stored = np.arange(12 * 20, dtype=np.uint8).reshape(12, 20)
    path = _with_orientation(stored, tmp_path / "o.png", orientation)
    with Image.open(path) as im:
        shown = np.asarray(ImageOps.exif_transpose(im))
    assert np.array_equal(read_image(path), shown)
    note = _note(path)
    assert note is None if orientation == 1 else note.startswith(f"EXIF orientation {orientation} applied: ")


# ---- channels -----------------------------------------------------------------------------------

def test_grey_plus_alpha_png_is_grey_with_the_alpha_dropped(tmp_path):
    grey = np.tile(np.arange(0, 256, 16, dtype=np.uint8), (16, 1))
    alpha = np.full_like(grey, 255)
    Image.fromarray(np.dstack([grey, alpha]), "LA").save(tmp_path / "la.png")
    assert np.array_equal(read_image(tmp_path / "la.png"), grey)
    assert _note(tmp_path / "la.png") == "alpha channel dropped (every pixel opaque)"
    alpha[:4] = 0
    Image.fromarray(np.dstack([grey, alpha]), "LA").save(tmp_path / "holes.png")
    assert _note(tmp_path / "holes.png") == "alpha channel dropped (25.0% of pixels not opaque)"


def test_16_bit_grey_plus_alpha_keeps_its_low_byte_and_bit_depth(tmp_path):
    """Pillow reads 16-bit grey + alpha as 8-bit RGBA from the high bytes: 12-bit data would be
    0 … 15, a black film. The reader decodes all 16 bits."""
    la = np.dstack([RAMP12, np.full_like(RAMP12, 65535)])
    path = _raw_png(tmp_path / "la16.png", la, colour_type=4, sbit=bytes([12, 16]))
    assert np.array_equal(read_image(path), _to_8_bits(RAMP12, 4095))
    assert _note(path) == ("16-bit PNG, sBIT 12: scaled from 0–4095 to 0–255; "
                           "alpha channel dropped (every pixel opaque)")


def test_16_bit_rgb_with_12_bit_grey_data_is_read_as_grey(tmp_path):
    path = _raw_png(tmp_path / "rgb16.png", np.dstack([RAMP12] * 3), colour_type=2)
    assert np.array_equal(read_image(path), _to_8_bits(RAMP12, 4095))
    assert _note(path).startswith("16-bit PNG, no sBIT, max 4095 ≤ 4095: read as 12-bit")


def test_rgb_film_with_a_faint_tint_is_grey_by_channel_mean(tmp_path):
    grey = np.tile(np.arange(10, 250, 15, dtype=np.uint8), (16, 1))
    tinted = np.dstack([grey, grey + 1, grey + 3])  # a scanner's warm tint: up to 3 levels apart
    Image.fromarray(tinted).save(tmp_path / "tint.png")
    assert np.array_equal(read_image(tmp_path / "tint.png"), grey + 1)  # (g + g+1 + g+3) / 3 rounds to g+1
    note = _note(tmp_path / "tint.png")
    assert note == "RGB with channels within 3 grey levels: converted to grey by their mean"
    # the same tint on a real film through JPEG's colour rounding (quality 95): still grey
    film = np.asarray(Image.open(FILM).convert("L"))[:512, :512].astype(int)
    Image.fromarray(np.clip(np.dstack([film, film + 1, film + 3]), 0, 255).astype(np.uint8)).save(
        tmp_path / "tint.jpg", quality=95)
    assert _note(tmp_path / "tint.jpg") == note


def test_real_colour_is_refused_with_the_measured_difference(tmp_path):
    grey = np.full((16, 16), 100, np.uint8)
    colour = np.dstack([grey, grey, grey])
    colour[4:8, 4:8] = (187, 100, 100)  # a red annotation
    Image.fromarray(colour).save(tmp_path / "colour.png")
    expected = r"colour.png is a colour image: its channels differ by up to 87 grey levels \(tolerance 8\)"
    with pytest.raises(DataError, match=expected):
        read_image(tmp_path / "colour.png")


# ---- DICOM notes (the pixels: tests/data/test_dicom_display.py) ---------------------------------

def test_dicom_notes_say_how_the_grey_levels_were_chosen(tmp_path):
    from tests.data.test_io_and_folder import _dicom

    ramp = np.tile(np.arange(0, 1600, 100, dtype=np.uint16), (16, 1))
    own = _dicom(tmp_path / "own.dcm", ramp)
    assert _note(own) == ("DICOM, 16 bits stored, no window in the header: "
                          "scaled from its own range 0–1500 to 0–255")
    m1 = _dicom(tmp_path / "m1.dcm", ramp, photometric="MONOCHROME1", slope=2.0, intercept=-1000.0)
    assert _note(m1) == ("DICOM, 16 bits stored, rescale slope 2 intercept -1000 applied, "
                         "no window in the header: scaled from its own range -1000–2000 to 0–255; "
                         "MONOCHROME1: inverted so bone is bright")
    win = _dicom(tmp_path / "w.dcm", ramp, window=(500, 400))
    assert _note(win) == ("DICOM, 16 bits stored, window centre 500 width 400 from the header "
                          "(output 0–65535 shown as 0–255 as a viewer shows it)")
    from cxrxai.data.io import read_film

    for p in (own, m1, win):
        assert np.array_equal(read_film(p).pixels, read_dicom(p))


# ---- decode cache and the store ------------------------------------------------------------------

def _films(root: Path) -> list[tuple[str, str]]:
    root.mkdir(exist_ok=True)
    cv2.imwrite(str(root / "plain.png"), np.tile(np.arange(0, 256, 8, dtype=np.uint8), (32, 1)))
    _png16(root / "padchest.png", np.vstack([RAMP12, RAMP12]), sbit=12)
    return [("plain", "plain.png"), ("padchest", "padchest.png")]


def test_decode_returns_each_films_note_and_keys_the_cache_by_the_reader(tmp_path, monkeypatch):
    from cxrxai.data import decode

    items = _films(tmp_path / "films")
    out = decode.decode_images(tmp_path / "films", items, 16, tmp_path / "cache", workers=1)
    assert out.notes == {"padchest": "16-bit PNG, sBIT 12: scaled from 0–4095 to 0–255"}
    assert out.pixels[out.image_ids.index("padchest")].max() > 240  # not 15: a black film
    monkeypatch.setattr(decode, "READER_VERSION", decode.READER_VERSION + 1)
    decode.decode_images(tmp_path / "films", items, 16, tmp_path / "cache", workers=1)
    assert len(list((tmp_path / "cache").glob("decoded-*.npy"))) == 2  # a new reader: a new cache


def test_precompute_writes_decode_notes_into_the_images_table(tmp_path):
    import torch

    from cxrxai.data.adapters import load_dataset
    from cxrxai.models.registry import LoadedModel
    from cxrxai.models.spec import ModelSpec
    from cxrxai.pipeline import BuildPlan, build_dataset
    from cxrxai.store import open_store

    items = _films(tmp_path / "films")
    pd.DataFrame({"path": [p for _, p in items], "Mass": [1, 0]}).to_csv(tmp_path / "cases.csv", index=False)
    tables = load_dataset("folder", tmp_path / "films", csv=tmp_path / "cases.csv", labels=["Mass"])
    spec = ModelSpec(name="tiny", arch="densenet121", labels=("Mass",), input_size=16, cam_layer="features")
    model = LoadedModel(torch.nn.Identity(), spec, torch.device("cpu"))
    build_dataset(tmp_path / "s.duckdb", tables, model, BuildPlan(split=None), cache_dir=tmp_path / "cache",
                  workers=1)
    images = open_store(tmp_path / "s.duckdb").images().set_index("path")
    assert images.loc["padchest.png", "decode_note"] == "16-bit PNG, sBIT 12: scaled from 0–4095 to 0–255"
    assert pd.isna(images.loc["plain.png", "decode_note"])


def test_a_precompute_of_another_split_keeps_what_an_earlier_run_measured(tmp_path):
    """A run on one split must not blank the size and reader's note an earlier run stored for the
    images of another split (the adapter knows neither)."""
    import torch

    from cxrxai.data.adapters import load_dataset
    from cxrxai.models.registry import LoadedModel
    from cxrxai.models.spec import ModelSpec
    from cxrxai.pipeline import BuildPlan, build_dataset
    from cxrxai.store import open_store

    items = _films(tmp_path / "films")
    pd.DataFrame({"path": [p for _, p in items], "Mass": [1, 0], "split": ["val", "test"]}).to_csv(
        tmp_path / "cases.csv", index=False)
    tables = load_dataset("folder", tmp_path / "films", csv=tmp_path / "cases.csv", labels=["Mass"])
    spec = ModelSpec(name="tiny", arch="densenet121", labels=("Mass",), input_size=16, cam_layer="features")
    model = LoadedModel(torch.nn.Identity(), spec, torch.device("cpu"))
    for split in ("test", "val"):  # padchest.png (test) is measured first, then left out
        build_dataset(tmp_path / "s.duckdb", tables, model, BuildPlan(split=split), cache_dir=tmp_path / "cache",
                      workers=1)
    images = open_store(tmp_path / "s.duckdb").images().set_index("path")
    assert images.loc["padchest.png", "decode_note"] == "16-bit PNG, sBIT 12: scaled from 0–4095 to 0–255"
    assert images["height"].notna().all() and images["width"].notna().all()
