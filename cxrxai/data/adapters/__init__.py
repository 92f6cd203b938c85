"""Dataset adapters: each reads a published dataset's files and returns the one case schema
(:class:`DatasetTables`), registered where it is defined (:func:`adapter`, with the hint a user
reads when demographics are missing). ``load_dataset(kind, root, **options)`` dispatches by name,
then fills the sex, age and view its CSVs left missing from the images' DICOM headers, for every kind whose
images are DICOM files (:mod:`._dicom_tags`; ``dicom_headers=False`` skips it).

Why there and not in the precompute: every consumer (precompute, import-predictions, the API)
goes through ``load_dataset``, and the store keeps every image of the dataset, whose subgroup
reports read whatever images have predictions — not only the split a precompute decodes. The
cost is one header read per image still missing a value (``stop_before_pixels``, three tags).

``load_dataset`` is also where paths enter: the root and every option an adapter annotates as a
path (``data_entry=``, ``chexlocalize=``, ``csv=``…) are made absolute (relative to the current
directory), so a store records files that exist from any working directory. An option the
adapter does not take is a :class:`~cxrxai.errors.DataError` listing the ones it does.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from ... import paths
from ...discovery import discover
from ...errors import DataError, UnknownNameError
from ._base import DatasetTables
from ._dicom_tags import fill_from_dicom
from ._registry import ADAPTERS, DEMOGRAPHICS_HINTS, adapter, unregister_adapter
from .chexpert import load_chexpert
from .folder import load_folder
from .mimic import load_mimic
from .nih import load_nih
from .padchest import load_padchest
from .rsna import load_rsna
from .siim import decode_siim_rle, load_siim
from .vindr import load_vindr

__all__ = [
    "ADAPTERS",
    "DEMOGRAPHICS_HINTS",
    "DatasetTables",
    "adapter",
    "adapter_options",
    "decode_siim_rle",
    "load_chexpert",
    "load_dataset",
    "load_folder",
    "load_mimic",
    "load_nih",
    "load_padchest",
    "load_rsna",
    "load_siim",
    "load_vindr",
    "signature_options",
    "unregister_adapter",
]

#: Every module of this package that registers an adapter (``@adapter(``, with its demographics
#: hint), in name order: a new dataset's module is found without a line here (the imports above are
#: this package's names).
discover(sys.modules[__name__], "@adapter(")


def signature_options(load) -> dict[str, inspect.Parameter]:
    """An adapter function's options: its keyword parameters after ``root``, from its signature."""
    params = list(inspect.signature(load).parameters.values())[1:]
    return {p.name: p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def adapter_options(kind: str) -> dict[str, inspect.Parameter]:
    """The options the adapter ``kind`` takes (:func:`signature_options`), and ``dicom_headers``
    (every kind's)."""
    if kind not in ADAPTERS:
        raise UnknownNameError("dataset", kind, ADAPTERS)
    return {**signature_options(ADAPTERS[kind]),
            "dicom_headers": inspect.signature(load_dataset).parameters["dicom_headers"]}


def load_dataset(kind: str, root: str | Path, *, dicom_headers: bool = True, **options) -> DatasetTables:
    """The adapter ``kind`` run on ``root`` with ``options``, then missing demographics read from
    DICOM headers unless ``dicom_headers`` is false (see the module docstring)."""
    known = adapter_options(kind)
    unknown = sorted(set(options) - set(known))
    missing = [n for n, p in known.items() if p.default is p.empty and n not in options]
    if unknown or missing:
        listing = ", ".join(f"{n} (default {p.default!r})" if p.default is not p.empty else f"{n} (required)"
                            for n, p in known.items() if n != "strict")
        what = (f"has no option {', '.join(map(repr, unknown))}" if unknown
                else f"needs the option {', '.join(map(repr, missing))}")
        raise DataError(f"the {kind} adapter {what}; its options: {listing}")
    for name, value in options.items():
        if value is not None and "Path" in str(known[name].annotation):
            options[name] = paths.absolute(value)
    tables = ADAPTERS[kind](paths.absolute(root), **options)
    if str(dicom_headers).lower() in ("false", "0", "no"):
        return tables
    return fill_from_dicom(tables, hint=DEMOGRAPHICS_HINTS[kind], strict=bool(options.get("strict", False)))
