"""Dataset adapters: each reads a published dataset's files and returns the one case schema
(:class:`DatasetTables`). ``load_dataset(kind, root, **options)`` dispatches by name, then fills
the sex, age and view its CSVs left missing from the images' DICOM headers, for every kind whose
images are DICOM files (:mod:`._dicom_tags`; ``dicom_headers=False`` skips it).

Why there and not in the precompute: every consumer (precompute, import-predictions, the API)
goes through ``load_dataset``, and the store keeps every image of the dataset, whose subgroup
reports read whatever images have predictions — not only the split a precompute decodes. The
cost is one header read per image still missing a value (``stop_before_pixels``, three tags).
"""

from __future__ import annotations

from pathlib import Path

from ...errors import UnknownNameError
from . import chexpert, folder, mimic, nih, padchest, rsna, siim, vindr
from ._base import DatasetTables
from ._dicom_tags import fill_from_dicom
from .chexpert import load_chexpert
from .folder import load_folder
from .mimic import load_mimic
from .nih import load_nih
from .padchest import load_padchest
from .rsna import load_rsna
from .siim import decode_siim_rle, load_siim
from .vindr import load_vindr

__all__ = ["ADAPTERS", "DEMOGRAPHICS_HINTS", "DatasetTables", "decode_siim_rle", "load_dataset"]

ADAPTERS = {"nih": load_nih, "chexpert": load_chexpert, "siim": load_siim, "rsna": load_rsna, "vindr": load_vindr,
            "mimic": load_mimic, "padchest": load_padchest, "folder": load_folder}
#: Per adapter, how a user supplies sex, age and view it could not find.
DEMOGRAPHICS_HINTS = {name: module.DEMOGRAPHICS_HINT for name, module in
                      {"nih": nih, "chexpert": chexpert, "siim": siim, "rsna": rsna, "vindr": vindr,
                       "mimic": mimic, "padchest": padchest, "folder": folder}.items()}


def load_dataset(kind: str, root: str | Path, *, dicom_headers: bool = True, **options) -> DatasetTables:
    """The adapter ``kind``'s tables of ``root`` (``options``: the adapter's), with missing
    demographics read from DICOM headers unless ``dicom_headers`` is false."""
    if kind not in ADAPTERS:
        raise UnknownNameError("dataset", kind, ADAPTERS)
    tables = ADAPTERS[kind](root, **options)
    if str(dicom_headers).lower() in ("false", "0", "no"):
        return tables
    return fill_from_dicom(tables, hint=DEMOGRAPHICS_HINTS[kind], strict=bool(options.get("strict", False)))
