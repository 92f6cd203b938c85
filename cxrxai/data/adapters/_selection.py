"""Which films a dataset keeps and which split each goes to: paths that would leave the dataset
root, the views an option asks for (a list option as typed on a command line), and the seeded
patient-level split."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import DataError
from ._problems import Problems

__all__ = ["escaping", "keep_views", "name_list", "patient_split"]


def escaping(paths: pd.Series) -> np.ndarray:
    """Which relative paths would leave the dataset root (absolute, or with a ``..`` part).

    Decided on the text alone (vectorised: 10⁵ rows in milliseconds), so a metadata-only
    checkout without the images is checked the same way as a full one.
    """
    text = paths.astype(str).str.replace("\\", "/", regex=False)
    absolute = text.str.startswith("/") | text.str.match(r"^[A-Za-z]:/")
    return (absolute | text.str.contains(r"(?:^|/)\.\.(?:/|$)", regex=True)).to_numpy(dtype=bool)


def keep_views(view: pd.Series, views, file: str | Path, problems: Problems) -> np.ndarray:
    """Which films a ``views`` option keeps (``None``: every film; else a list of view names,
    any case, e.g. ``PA,AP``); the films it leaves out are counted, per view, in one note row.

    >>> p = Problems(strict=False)
    >>> keep_views(pd.Series(["PA", "LATERAL", None]), "pa,ap", "meta.csv", p).tolist()
    [True, False, False]
    >>> p.rows[0]["problem"]
    "views ['PA', 'AP'] kept: 2 films of other views left out (LATERAL 1, blank 1)"
    """
    if views is None:
        return np.ones(len(view), bool)
    wanted = [v.upper() for v in name_list(views)]
    keep = view.astype("string").str.strip().str.upper().isin(wanted).to_numpy(dtype=bool)
    if not keep.all():
        counts = view[~keep].astype(object).where(view[~keep].notna(), "blank").value_counts()
        per_view = ", ".join(f"{k} {n:,}" for k, n in counts.items())
        left_out = int((~keep).sum())
        problems.note(
            file, f"views {wanted} kept: {left_out:,} films of other views left out ({per_view})"
        )
    return keep


def name_list(value) -> list[str]:
    """A list option as typed on a command line: ``A,B``, ``[A,B]``, ``["A", "B"]`` or a list.

    >>> name_list("Effusion,Nodule"), name_list("[Effusion, Nodule]"), name_list(["Mass"])
    (['Effusion', 'Nodule'], ['Effusion', 'Nodule'], ['Mass'])
    """
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    text = str(value).strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    names = [part.strip().strip("'\"").strip() for part in text.split(",")]
    if not all(names):
        raise DataError(f"cannot read a list of names from {value!r}; write A,B or [A,B]")
    return names


def patient_split(patients: pd.Series, fractions: dict[str, float], seed: int) -> pd.Series:
    """Assign each patient (not image) to a split with the given image shares (seeded)."""
    counts = patients.value_counts().sort_index()
    order = np.random.default_rng(seed).permutation(len(counts))
    cum = np.cumsum(counts.to_numpy()[order]) / counts.sum()
    names, bounds = list(fractions), np.cumsum(list(fractions.values()))
    which = np.searchsorted(bounds, cum - 1e-12)
    assign = dict(zip(counts.index[order], [names[min(k, len(names) - 1)] for k in which]))
    return patients.map(assign)
