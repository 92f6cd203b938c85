"""Reading radiographs from files into 8-bit grey arrays (files are never modified).

* PNG / JPEG (Pillow, which also detects truncated files), 8- or 16-bit: 16-bit is scaled by 1/257; a colour file is accepted only when its
  channels are equal (a grey image saved as RGB) — a truly colour image is not a radiograph.
* DICOM (pydicom): modality LUT (rescale slope/intercept), then the VOI LUT or window from the
  header when present (else the full range), MONOCHROME1 inverted so bone is bright, then
  scaled to 8 bits.
* Images larger than :data:`MAX_SIDE` pixels on a side are refused (a decompression bomb or
  the wrong file), as are files with no pixel data.

Every error is a :class:`~cxrxai.errors.DataError` naming the file.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import DataError

__all__ = ["MAX_SIDE", "is_dicom", "read_dicom", "read_image", "resize_to_input", "to_uint8"]

MAX_SIDE = 8192


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
            raise DataError(f"the pixels hold {int((~np.isfinite(a)).sum())} NaN or infinite value(s); a radiograph "
                            "has finite grey levels")
        lo, hi = float(np.nanmin(a)), float(np.nanmax(a))
        return np.zeros(a.shape, np.uint8) if hi <= lo else np.round(255 * (a - lo) / (hi - lo)).astype(np.uint8)
    raise DataError(f"unsupported pixel type {a.dtype}")


def is_dicom(path: str | Path) -> bool:
    """DICOM files carry 'DICM' at byte 128 (whatever their extension)."""
    with open(path, "rb") as fh:
        fh.seek(128)
        return fh.read(4) == b"DICM"


def read_image(path: str | Path) -> np.ndarray:
    """A PNG/JPEG/DICOM radiograph as a (H, W) uint8 grey array."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"no image file at {p}")
    if p.suffix.lower() in (".dcm", ".dicom") or is_dicom(p):
        return read_dicom(p)
    try:
        with Image.open(p) as im:
            if max(im.size) > MAX_SIDE:  # checked before decoding a possible decompression bomb
                raise DataError(f"{p} is {im.size[0]}×{im.size[1]} px; images above {MAX_SIDE} px a side are refused")
            im.load()
            img = _grey(np.asarray(im.convert("RGB") if im.mode in ("P", "PA", "CMYK", "YCbCr") else im), p)
    except (UnidentifiedImageError, OSError, SyntaxError) as err:  # truncated, corrupt or not an image
        raise DataError(f"{p} is not a readable PNG/JPEG image (corrupt, truncated or another format): {err}") from None
    _check_size(img, p)
    return to_uint8(img)


def _grey(arr: np.ndarray, p: Path) -> np.ndarray:
    if arr.ndim == 3:
        channels = arr[..., :3]
        if not (np.array_equal(channels[..., 0], channels[..., 1]) and np.array_equal(channels[..., 1], channels[..., 2])):
            raise DataError(f"{p} is a colour image; a radiograph should be greyscale")
        arr = channels[..., 0]
    if arr.dtype == np.int32 and arr.size and arr.min() >= 0 and arr.max() <= 65535:
        arr = arr.astype(np.uint16)  # 16-bit PNGs open in PIL's 32-bit integer mode
    return arr


def read_dicom(path: str | Path) -> np.ndarray:
    """A DICOM radiograph as (H, W) uint8 (see the module docstring for the steps)."""
    import pydicom
    from pydicom.pixels import apply_modality_lut, apply_voi_lut

    p = Path(path)
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
    values = apply_modality_lut(arr, ds)
    if "VOILUTSequence" in ds or "WindowCenter" in ds:
        values = apply_voi_lut(values, ds)
    img = to_uint8(np.asarray(values, np.float64))
    if str(ds.get("PhotometricInterpretation", "MONOCHROME2")).upper() == "MONOCHROME1":
        img = 255 - img
    return img


def _check_size(img: np.ndarray, p: Path) -> None:
    if max(img.shape[:2]) > MAX_SIDE:
        raise DataError(f"{p} is {img.shape[1]}×{img.shape[0]} px; images above {MAX_SIDE} px a side are refused")
    if min(img.shape[:2]) < 8:
        raise DataError(f"{p} is only {img.shape[1]}×{img.shape[0]} px")


def resize_to_input(image: np.ndarray, size: int) -> np.ndarray:
    """An (H, W) uint8 film resized to ``size`` × ``size`` uint8 with OpenCV's area interpolation
    (each output pixel the mean of its footprint when shrinking). The one resize between a file
    and a model: the precompute's decode cache and the live path both use it, so a live map of a
    stored case sees exactly the input the stored map saw."""
    return cv2.resize(np.asarray(image), (size, size), interpolation=cv2.INTER_AREA)
