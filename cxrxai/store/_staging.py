"""The files a writer keeps beside a store: its lock, its staging copy and their leftovers.

:func:`~cxrxai.store.write_store` writes ``PATH.lock``, ``PATH.staging`` (and DuckDB's
``PATH.staging.wal``) and, when publishing, ``PATH.publish-PID`` — all in the store's folder,
because ``os.replace`` is atomic only within one file system. A folder that cannot hold them (read
only, not a folder, no space) is a :class:`~cxrxai.errors.StoreError` naming the folder and what
to do, before anything is written.
"""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path
from typing import IO

from ..errors import StoreError

__all__ = ["clear_leftovers", "copy_to_staging", "release_lock", "take_lock"]


def _unwritable(path: Path, err: OSError) -> StoreError:
    return StoreError(
        f"cannot write the store {path}: its folder {path.parent} cannot hold the files a writer keeps "
        f"beside the store (a lock and a staging copy; {type(err).__name__}: {err.strerror or err}). "
        "Write to a folder you can write to — copy the store there and pass that path to --store — or "
        "make this folder writable")


def take_lock(path: Path) -> IO:
    """``PATH.lock`` held exclusively (the folder made if missing); a :class:`StoreError` when
    another process writes the store or the folder cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(path.with_name(path.name + ".lock"), "a+")
    except OSError as err:
        raise _unwritable(path, err) from None
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise StoreError(f"another process is writing {path}; wait for it to finish (or stop it)") from None
    return lock


def release_lock(lock: IO) -> None:
    fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    lock.close()


def clear_leftovers(path: Path, staging: Path) -> None:
    """Drop what a killed writer left (never published; safe under the lock)."""
    published = path.parent.glob(path.name + ".publish-*")
    for stale in (staging, staging.with_name(staging.name + ".wal"), *published):
        stale.unlink(missing_ok=True)


def copy_to_staging(path: Path, staging: Path) -> None:
    """The published store copied to ``staging``; a full disk or an unwritable folder is a
    :class:`StoreError` (the published store is untouched)."""
    try:
        shutil.copyfile(path, staging)
    except OSError as err:
        raise _unwritable(path, err) from None
