"""Where a store's files are: dataset roots and model weights, read back and moved.

A store records absolute paths (the CLI and the pipeline resolve what the user typed before
writing). Stores written before that may hold a relative root or weights path: it is read
relative to the folder of the store file — the only anchor a store carries — and the row keeps
the text as stored (``root_stored`` / ``weights_stored``) so an error can tell the truth.

A dataset that moved is re-rooted in place, without recomputing anything::

    python -m cxrxai reroot --store S --dataset NAME --root NEWDIR
    python -m cxrxai reroot --store S --model ID --weights NEWFILE
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..errors import DataError, ModelError, UnknownNameError
from ..paths import absolute

__all__ = ["reroot_dataset", "reroot_model", "with_resolved_paths"]

#: How many image paths of a dataset re-rooting looks for under the new root.
CHECKED_IMAGES = 20


def _resolve(values: pd.Series, base: Path) -> pd.Series:
    return values.map(lambda v: v if v is None or pd.isna(v) or Path(str(v)).is_absolute()
                      else str(absolute(base / str(v))))


def with_resolved_paths(frame: pd.DataFrame, column: str, store_path: Path) -> pd.DataFrame:
    """``frame`` with ``column`` absolute (a relative path read beside the store file), the text
    as stored in ``<column>_stored``… (``root`` → ``root_stored``, ``weights_path`` →
    ``weights_stored``) and the store file in ``store``."""
    if frame.empty or column not in frame:
        return frame
    stored = column.split("_")[0] + "_stored"
    resolved = _resolve(frame[column], absolute(store_path).parent)
    return frame.assign(**{stored: frame[column], column: resolved, "store": str(absolute(store_path))})


def reroot_dataset(writer, dataset: str, root: str | Path, *, force: bool = False) -> dict:
    """Point ``dataset`` at ``root`` (made absolute) in the store ``writer`` writes.

    The first :data:`CHECKED_IMAGES` image paths are looked for under the new root; when none is
    there (a typo, the wrong folder) nothing changes unless ``force`` (a metadata-only dataset).
    Returns the old and new roots and how many checked images were found.
    """
    known = writer.datasets()
    names = known.get("dataset", pd.Series(dtype=object)).tolist()
    if dataset not in names:
        raise UnknownNameError(f"dataset of {writer.path}", dataset, names)
    new = absolute(root)
    if not new.is_dir():
        raise DataError(f"the new root {new} is not a folder; give the folder the images of {dataset!r} "
                        "are in now")
    paths = writer.images(dataset=dataset, columns=["path"])["path"].dropna().head(CHECKED_IMAGES).astype(str)
    found = int(sum((new / p).is_file() for p in paths))
    if len(paths) and not found and not force:
        raise DataError(f"none of {len(paths)} images of {dataset!r} is under {new} (e.g. "
                        f"{new / paths.iloc[0]}); nothing changed — check the folder, or add --force for a "
                        "dataset whose images are elsewhere")
    old = known.set_index("dataset").loc[dataset, "root_stored"]
    with writer._cursor() as cur:
        cur.execute("UPDATE datasets SET root = ? WHERE dataset = ?", [str(new), dataset])
    return {"dataset": dataset, "old_root": old, "root": str(new), "images_checked": len(paths),
            "images_found": found}


def reroot_model(writer, model_id: str, weights: str | Path) -> dict:
    """Point ``model_id``'s weights at ``weights`` (made absolute; the file must exist)."""
    known = writer.models()
    names = known.get("model_id", pd.Series(dtype=object)).tolist()
    if model_id not in names:
        raise UnknownNameError(f"model of {writer.path}", model_id, names)
    new = absolute(weights)
    if not new.is_file():
        raise ModelError(f"no weights file at {new}; give the file {model_id!r} was loaded from, where it is "
                         "now")
    old = known.set_index("model_id").loc[model_id, "weights_stored"]
    with writer._cursor() as cur:
        cur.execute("UPDATE models SET weights_path = ? WHERE model_id = ?", [str(new), model_id])
    return {"model": model_id, "old_weights": old, "weights": str(new)}
