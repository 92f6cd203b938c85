"""Sex, age and view from the DICOM headers of any dataset whose images are DICOM files.

An adapter fills what its CSVs give (source ``csv:<file>``); :func:`fill_from_dicom`, run by
``load_dataset`` after every adapter, reads ``PatientSex``, ``PatientAge`` (``"058Y"``, ``"006M"``)
and ``ViewPosition`` from the headers of the images that are DICOM files (:func:`dicom_files`: a
``.dcm`` / ``.dicom`` name, or ``DICM`` at byte 128 of a file named otherwise) and that still miss
one of them — per value: the CSV wins where it has one, the tag fills only the
missing ones (source ``dicom:<Tag>``). Only headers are read (``stop_before_pixels``,
``specific_tags``), once per image, at load time, so precompute, import-predictions and the
Subgroups report all see the same demographics of every image of the dataset.

A bad tag (sex "O", age "XXXY") is a problem row as a bad CSV value is (file: the DICOM file);
an unreadable header is one problem row per image; DICOM files not found under the root (a
metadata-only checkout) are one problem row for the dataset. What each field ended with is
recorded in ``config["demographics"]`` (counts per source and a sentence saying why values are
missing and how to supply them), which the subgroup reports quote when they have no group.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from ..io import is_dicom
from ._base import DatasetTables, Problems, clean_age, clean_sex, with_age_bins

__all__ = ["DICOM_SUFFIXES", "RASTER_SUFFIXES", "TAGS", "dicom_files", "fill_from_dicom", "read_dicom_tags"]

#: Image field → the DICOM keyword it is read from.
TAGS = {"sex": "PatientSex", "age": "PatientAge", "view": "ViewPosition"}
DICOM_SUFFIXES = (".dcm", ".dicom")
#: Names the film reader reads as PNG / JPEG / TIFF: never opened to look for a DICOM header.
RASTER_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp")
NOT_FOUND = "not found"
POOL_FROM = 2000


def read_dicom_tags(path: str | Path, tags) -> dict[str, str | None]:
    """The text of ``tags`` (DICOM keywords) in one file's header; blank or absent → None.

    Raises ``FileNotFoundError`` for a missing file, pydicom's ``InvalidDicomError`` or ``OSError``
    for one that is not readable DICOM."""
    import pydicom

    ds = pydicom.dcmread(str(path), stop_before_pixels=True, specific_tags=list(tags))
    out = {}
    for tag in tags:
        value = ds.get(tag)
        text = str(value).strip() if value is not None else ""
        out[tag] = text or None
    return out


def _header_row(path: str) -> dict:
    """:data:`TAGS` of one file and ``error`` (None when read, :data:`NOT_FOUND`, or the reason)."""
    import pydicom

    try:
        return {**read_dicom_tags(path, TAGS.values()), "error": None}
    except FileNotFoundError:
        return {"error": NOT_FOUND}
    except (OSError, EOFError, pydicom.errors.InvalidDicomError) as err:
        return {"error": f"{type(err).__name__}: {err}"}


def _headers(root: Path, paths: pd.Series, workers: int | None = None) -> pd.DataFrame:
    """One row per path (same index): the tags of :data:`TAGS`, and ``error``. Parsing a header is
    ~1 ms of Python, so more than :data:`POOL_FROM` files are read by worker processes."""
    files = [str(root / rel) for rel in paths]
    workers = workers or min(8, os.cpu_count() or 1)
    if len(files) < POOL_FROM or workers < 2:
        rows = [_header_row(f) for f in files]
    else:
        with ProcessPoolExecutor(workers) as pool:
            rows = list(pool.map(_header_row, files, chunksize=256))
    return pd.DataFrame(rows, index=paths.index, columns=[*TAGS.values(), "error"])


def dicom_files(root: Path, paths: pd.Series) -> np.ndarray:
    """Which ``paths`` (relative to ``root``) are DICOM files, by the film reader's rule: a
    ``.dcm`` / ``.dicom`` name, or — for a name with no raster suffix (RSNA-style ``1.2.840…`` ids,
    ``IM-0001-0001``) — ``DICM`` at byte 128 of a file that is there. PNG / JPEG names are not opened."""
    lower = paths.astype(str).str.lower()
    named = np.array(lower.str.endswith(DICOM_SUFFIXES), dtype=bool)
    for i in np.flatnonzero(~named & ~lower.str.endswith(RASTER_SUFFIXES).to_numpy()):
        file = root / str(paths.iloc[i])
        try:
            named[i] = file.is_file() and is_dicom(file)
        except OSError:  # unreadable: the film reader says so when it decodes it
            named[i] = False
    return named


def fill_from_dicom(tables: DatasetTables, *, hint: str = "", strict: bool = False) -> DatasetTables:
    """``tables`` with missing sex / age / view filled from its DICOM images' headers (see the module
    docstring); ``hint`` says how a user supplies what is still missing (quoted in the record)."""
    images = tables.images.reset_index(drop=True)  # one label per row: headers are joined back by it
    for column in ("sex", "view", "sex_source", "age_source", "view_source"):
        images[column] = images[column].astype(object).where(images[column].notna(), None)
    dicom = dicom_files(Path(tables.root), images["path"])
    need = dicom & images[list(TAGS)].isna().any(axis=1).to_numpy()
    problems = Problems(strict)
    heads = _headers(Path(tables.root), images.loc[need, "path"])
    files = images.loc[need, "path"].map(lambda p: str(Path(tables.root) / p))
    unreadable = heads["error"].notna() & (heads["error"] != NOT_FOUND)
    for i in heads.index[unreadable]:
        problems.add(files[i], None, str(images.at[i, "image_id"]),
                     f"cannot read its DICOM header ({heads.at[i, 'error']})",
                     action="sex, age and view from the header left missing")
    absent = heads.index[heads["error"] == NOT_FOUND]
    if len(absent):
        problems.add(tables.root, None, None, f"{len(absent)} of {int(need.sum())} DICOM files whose header "
                     f"was needed are not under the root (first: {images.at[absent[0], 'path']})",
                     action="their sex, age and view from the header left missing")
    for field, tag in TAGS.items():
        _fill(images, heads, field, tag, files, problems)
    record = {field: _coverage(images, field, tag, dicom, heads, hint) for field, tag in TAGS.items()}
    tables.images = with_age_bins(images)
    tables.problems = pd.concat([tables.problems, problems.frame()], ignore_index=True) if problems.rows \
        else tables.problems
    tables.config = {**tables.config, "demographics": record}
    return tables


def _fill(images: pd.DataFrame, heads: pd.DataFrame, field: str, tag: str, files: pd.Series,
          problems: Problems) -> None:
    """Fill ``field`` where it is missing and the header has a good ``tag`` (cleaned as CSV values are)."""
    rows = heads.index[images.loc[heads.index, field].isna() & heads[tag].notna()]
    if not len(rows):
        return
    raw, ids = heads.loc[rows, tag], images.loc[rows, "image_id"]
    if field == "sex":
        values = clean_sex(raw, files[rows], problems, ids)
    elif field == "age":
        values = clean_age(raw, files[rows], problems, ids)
    else:
        values = raw.str.upper()
    good = values.index[values.notna()]
    images.loc[good, field] = values[good]
    images.loc[good, f"{field}_source"] = f"dicom:{tag}"


def _coverage(images: pd.DataFrame, field: str, tag: str, dicom: np.ndarray, heads: pd.DataFrame,
              hint: str) -> dict:
    """Counts of ``field`` per source and, when some are missing, a sentence saying why."""
    source = images[f"{field}_source"].astype("string")
    n, missing = len(images), int(images[field].isna().sum())
    out = {"images": n, "missing": missing, "csv": int(source.str.startswith("csv:").sum()),
           "dicom": int(source.str.startswith("dicom:").sum())}
    if not missing:
        return {**out, "why": None, "supply": None}
    csv_part = (f"its CSV gives {out['csv']}" if out["csv"]
                else f"its CSV has no {field} column or leaves it blank")
    if not dicom.any():
        dicom_part = "its images are not DICOM files, so no header carries one"
    else:
        read = heads["error"].isna()
        unread = int((~read).sum())
        dicom_part = (f"{out['dicom']} of the {int(read.sum())} DICOM headers read carry a valid {tag}"
                      + (f" ({unread} DICOM files could not be read or found)" if unread else ""))
    return {**out, "why": f"{csv_part}, and {dicom_part}", "supply": hint or None}
