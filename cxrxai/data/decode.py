"""Decode a dataset's images once, in parallel worker processes, into a resized uint8 cache.

Each image is read (PNG/JPEG/DICOM, :func:`~cxrxai.data.io.read_film`), its original size and
the reader's note (bit depth, orientation, channels: what was done to it) recorded, and resized
to the model's input size (area interpolation) into one ``(N, S, S)`` memory-mapped array, so
every later stage reads pixels without touching the disk's originals again. An image that cannot
be read is reported (id and reason) and left out; the run goes on.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataError
from .io import READER_VERSION, read_film, resize_to_input

__all__ = ["DecodedImages", "RowLoader", "decode_images"]


@dataclass
class DecodedImages:
    image_ids: list[str]  # the ones that decoded, in cache row order
    pixels: np.ndarray  # (N, S, S) uint8 memmap
    sizes: dict[str, tuple[int, int]]  # original (height, width)
    failures: list[tuple[str, str]]  # (image_id, reason)
    notes: dict[str, str] = field(default_factory=dict)  # what the reader did, for the images it changed

    def loader(self) -> Callable[[list[str]], np.ndarray]:
        return RowLoader(self.pixels, self.image_ids)


class RowLoader:
    """Images by id from an (N, H, W) stack. A memory-mapped ``.npy`` stack pickles as its path
    (a distributed worker re-opens the file instead of receiving every image)."""

    def __init__(self, pixels: np.ndarray, image_ids: list[str]):
        self.pixels = pixels
        self.row = {i: k for k, i in enumerate(image_ids)}

    def __call__(self, ids: list[str]) -> np.ndarray:
        missing = [i for i in ids if i not in self.row]
        if missing:
            raise DataError(f"no decoded image for {missing[:3]} ({len(missing)} of {len(ids)} asked)")
        return self.pixels[[self.row[i] for i in ids]]

    def source(self) -> str:
        """Where the pixels come from: the memory-mapped file's path, or "memory" (carried by value,
        as a distributed unit's images are)."""
        path = getattr(self.pixels, "filename", None)
        return str(path) if path else "memory"

    def __getstate__(self) -> dict:
        path = getattr(self.pixels, "filename", None)
        if path and Path(path).suffix == ".npy" and Path(path).is_file():
            return {"path": str(path), "row": self.row}
        return {"pixels": np.asarray(self.pixels), "row": self.row}

    def __setstate__(self, state: dict) -> None:
        self.row = state["row"]
        self.pixels = np.load(state["path"], mmap_mode="r") if "path" in state else state["pixels"]


def _decode_one(args) -> tuple[str, np.ndarray | None, tuple[int, int] | None, str | None, str | None]:
    """(image_id, resized pixels, original shape, error, reader's note) of one image."""
    image_id, path, size = args
    try:
        film = read_film(path)
    except DataError as err:
        return image_id, None, None, str(err), None
    return image_id, resize_to_input(film.pixels, size), film.pixels.shape, None, film.note


def decode_images(
    root: str | Path,
    items: list[tuple[str, str]],
    size: int,
    cache_dir: str | Path,
    *,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> DecodedImages:
    """Decode ``items`` = [(image_id, path relative to root)] to ``size`` px (cached by content key,
    which includes the reader's :data:`~cxrxai.data.io.READER_VERSION`: a cache decoded by an
    older rule is never taken for the new one)."""
    root = Path(root)
    content = f"reader {READER_VERSION}|{root.resolve()}|{size}|{items!r}"
    key = hashlib.sha256(content.encode()).hexdigest()[:16]
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    out_path = cache_dir / f"decoded-{key}.npy"
    tmp = cache_dir / f"decoded-{key}.tmp{os.getpid()}.npy"
    pixels = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(len(items), size, size))
    ok, sizes, failures, notes = [], {}, [], {}
    workers = workers or min(8, os.cpu_count() or 1)
    jobs = [(i, str(root / p), size) for i, p in items]
    with ProcessPoolExecutor(workers) as pool:
        for n, (image_id, img, shape, err, note) in enumerate(pool.map(_decode_one, jobs, chunksize=16)):
            if err is not None:
                failures.append((image_id, err))
            else:
                pixels[len(ok)] = img
                ok.append(image_id)
                sizes[image_id] = shape
                if note:
                    notes[image_id] = note
            if progress:
                progress(n + 1, len(items))
    pixels.flush()
    del pixels
    os.replace(tmp, out_path)
    full = np.load(out_path, mmap_mode="r")
    return DecodedImages(ok, full[: len(ok)], sizes, failures, notes)
