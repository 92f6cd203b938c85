"""Reading radiographs from files into 8-bit grey arrays (files are never modified).

* PNG / JPEG (Pillow, which also detects truncated files; 16-bit PNGs with colour or alpha
  through OpenCV, since Pillow keeps only their high bytes), by the rules of
  :mod:`cxrxai.data._film_rules`: a 16-bit film is scaled from the range it really uses (PNG
  ``sBIT``, else the smallest of 8/10/12/14/16 bits covering its maximum), an alpha channel is
  dropped, RGB is read as grey by the channels' mean when they differ by at most
  :data:`~cxrxai.data._film_rules.GREY_TOLERANCE` levels (else refused as a colour image), and
  the EXIF orientation is applied as image viewers apply it.
* DICOM (pydicom), by :mod:`cxrxai.data._dicom_film`: shown as a DICOM viewer shows it. Pixel
  padding left out and painted black; modality LUT (rescale slope/intercept); the VOI LUT or
  window from the header with its output range mapped to 0–255 (no re-stretch to the film's own
  range unless ``voi_range="film"``), else the film's own range; MONOCHROME1 inverted so bone is
  bright.
* Images larger than :data:`MAX_SIDE` pixels on a side are refused (a decompression bomb or
  the wrong file), as are files with no pixel data.

:func:`read_film` returns the pixels with a one-line note of what was done to them (``None``
for a plain 8-bit grey PNG or JPEG); :func:`read_image` only the pixels. Every error is a
:class:`~cxrxai.errors.DataError` naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import DataError
from ._dicom_film import check_voi_range, read_dicom_film
from ._film_rules import ORIENTATION_TAG, drop_alpha, orient, png_header, to_grey, used_range

__all__ = ["MAX_SIDE", "READER_VERSION", "Film", "is_dicom", "read_dicom", "read_film", "read_image",
           "resize_to_input", "to_uint8"]

MAX_SIDE = 8192

#: Raised whenever a rule here changes the pixels a file reads to (a decode cache keyed by it is
#: then rebuilt, never reused from the old rule). 2: bit depth, EXIF orientation, alpha and tint.
#: 3: DICOM VOI output range shown as a viewer shows it, pixel padding painted black.
READER_VERSION = 3


@dataclass(frozen=True)
class Film:
    """A radiograph as read: ``pixels`` (H, W) uint8, and ``note``, one line saying what the
    reader did that a user might not expect (``"; "``-joined; ``None`` when nothing)."""

    pixels: np.ndarray
    note: str | None = None


def to_uint8(arr: np.ndarray) -> np.ndarray:
    """Scale a grey array to uint8: 8-bit kept, 16-bit divided by 257, others min–max scaled."""
    a = np.asarray(arr)
    if a.dtype == np.uint8:
        return a
    if a.dtype == np.uint16:
        return (a.astype(np.uint32) // 257).astype(np.uint8)
    if np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer):
        a = a.astype(np.float64)
        if not np.isfinite(a).all():
            raise DataError(
                f"the pixels hold {int((~np.isfinite(a)).sum())} NaN or infinite value(s); a radiograph "
                "has finite grey levels"
            )
        lo, hi = float(np.nanmin(a)), float(np.nanmax(a))
        return (
            np.zeros(a.shape, np.uint8) if hi <= lo else np.round(255 * (a - lo) / (hi - lo)).astype(np.uint8)
        )
    raise DataError(f"unsupported pixel type {a.dtype}")


def is_dicom(path: str | Path) -> bool:
    """DICOM files carry 'DICM' at byte 128 (whatever their extension)."""
    with open(path, "rb") as fh:
        fh.seek(128)
        return fh.read(4) == b"DICM"


def read_image(path: str | Path) -> np.ndarray:
    """A PNG/JPEG/DICOM radiograph as a (H, W) uint8 grey array (:func:`read_film`'s pixels)."""
    return read_film(path).pixels


def read_film(path: str | Path, *, voi_range: str = "viewer") -> Film:
    """A PNG/JPEG/DICOM radiograph as (H, W) uint8 grey pixels and the note of what was done to
    them (see the module docstring for the rules). ``voi_range`` (DICOM only, one of
    :data:`~cxrxai.data._dicom_film.VOI_RANGES`): ``"viewer"`` maps the VOI LUT's or window's
    output range to 0–255 as a DICOM viewer does; ``"film"`` re-stretches it to the film's own range."""
    check_voi_range(voi_range)
    p = Path(path)
    if not p.is_file():
        raise DataError(f"no image file at {p}")
    if p.suffix.lower() in (".dcm", ".dicom") or is_dicom(p):
        return _dicom_film(p, voi_range=voi_range)
    try:
        with Image.open(p) as im:
            if max(im.size) > MAX_SIDE:  # checked before decoding a possible decompression bomb
                raise DataError(
                    f"{p} is {im.size[0]}×{im.size[1]} px; images above {MAX_SIDE} px a side are refused"
                )
            header = png_header(p) if im.format == "PNG" else None
            arr = _pixels(im, p, header)
            orientation = im.getexif().get(ORIENTATION_TAG)
            fmt = im.format or p.suffix.lstrip(".").upper()
    except (UnidentifiedImageError, OSError, SyntaxError) as err:  # truncated, corrupt or not an image
        raise DataError(
            f"{p} is not a readable PNG/JPEG image (corrupt, truncated or another format): {err}"
        ) from None
    _check_size(arr, p)
    arr, alpha = drop_alpha(arr)
    depth = None
    if arr.dtype == np.uint16:
        sbit = header.sbit if header else None
        kind = f"16-bit {fmt}" + (", no sBIT" if header and sbit is None else "")
        top, depth = used_range(arr, kind=kind, sbit=sbit)
    elif arr.dtype == np.uint8:
        top = 255
    else:
        return _other_type(arr, p, orientation)
    img, channels = to_grey(arr, top, p)
    img, turned = orient(img, orientation)
    return Film(img, _joined(depth, alpha, channels, turned))


def _pixels(im: Image.Image, p: Path, header) -> np.ndarray:
    """The decoded samples, (H, W) or (H, W, C) with any alpha last, at their stored depth."""
    if header and header.bit_depth == 16 and header.colour_type != 0:
        arr = cv2.imdecode(np.fromfile(p, np.uint8), cv2.IMREAD_UNCHANGED)  # Pillow keeps only the high bytes
        if arr is None:
            raise DataError(f"{p} is not a readable 16-bit PNG image (corrupt or truncated)")
        return arr  # BGR(A): the channel order does not matter to a grey reading
    im.load()
    if im.mode in ("P", "PA", "CMYK", "YCbCr"):
        im = im.convert("RGBA" if im.mode == "PA" or "transparency" in im.info else "RGB")
    elif im.mode == "1":
        im = im.convert("L")
    arr = np.asarray(im)
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if arr.dtype == np.int32 and arr.size and arr.min() >= 0 and arr.max() <= 65535:
        arr = arr.astype(np.uint16)  # 16-bit PNGs open in PIL's 32-bit integer mode in older Pillows
    return arr


def _other_type(arr: np.ndarray, p: Path, orientation) -> Film:
    if arr.ndim != 2:
        raise DataError(f"{p} holds {arr.dtype} pixels of shape {arr.shape}; expected grey, RGB or 8/16-bit")
    lo, hi = float(np.nanmin(arr)), float(np.nanmax(arr))
    img, turned = orient(to_uint8(arr), orientation)
    note = f"{arr.dtype} pixels: scaled from their own range {lo:g}–{hi:g} to 0–255"
    return Film(img, _joined(note, turned))


def _joined(*notes: str | None) -> str | None:
    return "; ".join(n for n in notes if n) or None


def read_dicom(path: str | Path, *, voi_range: str = "viewer") -> np.ndarray:
    """A DICOM radiograph as (H, W) uint8 (see the module docstring for the steps)."""
    return _dicom_film(Path(path), voi_range=voi_range).pixels


def _dicom_film(p: Path, *, voi_range: str = "viewer") -> Film:
    import pydicom

    try:
        ds = pydicom.dcmread(str(p))
    except (pydicom.errors.InvalidDicomError, OSError, EOFError) as err:
        raise DataError(f"{p} is not a readable DICOM file: {err}") from None
    if "PixelData" not in ds:
        raise DataError(f"{p} has no pixel data")
    try:
        arr = ds.pixel_array
    except (ValueError, RuntimeError, AttributeError, NotImplementedError) as err:
        raise DataError(f"cannot decode the pixels of {p}: {err}") from None
    if arr.ndim != 2:
        raise DataError(f"{p} holds {arr.ndim}-D pixels (shape {arr.shape}); expected one grey frame")
    _check_size(arr, p)
    return Film(*read_dicom_film(ds, arr, voi_range=voi_range))


def _check_size(img: np.ndarray, p: Path) -> None:
    if max(img.shape[:2]) > MAX_SIDE:
        raise DataError(
            f"{p} is {img.shape[1]}×{img.shape[0]} px; images above {MAX_SIDE} px a side are refused"
        )
    if min(img.shape[:2]) < 8:
        raise DataError(f"{p} is only {img.shape[1]}×{img.shape[0]} px")


def resize_to_input(image: np.ndarray, size: int) -> np.ndarray:
    """An (H, W) uint8 film resized to ``size`` × ``size`` uint8 with OpenCV's area interpolation
    (each output pixel the mean of its footprint when shrinking). The one resize between a file
    and a model: the precompute's decode cache and the live path both use it, so a live map of a
    stored case sees exactly the input the stored map saw."""
    return cv2.resize(np.asarray(image), (size, size), interpolation=cv2.INTER_AREA)
