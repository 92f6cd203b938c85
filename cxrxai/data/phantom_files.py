"""Phantom radiographs as files, at any size and in the formats real datasets ship.

The demo keeps its phantoms in memory; a user's dataset is a folder of files. To test every
adapter on its own published layout, :func:`phantom_at` renders a phantom case at a native size
(height × width, not necessarily square, larger than the renderer's 1024 px if asked) with its
exact instance masks resized the same way, and :func:`write_radiograph` writes it as

* ``png8`` / ``png16`` — 8- or 16-bit greyscale PNG (NIH, CheXpert downsampled, folders);
* ``jpeg`` — 8-bit greyscale JPEG, quality 95 (CheXpert);
* ``dicom-mono2`` — 16-bit DICOM, MONOCHROME2 (high = white), rescale slope/intercept set;
* ``dicom-mono1`` — 16-bit DICOM, MONOCHROME1 (high = black, as many CR systems store it).

Every format reads back through :func:`cxrxai.data.io.read_image`: PNGs to the same grey levels,
JPEG within its compression error, DICOM (no window in the header) stretched to the full 0–255
range and MONOCHROME1 inverted back — the tests check each.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from ..errors import DataError, UnknownNameError
from .phantom import CaseSpec, PhantomConfig, render

__all__ = ["FORMATS", "PhantomFile", "phantom_at", "write_radiograph"]

FORMATS = ("png8", "png16", "jpeg", "dicom-mono1", "dicom-mono2")


@dataclass
class PhantomFile:
    """A phantom case at a native size: ``image`` (H, W) uint8 and ``masks`` ``{label: [instance
    masks]}`` at the same size."""

    spec: CaseSpec
    image: np.ndarray
    masks: dict[str, list[np.ndarray]]

    def mask(self, label: str) -> np.ndarray:
        """Union of one finding's instance masks (all False when absent)."""
        out = np.zeros(self.image.shape, bool)
        for m in self.masks.get(label, []):
            out |= m
        return out


def phantom_at(spec: CaseSpec, config: PhantomConfig, height: int, width: int) -> PhantomFile:
    """Render ``spec`` with ``config`` and resample it to ``height`` × ``width`` (bilinear for the
    film, nearest for the masks, so a mask stays binary and aligned with the anatomy)."""
    if min(height, width) < 16:
        raise DataError(f"a phantom file needs at least 16 px a side, got {height}×{width}")
    case = render(spec, config)
    image = cv2.resize(case.image, (width, height), interpolation=cv2.INTER_LINEAR)
    masks: dict[str, list[np.ndarray]] = {}
    for inst in case.instances:
        m = cv2.resize(inst.mask.astype(np.uint8), (width, height), interpolation=cv2.INTER_NEAREST).astype(
            bool
        )
        if m.any():
            masks.setdefault(inst.label, []).append(m)
    return PhantomFile(spec, image, masks)


def write_radiograph(image: np.ndarray, path: str | Path, *, fmt: str, patient_sex: str | None = None,
                     patient_age: float | None = None) -> Path:
    """Write an (H, W) uint8 film as ``fmt`` (see :data:`FORMATS`); DICOM files also carry the
    patient's sex and age (``"058Y"``), as RSNA's and SIIM's headers do."""
    if fmt not in FORMATS:
        raise UnknownNameError("image format", fmt, FORMATS)
    img = np.asarray(image)
    if img.ndim != 2 or img.dtype != np.uint8:
        raise DataError(f"write_radiograph takes an (H, W) uint8 film, got {img.dtype} {img.shape}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "png8":
        ok = cv2.imwrite(str(path), img)
    elif fmt == "png16":
        ok = cv2.imwrite(str(path), img.astype(np.uint16) * 257)
    elif fmt == "jpeg":
        ok = cv2.imwrite(str(path), img, [cv2.IMWRITE_JPEG_QUALITY, 95])
    else:
        _write_dicom(img, path, monochrome1=fmt == "dicom-mono1", sex=patient_sex, age=patient_age)
        ok = True
    if not ok:
        raise DataError(f"could not write {path} as {fmt}")
    return path


def _write_dicom(
    img: np.ndarray, path: Path, *, monochrome1: bool, sex: str | None, age: float | None
) -> None:
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, SecondaryCaptureImageStorage, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = SecondaryCaptureImageStorage
    meta.MediaStorageSOPInstanceUID = generate_uid(entropy_srcs=[str(path.name)])
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset(str(path), {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
    ds.Modality, ds.PatientID = "CR", path.stem
    if sex:
        ds.PatientSex = sex
    if age is not None:
        ds.PatientAge = f"{int(age):03d}Y"
    # 12-bit stored values with a rescale, as a CR writes them; MONOCHROME1 stores the negative.
    stored = img.astype(np.uint16) * 16
    if monochrome1:
        stored = 4095 - stored
    ds.Rows, ds.Columns = img.shape
    ds.SamplesPerPixel, ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 1, 16, 12, 11, 0
    ds.PhotometricInterpretation = "MONOCHROME1" if monochrome1 else "MONOCHROME2"
    ds.RescaleSlope, ds.RescaleIntercept = 1, 0
    ds.PixelData = stored.tobytes()
    ds.save_as(str(path), enforce_file_format=True)
