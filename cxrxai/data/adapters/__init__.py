"""Dataset adapters: each reads a published dataset's files and returns the one case schema
(:class:`DatasetTables`). ``load_dataset(kind, root, **options)`` dispatches by name."""

from __future__ import annotations

from pathlib import Path

from ...errors import UnknownNameError
from ._base import DatasetTables
from .chexpert import load_chexpert
from .folder import load_folder
from .mimic import load_mimic
from .nih import load_nih
from .padchest import load_padchest
from .rsna import load_rsna
from .siim import decode_siim_rle, load_siim
from .vindr import load_vindr

__all__ = ["ADAPTERS", "DatasetTables", "decode_siim_rle", "load_dataset"]

ADAPTERS = {"nih": load_nih, "chexpert": load_chexpert, "siim": load_siim, "rsna": load_rsna, "vindr": load_vindr,
            "mimic": load_mimic, "padchest": load_padchest, "folder": load_folder}


def load_dataset(kind: str, root: str | Path, **options) -> DatasetTables:
    if kind not in ADAPTERS:
        raise UnknownNameError("dataset", kind, ADAPTERS)
    return ADAPTERS[kind](root, **options)
