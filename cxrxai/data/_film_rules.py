"""The rules by which :mod:`cxrxai.data.io` turns a raster file's pixels into an 8-bit grey film.

Each rule returns what it did as one short note, or ``None`` when nothing happened that a user
might not expect (a plain 8-bit grey PNG or JPEG gets no note at all).

* **Bit depth** (:func:`used_range`). A 16-bit file often holds fewer bits: PadChest ships 12-bit
  data (0–4095) in 16-bit PNGs, which divided by 257 would be a black film (0–15). The range
  used is, in order: the PNG ``sBIT`` chunk (significant bits); else the smallest depth of
  :data:`BIT_DEPTHS` covering the data's maximum. When values exceed the sBIT range the
  encoder already scaled the samples up to 16 bits, as the PNG spec asks, and the full range
  is used. The film is then scaled linearly, ``round(v × 255 / top)``; for the full 16 bits
  this is a division by 257.
* **Channels** (:func:`drop_alpha`, :func:`to_grey`). An alpha channel is dropped (how much of
  the film was not opaque is said). RGB is grey when its channels differ by at most
  :data:`GREY_TOLERANCE` grey levels anywhere (on the 0–255 scale), converted by their mean;
  beyond that it is a colour image and refused.
* **Orientation** (:func:`orient`). The EXIF Orientation tag is applied as every image viewer
  (and ``PIL.ImageOps.exif_transpose``) applies it, so boxes drawn on the film as shown land
  on the same anatomy.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import DataError

__all__ = ["BIT_DEPTHS", "GREY_TOLERANCE", "ORIENTATION_TAG", "PngHeader", "drop_alpha", "orient",
           "png_header", "to_grey", "used_range"]

#: Depths a film may really hold (the rule without sBIT takes the smallest covering the maximum).
BIT_DEPTHS = (8, 10, 12, 14, 16)

#: Largest difference between the RGB channels of a pixel (grey levels, 0–255 scale) still read as
#: grey. Scanned films and viewer exports carry a faint tint of a few levels, and JPEG's colour
#: rounding can widen it: measured on a CheXpert film given a 3-level tint (channels g, g+1, g+3,
#: clipped at 255) and saved by Pillow at quality 95, the channels read back 3 levels apart, and
#: up to 7 in the whole film (a grey film saved as RGB JPEG: 0). A colour annotation, photograph
#: or false-colour map differs by tens of levels. 8 accepts the first and refuses the second.
GREY_TOLERANCE = 8

#: The EXIF tag of the orientation in which a viewer shows the stored pixels.
ORIENTATION_TAG = 0x0112

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class PngHeader:
    """What Pillow does not tell: the stored bit depth, the colour type (0 grey, 2 RGB,
    3 palette, 4 grey + alpha, 6 RGBA) and the significant bits of the grey or colour samples
    (the ``sBIT`` chunk, ``None`` without one)."""

    bit_depth: int
    colour_type: int
    sbit: int | None


def png_header(path: str | Path) -> PngHeader | None:
    """The IHDR and sBIT chunks of a PNG file (``None`` if it is not one): chunks are read one by
    one up to the first IDAT, where the PNG spec puts sBIT at the latest."""
    depth = colour = sbit = None
    with open(path, "rb") as fh:
        if fh.read(8) != _PNG_SIGNATURE:
            return None
        while len(head := fh.read(8)) == 8:
            length, kind = struct.unpack(">I4s", head)
            if kind in (b"IDAT", b"IEND"):
                break
            body = fh.read(length)
            fh.seek(4, 1)  # the CRC
            if kind == b"IHDR" and length >= 10:
                depth, colour = body[8], body[9]
            elif kind == b"sBIT" and body:
                sbit = max(body[:1] if colour in (0, 4) else body[:3])  # grey or colour samples, not alpha
    return None if depth is None else PngHeader(depth, colour, sbit)


def used_range(values: np.ndarray, *, kind: str, sbit: int | None = None) -> tuple[int, str]:
    """The top of the range ``values`` (16-bit) really use, and the note saying how it was found
    (``kind`` names the file, e.g. ``"16-bit PNG"``; ``sbit`` its significant bits, if known).

    >>> used_range(np.array([0, 3900]), kind="16-bit PNG")
    (4095, '16-bit PNG, max 3900 ≤ 4095: read as 12-bit, scaled from 0–4095 to 0–255')
    >>> used_range(np.array([0, 3900]), kind="16-bit PNG", sbit=12)[1]
    '16-bit PNG, sBIT 12: scaled from 0–4095 to 0–255'
    """
    top = int(values.max()) if values.size else 0
    if sbit is not None and 0 < sbit <= 16:
        full = 2**sbit - 1
        if top <= full:
            return full, f"{kind}, sBIT {sbit}: scaled from 0–{full} to 0–255"
        return 65535, (f"{kind}, sBIT {sbit} but values up to {top} (samples already scaled to 16 bits, "
                       "as the PNG spec asks): scaled from 0–65535 to 0–255")
    bits = next(b for b in BIT_DEPTHS if top <= 2**b - 1)
    if bits == 16:
        return 65535, f"{kind}, max {top} > {2**14 - 1}: full 16-bit range, scaled from 0–65535 to 0–255"
    full = 2**bits - 1
    return full, f"{kind}, max {top} ≤ {full}: read as {bits}-bit, scaled from 0–{full} to 0–255"


def drop_alpha(arr: np.ndarray) -> tuple[np.ndarray, str | None]:
    """``(H, W, 2 or 4)`` grey or colour + alpha → without the alpha, saying how much of the
    film was not opaque; anything else unchanged."""
    if arr.ndim != 3 or arr.shape[-1] not in (2, 4):
        return arr, None
    alpha = arr[..., -1]
    opaque = np.iinfo(arr.dtype).max if np.issubdtype(arr.dtype, np.integer) else 1.0
    see_through = float((alpha < opaque).mean())
    what = "every pixel opaque" if see_through == 0 else f"{100 * see_through:.1f}% of pixels not opaque"
    rest = arr[..., :-1]
    return (rest[..., 0] if rest.shape[-1] == 1 else rest), f"alpha channel dropped ({what})"


def to_grey(arr: np.ndarray, top: int, path: Path) -> tuple[np.ndarray, str | None]:
    """``(H, W)`` or ``(H, W, 3)`` integers in 0…``top`` → ``(H, W)`` uint8, ``round(v × 255 / top)``
    of the grey level or of the channels' mean; a :class:`DataError` naming the measured channel
    difference when RGB is beyond :data:`GREY_TOLERANCE`."""
    if arr.ndim == 2:
        return _scaled(arr, top), None
    if arr.ndim != 3 or arr.shape[-1] != 3:
        raise DataError(f"{path} has pixels of shape {arr.shape}; expected grey (H, W) or RGB (H, W, 3)")
    spread = int((arr.max(axis=-1).astype(np.int64) - arr.min(axis=-1)).max())
    if spread == 0:
        return _scaled(arr[..., 0], top), None
    levels = _levels(spread * 255 / top)
    if spread * 255 > GREY_TOLERANCE * top:
        raise DataError(f"{path} is a colour image: its channels differ by up to {levels} grey levels "
                        f"(tolerance {GREY_TOLERANCE}); a radiograph should be greyscale")
    grey = _scaled(arr.sum(axis=-1, dtype=np.uint32), 3 * top)
    return grey, f"RGB with channels within {levels} grey levels: converted to grey by their mean"


def _scaled(values: np.ndarray, top: int) -> np.ndarray:
    if top == 255 and values.dtype == np.uint8:
        return values
    v = values.astype(np.uint32)  # v × 510 stays below 2³² for every top used here (3 × 65535 at most)
    return ((v * 510 + top) // (2 * top)).astype(np.uint8)  # round(v × 255 / top), half up


def _levels(x: float) -> str:
    return f"{x:.0f}" if abs(x - round(x)) < 0.05 else f"{x:.1f}"


_ORIENTATIONS: dict[int, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {
    2: ("mirrored left–right", lambda a: a[:, ::-1]),
    3: ("rotated 180°", lambda a: a[::-1, ::-1]),
    4: ("mirrored top–bottom", lambda a: a[::-1]),
    5: ("mirrored across the main diagonal (transposed)", lambda a: a.T),
    6: ("rotated 90° clockwise", lambda a: np.rot90(a, -1)),
    7: ("mirrored across the anti-diagonal (transversed)", lambda a: a.T[::-1, ::-1]),
    8: ("rotated 90° counter-clockwise", lambda a: np.rot90(a, 1)),
}


def orient(img: np.ndarray, orientation: int | None) -> tuple[np.ndarray, str | None]:
    """An ``(H, W)`` film turned as a viewer shows it for an EXIF ``orientation`` (1 or ``None``:
    as stored; a value outside 1–8 is ignored, and said so).

    >>> orient(np.array([[1, 2], [3, 4]]), 6)
    (array([[3, 1],
           [4, 2]]), 'EXIF orientation 6 applied: rotated 90° clockwise')
    """
    if orientation in (None, 1):
        return img, None
    if orientation not in _ORIENTATIONS:
        return img, f"EXIF orientation {orientation!r} is not one of 1–8: ignored"
    what, turn = _ORIENTATIONS[orientation]
    return np.ascontiguousarray(turn(img)), f"EXIF orientation {orientation} applied: {what}"
