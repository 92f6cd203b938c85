"""A DICOM radiograph shown as a DICOM viewer shows it (PS3.3 C.11, PS3.4 N.2), as 8-bit grey.

1. Pixels equal to Pixel Padding Value (0028,0120), or between it and Pixel Padding Range Limit
   (0028,0121) inclusive, compared with the stored values (PS3.3 C.7.5.1.1.2), are padding: not
   image. They are left out of every range below and painted black (0) in the result, whatever
   the photometric interpretation (the standard recommends padding that shows as black).
2. The modality LUT (Modality LUT Sequence, or rescale slope and intercept).
3. The VOI LUT Sequence when present, else the first window (Window Center/Width, with its VOI
   LUT Function: LINEAR, LINEAR_EXACT or SIGMOID), both as pydicom's ``apply_voi_lut`` applies
   them. Their *output range* maps linearly to 0–255, as a viewer maps it to the display: a VOI
   LUT's is 0 … 2^n − 1 for its n bits per entry (PS3.3 C.11.2.1.1); a window's is the range the
   stored bits can hold after the modality LUT (PS3.3 C.11.2.1.2; pydicom's ``apply_windowing``).
   A window wider than the data therefore shows it grey, as a viewer does. ``voi_range="film"``
   instead stretches the VOI output to the film's own minimum–maximum (padding left out): a
   deliberate contrast change, never the default, named in the note.
   With neither, the film's own range (padding left out) maps to 0–255.
4. MONOCHROME1 inverted so bone is bright.

The note says which window or LUT was applied, the output range shown, any re-stretch, the
padding pixels and the inversion.
"""

from __future__ import annotations

import numpy as np

from ..errors import DataError, UnknownNameError

__all__ = ["VOI_RANGES", "check_voi_range", "read_dicom_film"]

#: How the VOI output reaches 0–255: ``"viewer"`` (its output range, as a DICOM viewer shows it)
#: or ``"film"`` (re-stretched to the film's own minimum–maximum).
VOI_RANGES = ("viewer", "film")


def check_voi_range(voi_range: str) -> None:
    """Refuse a ``voi_range`` outside :data:`VOI_RANGES` (:class:`~cxrxai.errors.UnknownNameError`)."""
    if voi_range not in VOI_RANGES:
        raise UnknownNameError("voi_range", voi_range, VOI_RANGES)


def read_dicom_film(ds, arr: np.ndarray, *, voi_range: str = "viewer") -> tuple[np.ndarray, str]:
    """(H, W) uint8 pixels and the note, from the dataset ``ds`` and its stored pixels ``arr``."""
    from pydicom.pixels import apply_modality_lut, apply_voi_lut

    check_voi_range(voi_range)
    pad, pad_note = padding(ds, arr)
    values = _integral(np.asarray(apply_modality_lut(arr, ds)))
    image = values[~pad]
    parts = [f"DICOM, {ds.get('BitsStored', 'unknown')} bits stored"] + _modality_note(ds)
    voi = _voi_output(ds)
    if voi is None:
        lo, hi = _own_range(image)
        parts.append(f"no window in the header: scaled from its own range {lo:g}–{hi:g} to 0–255")
    else:
        values = np.asarray(apply_voi_lut(values, ds), np.float64)
        (lo, hi), said = voi
        if voi_range == "film":
            lo, hi = _own_range(values[~pad])
            parts.append(f"{said}, then stretched to the film's own range {lo:g}–{hi:g} "
                         "(voi_range='film'))")
        else:
            parts.append(f"{said} shown as 0–255 as a viewer shows it)")
    img = _to_display(np.asarray(values, np.float64), lo, hi)
    notes = [", ".join(parts), pad_note]
    if str(ds.get("PhotometricInterpretation", "MONOCHROME2")).upper() == "MONOCHROME1":
        img = 255 - img
        notes.append("MONOCHROME1: inverted so bone is bright")
    img[pad] = 0
    return img, "; ".join(n for n in notes if n)


def padding(ds, arr: np.ndarray) -> tuple[np.ndarray, str | None]:
    """The padding mask of the stored pixels ``arr`` and its note (``None`` when no padding)."""
    if ds.get("PixelPaddingValue") is None:
        return np.zeros(arr.shape, bool), None
    value = _stored_value(ds, ds.PixelPaddingValue)
    limit = ds.get("PixelPaddingRangeLimit")
    if limit is None:
        mask, which = arr == value, f"Pixel Padding Value {value}"
    else:
        limit = _stored_value(ds, limit)
        mask = (arr >= min(value, limit)) & (arr <= max(value, limit))
        which = f"Pixel Padding Value {value} to Pixel Padding Range Limit {limit}"
    n = int(mask.sum())
    if n == 0:
        return mask, None
    return mask, f"{n} padding pixel{'s' * (n != 1)} ({which}) left out of the range and painted black"


