"""Dataset adapters: each reads a published dataset's files and returns the one case schema
(:class:`DatasetTables`). ``load_dataset(kind, root, **options)`` dispatches by name.

``load_dataset`` is where paths enter: the root and every option an adapter annotates as a path
(``data_entry=``, ``chexlocalize=``, ``csv=``…) are made absolute (relative to the current
directory), so a store records files that exist from any working directory. An option the
adapter does not take is a :class:`~cxrxai.errors.DataError` listing the ones it does.
"""

from __future__ import annotations

import inspect
from pathlib import Path

from ... import paths
from ...errors import DataError, UnknownNameError
from ._base import DatasetTables
from .chexpert import load_chexpert
from .folder import load_folder
from .nih import load_nih
from .rsna import load_rsna
from .siim import decode_siim_rle, load_siim
from .vindr import load_vindr

__all__ = ["ADAPTERS", "DatasetTables", "adapter_options", "decode_siim_rle", "load_dataset"]

ADAPTERS = {"nih": load_nih, "chexpert": load_chexpert, "siim": load_siim, "rsna": load_rsna, "vindr": load_vindr,
            "folder": load_folder}


def adapter_options(kind: str) -> dict[str, inspect.Parameter]:
    """The options (keyword parameters after ``root``) the adapter ``kind`` takes, read from its signature."""
    if kind not in ADAPTERS:
        raise UnknownNameError("dataset", kind, ADAPTERS)
    params = list(inspect.signature(ADAPTERS[kind]).parameters.values())[1:]
    return {p.name: p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def load_dataset(kind: str, root: str | Path, **options) -> DatasetTables:
    """The adapter ``kind`` run on ``root`` with ``options`` (see the module docstring)."""
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
    return ADAPTERS[kind](paths.absolute(root), **options)
