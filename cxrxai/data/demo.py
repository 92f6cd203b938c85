"""The demo dataset on disk: phantom images rendered once, with their ground truth.

Rendering is deterministic, so what lands under ``data_cache/demo/`` (git-ignored) is a cache:
``images-<key>-<n>.npy`` (an (N, S, S) uint8 array, memory-mapped when read) and
``annotations-<key>-<n>.json`` (one record per lesion instance: COCO RLE mask and box). ``key``
hashes the :class:`PhantomConfig` and :data:`GENERATOR_VERSION`. Files are written under a
temporary name and renamed when complete, so a half-written cache is never used; one process
renders a cache at a time (``images-<key>-<n>.render.lock``), the others wait and read its files.

:func:`lazy_demo` reads the ground truth from a shipped copy of the annotations instead and draws a
film only when a pixel of it is asked for: what recomputes a sample of the shipped evidence needs
a few hundred of the thousands of films (the whole render took 71.5 s of CPU in a fresh checkout).
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DataError
from ..labels import DEMO_LABELS, NO_FINDING
from .masks import encode_rle
from .phantom import CaseSpec, PhantomConfig, render, sample_cohort

__all__ = ["GENERATOR_VERSION", "SHORTCUT_READER", "DemoData", "LazyFilms", "cache_files", "cache_key",
           "cached_image", "given_or_loaded", "label_matrix", "lazy_demo", "load_demo", "shipped_annotations"]

#: Bump when the phantom's pixels or the cohort's order change for the same config (invalidates caches
#: and stores: a cache's row i is ``sample_cohort(config)[i]``).
GENERATOR_VERSION = 1
#: Reader name under which a planted shortcut marker's mask is stored.
SHORTCUT_READER = "shortcut"


@dataclass
class DemoData:
    config: PhantomConfig
    specs: list[CaseSpec]
    images: np.ndarray  # (N, S, S) uint8, row i ↔ specs[i] (a LazyFilms from lazy_demo)
    annotations: pd.DataFrame  # image_id, label, reader, instance, kind, x, y, w, h, mask_rle, ...

    def split_index(self, split: str) -> np.ndarray:
        return np.array([i for i, s in enumerate(self.specs) if s.split == split])


def cache_key(config: PhantomConfig) -> str:
    text = f"v{GENERATOR_VERSION}:{config.to_json()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cache_files(config: PhantomConfig, directory: str | Path) -> tuple[Path, Path]:
    """The rendered images and annotations of ``config``'s cohort under ``directory`` (written by
    :func:`load_demo`; the cohort has ``config.n_images`` images)."""
    stem = f"{cache_key(config)}-{config.n_images}"
    return Path(directory) / f"images-{stem}.npy", Path(directory) / f"annotations-{stem}.json"


def cached_image(config: PhantomConfig, directory: str | Path, image_id: str, spec: str) -> np.ndarray | None:
    """One image's pixels from the render cache of ``config`` under ``directory`` (a memory-mapped
    row, under a millisecond), or None when there is no such cache or it does not hold this very
    ``spec`` (a :class:`CaseSpec`'s JSON): then the caller renders it."""
    path = cache_files(config, directory)[0]
    if not path.is_file():
        return None
    images, rows = _render_cache(config.to_json(), str(path))
    row, stored = rows.get(image_id, (None, None))
    if stored != spec or images.shape != (config.n_images, config.size, config.size):
        return None
    return np.array(images[row])


@lru_cache(maxsize=4)
def _render_cache(config: str, path: str) -> tuple[np.ndarray, dict[str, tuple[int, str]]]:
    """The render cache at ``path`` (memory-mapped) and each image id's row and spec in it: row i
    is ``sample_cohort(config)[i]``, as :func:`load_demo` wrote it."""
    specs = sample_cohort(PhantomConfig.from_json(config))
    return np.load(path, mmap_mode="r"), {s.image_id: (i, s.to_json()) for i, s in enumerate(specs)}


def label_matrix(specs: Sequence[CaseSpec], labels: Sequence[str] = DEMO_LABELS) -> np.ndarray:
    """(N, len(labels)) float32 0/1 matrix; "No Finding" is 1 exactly when no finding is present."""
    return np.array([[float(lab in s.findings or (lab == NO_FINDING and not s.findings)) for lab in labels]
                     for s in specs], np.float32)


def load_demo(config: PhantomConfig, directory: str | Path, *, workers: int | None = None,
              progress: Callable[[int, int], None] | None = None) -> DemoData:
    """The demo cohort with its rendered images and annotations, rendering what is missing."""
    specs = sample_cohort(config)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    img_path, ann_path = cache_files(config, directory)
    if not (img_path.exists() and ann_path.exists()):
        with open(img_path.with_name(f"{img_path.stem}.render.lock"), "a+") as lock:
            # one process renders, the others wait for its files (the app's build beside a command,
            # a test worker beside another): never the same thousands of films twice at once
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            if not (img_path.exists() and ann_path.exists()):
                _render_all(config, specs, img_path, ann_path, workers, progress)
    images = np.load(img_path, mmap_mode="r")
    annotations = pd.DataFrame(json.loads(ann_path.read_text()))
    return DemoData(config, specs, images, annotations)


class LazyFilms:
    """A cohort's films as an (N, S, S) uint8 stack that draws a film the first time it is indexed
    and keeps it: the same pixels as the rendered cache's row (:func:`render` of the same spec).

    ``truth`` (image id → its annotation records, as read): each film drawn is checked against it,
    the generator's records for that film equal to the ones read, or a :class:`DataError`: the
    ground truth a score is computed against is the drawn film's own."""

    def __init__(self, config: PhantomConfig, specs: Sequence[CaseSpec],
                 truth: dict[str, list] | None = None) -> None:
        self.config, self.specs, self._truth = config, list(specs), truth
        self.shape = (len(self.specs), config.size, config.size)
        self.dtype = np.dtype(np.uint8)
        self.ndim = 3
        self._rows: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def drawn(self) -> int:
        """How many films were drawn so far."""
        return len(self._rows)

    def _row(self, i: int) -> np.ndarray:
        if i not in self._rows:
            image, records = _render_one(self.config, self.specs[i])
            image_id = self.specs[i].image_id
            if self._truth is not None and json.loads(json.dumps(records)) != self._truth.get(image_id, []):
                raise DataError(f"the annotations read for {image_id} are not the phantom generator's for "
                                "it (a shipped copy of another generator?): rebuild the evidence snapshot "
                                "(make demo-evidence) or delete the copy to render the cohort")
            self._rows[i] = image
        return self._rows[i]

    def __getitem__(self, index) -> np.ndarray:
        """A film (an integer) or a stack of them (a slice, a list or an array of rows, a mask)."""
        if isinstance(index, int | np.integer):
            return self._row(int(np.arange(len(self))[index])).copy()
        rows = np.arange(len(self))[index]
        return np.stack([self._row(int(i)) for i in rows]) if len(rows) else np.empty((0, *self.shape[1:]),
                                                                                      np.uint8)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.asarray(self[:], dtype=dtype)


def shipped_annotations(config: PhantomConfig, folder: str | Path) -> Path:
    """Where a shipped copy of ``config``'s annotations file lies in ``folder``: its cache file's
    name, gzipped (the same bytes :func:`load_demo` writes)."""
    return Path(folder) / f"{cache_files(config, folder)[1].name}.gz"


def lazy_demo(config: PhantomConfig, directory: str | Path, *,
              annotations: str | Path | None = None) -> DemoData:
    """The demo cohort as :func:`load_demo` gives it, but with the ground truth read from the
    annotations shipped in ``annotations`` (:func:`shipped_annotations`) when ``directory`` holds no
    rendered cache, and each film drawn when it is first asked for (:class:`LazyFilms`). Without a
    rendered cache or a shipped copy, everything is rendered as :func:`load_demo` does. One instance
    per process and cohort, so its films are drawn once."""
    img_path, ann_path = cache_files(config, directory)
    if img_path.exists() and ann_path.exists():
        return load_demo(config, directory)
    shipped = shipped_annotations(config, annotations) if annotations is not None else None
    source = ann_path if ann_path.exists() else shipped
    if source is None or not source.is_file():
        return load_demo(config, directory)
    data = _lazy(config.to_json(), str(source))
    return replace(data, annotations=data.annotations.copy())


@lru_cache(maxsize=4)
def _lazy(config: str, source: str) -> DemoData:
    raw = Path(source).read_bytes()
    records = json.loads(gzip.decompress(raw) if source.endswith(".gz") else raw)
    config_ = PhantomConfig.from_json(config)
    specs = sample_cohort(config_)
    truth: dict[str, list] = {}
    for record in records:
        truth.setdefault(record["image_id"], []).append(record)
    return DemoData(config_, specs, LazyFilms(config_, specs, truth), pd.DataFrame(records))


def given_or_loaded(data: DemoData | None, config: PhantomConfig, directory: str | Path, **kw) -> DemoData:
    """``data`` when a caller has the cohort (it must be ``config``'s), else :func:`load_demo`'s."""
    if data is None:
        return load_demo(config, directory, **kw)
    if data.config != config:
        raise DataError(f"the cohort given is of another phantom configuration ({data.config.to_json()}) "
                        f"than the one asked for ({config.to_json()})")
    return data


def _render_all(config, specs, img_path: Path, ann_path: Path, workers, progress) -> None:
    n, s = len(specs), config.size
    tmp_img = img_path.with_name(f"{img_path.stem}.tmp{os.getpid()}.npy")
    out = np.lib.format.open_memmap(tmp_img, mode="w+", dtype=np.uint8, shape=(n, s, s))
    records: list[dict] = []
    workers = workers if workers is not None else min(2, os.cpu_count() or 1)
    results = (map(_render_one, [config] * n, specs) if workers <= 1 or n < 64 else None)
    pool = None
    if results is None:
        pool = ProcessPoolExecutor(workers)
        results = pool.map(_render_one, [config] * n, specs, chunksize=32)
    try:
        for i, (image, recs) in enumerate(results):
            out[i] = image
            records += recs
            if progress:
                progress(i + 1, n)
    finally:
        if pool is not None:
            pool.shutdown()
    out.flush()
    del out
    tmp_ann = ann_path.with_name(f"{ann_path.name}.tmp{os.getpid()}")
    tmp_ann.write_text(json.dumps(records))
    os.replace(tmp_img, img_path)
    os.replace(tmp_ann, ann_path)


def _render_one(config: PhantomConfig, spec: CaseSpec) -> tuple[np.ndarray, list[dict]]:
    case = render(spec, config)
    size = config.size
    recs = []
    for inst in case.instances:
        x, y, w, h = inst.box
        base = {"image_id": spec.image_id, "label": inst.label, "reader": "gt", "instance": inst.index}
        recs.append(
            {
                **base,
                "kind": "mask",
                "mask_rle": encode_rle(inst.mask),
                "mask_height": size,
                "mask_width": size,
            }
        )
        recs.append({**base, "kind": "box", "x": x, "y": y, "w": w, "h": h})
    if case.shortcut_mask is not None and config.shortcut is not None:
        recs.append({"image_id": spec.image_id, "label": config.shortcut.label, "reader": SHORTCUT_READER,
                     "instance": 0, "kind": "mask", "mask_rle": encode_rle(case.shortcut_mask),
                     "mask_height": size, "mask_width": size})
    return case.image, recs