def _stored_value(ds, value) -> int:
    """A padding value as the stored pixels hold it (a signed value read as US is turned back)."""
    value = int(value)
    if int(ds.get("PixelRepresentation", 0)) == 1 and value >= 2**15:
        value -= 2**16
    return value


def _modality_note(ds) -> list[str]:
    slope, intercept = float(ds.get("RescaleSlope", 1) or 1), float(ds.get("RescaleIntercept", 0) or 0)
    if "ModalityLUTSequence" in ds:
        return ["modality LUT from the header applied"]
    if (slope, intercept) != (1.0, 0.0):
        return [f"rescale slope {slope:g} intercept {intercept:g} applied"]
    return []


def _voi_output(ds) -> tuple[tuple[float, float], str] | None:
    """((low, high) output range, the note's words up to the range) of the VOI transform pydicom's
    ``apply_voi_lut`` applies (its LUT first), or ``None`` when the header has none."""
    from pydicom.multival import MultiValue

    lut = ds.get("VOILUTSequence")
    if lut and lut[0].get("LUTDescriptor") is not None and lut[0].get("LUTData") is not None:
        bits = int(lut[0].LUTDescriptor[2])
        top = 2**bits - 1
        return (0.0, float(top)), f"VOI LUT from the header ({bits}-bit output 0–{top}"
    if ds.get("WindowCenter") is None or ds.get("WindowWidth") is None:
        return None
    centres, widths = ds.WindowCenter, ds.WindowWidth
    many = isinstance(centres, MultiValue)  # apply_voi_lut applies the first window
    centre, width = (centres[0], widths[0]) if many else (centres, widths)
    function = str(ds.get("VOILUTFunction", "LINEAR")).upper()
    named = "" if function == "LINEAR" else f" ({function})"
    extra = f" (the first of {len(centres)})" if many else ""
    lo, hi = _window_output(ds)
    return (lo, hi), (f"window centre {float(centre):g} width {float(width):g}{named} from the header"
                      f"{extra} (output {lo:g}–{hi:g}")


def _window_output(ds) -> tuple[float, float]:
    """A window's output range (PS3.3 C.11.2.1.2), as pydicom's ``apply_windowing`` takes it: the
    modality LUT's output bits, else the stored bits (signed or not) through the rescale."""
    if ds.get("ModalityLUTSequence"):
        lo, hi = 0.0, float(2 ** int(ds.ModalityLUTSequence[0].LUTDescriptor[2]) - 1)
    elif int(ds.get("PixelRepresentation", 0)) == 0:
        lo, hi = 0.0, float(2 ** int(ds.BitsStored) - 1)
    else:
        lo, hi = -float(2 ** (int(ds.BitsStored) - 1)), float(2 ** (int(ds.BitsStored) - 1) - 1)
    slope, intercept = ds.get("RescaleSlope"), ds.get("RescaleIntercept")
    if slope is not None and intercept is not None:
        lo, hi = lo * float(slope) + float(intercept), hi * float(slope) + float(intercept)
    return lo, hi


def _integral(values: np.ndarray) -> np.ndarray:
    """Whole-number floats as integers: a VOI LUT indexes by them (pydicom warns on floats)."""
    floating = np.issubdtype(values.dtype, np.floating)
    if floating and np.isfinite(values).all() and (values == np.round(values)).all():
        return values.astype(np.int64)
    return values


def _own_range(values: np.ndarray) -> tuple[float, float]:
    if values.size == 0:
        return 0.0, 0.0
    if not np.isfinite(values).all():
        raise DataError(f"the pixels hold {int((~np.isfinite(values)).sum())} NaN or infinite value(s); "
                        "a radiograph has finite grey levels")
    return float(values.min()), float(values.max())


def _to_display(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``lo``–``hi`` mapped linearly to 0–255 (clipped, rounded; ``lo`` may exceed ``hi`` under a
    negative rescale slope, as in pydicom); all 0 when ``hi == lo``."""
    if hi == lo:
        return np.zeros(values.shape, np.uint8)
    return np.round(np.clip(255 * (values - lo) / (hi - lo), 0, 255)).astype(np.uint8)
