"""Opening a published store to read, without ever blocking on its writer.

DuckDB allows one writer process and then refuses other opens. :class:`Store` therefore attaches
the file read-only inside a private in-memory DuckDB instance (so a reopened path is never served
from DuckDB's per-path instance cache), hands one cursor to each call (thread-safe for Streamlit),
and :meth:`Store.refresh` reopens when a writer has published a new version
(:mod:`._writer`). Readers holding the old version keep reading it: POSIX keeps a replaced file
alive while it is open.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pandas as pd

from ..errors import SchemaVersionError, StoreError
from ..metrics.registry import metric_names
from ._queries import Queries
from ._schema import SCHEMA_VERSION

__all__ = ["Store", "open_store"]


def _quote(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _identity(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


class Store(Queries):
    """A read-only view of a published store (see the module docstring)."""

    _MEMO_SIZE = 8

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._con: duckdb.DuckDBPyConnection | None = None
        self._memo: dict[tuple, pd.DataFrame] = {}
        self._memo_lock = threading.Lock()
        self._facts: dict[tuple, object] = {}
        self._open()

    def _open(self) -> None:
        if not self.path.is_file():
            raise StoreError(
                f"no store at {self.path}; build the demo with `python -m cxrxai demo`"
            )
        identity = _identity(self.path)
        con = duckdb.connect(":memory:")
        try:
            con.execute(f"ATTACH {_quote(self.path)} AS store (READ_ONLY)")
        except duckdb.Error as err:
            con.close()
            raise StoreError(f"cannot open {self.path} as a DuckDB store: {err}") from None
        # The old connection is dropped, not closed: cursors other threads took finish on the
        # old version.
        self._con = con
        self._identity = identity
        self._facts = {}
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            self.close()
            raise SchemaVersionError(
                f"{self.path} has schema version {version}, newer than this cxrxai understands "
                f"(≤ {SCHEMA_VERSION}); upgrade cxrxai, or rebuild the store with this version"
            )

    @contextmanager
    def _cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        if self._con is None:
            raise StoreError(f"the store at {self.path} is closed")
        cur = self._con.cursor()
        try:
            cur.execute("USE store")
            yield cur
        finally:
            cur.close()

    def _kept(self, key: tuple, compute):
        """``compute()`` once per published version and ``key``; the last few kept (callers
        copy)."""
        key = (*key, self._identity)
        with self._memo_lock:
            found = self._memo.get(key)
        if found is None:
            found = compute()
            with self._memo_lock:
                self._memo[key] = found
                while len(self._memo) > self._MEMO_SIZE:
                    self._memo.pop(next(iter(self._memo)))
        return found

    @property
    def published(self) -> str:
        """Changes with every publish: ``built_at`` (whole seconds) and the file's identity."""
        ino, mtime_ns, size = self._identity
        return f"{self.meta('built_at') or ''}#{mtime_ns}.{size}.{ino}"

    def _fact(self, key: tuple, compute):
        """Table names, meta, models: read once per version (a rerun had asked ~10 times)."""
        facts = self._facts
        if key not in facts:
            facts[key] = compute()
        return facts[key]

    def has_table(self, table: str) -> bool:
        return self._fact(("has_table", table), lambda: super(Store, self).has_table(table))

    def meta(self, key: str, default: str | None = None) -> str | None:
        found = self._fact(("meta", key), lambda: super(Store, self).meta(key))
        return default if found is None else found

    def models(self) -> pd.DataFrame:
        return self._fact(("models",), lambda: super(Store, self).models()).copy()

    def prediction_table(self, model_id: str, *, split: str | None = None) -> pd.DataFrame:
        """Kept for the last few (model, split) of this version (a copy each call): the subgroup
        views slice it many ways, and at NIH size the join takes ~150 ms of a click's 300 ms."""
        found = self._kept(
            ("predictions", model_id, split),
            lambda: super(Store, self).prediction_table(model_id, split=split),
        )
        return found.copy()

    def prediction_splits(self, model_id: str) -> dict[str, int]:
        """Kept per version: every report asks it first (5 M rows scanned at MIMIC-CXR size)."""
        found = self._kept(
            ("splits", model_id), lambda: super(Store, self).prediction_splits(model_id)
        )
        return dict(found)

    def label_counts(self, *, dataset: str | None = None) -> pd.DataFrame:
        """Kept per version (every label row joined with its image: 0.45 s at MIMIC-CXR size)."""
        return self._kept(
            ("label_counts", dataset), lambda: super(Store, self).label_counts(dataset=dataset)
        ).copy()

    def table(self, name: str, **filters) -> pd.DataFrame:
        """As :meth:`Queries.table`; ``localization`` kept for the last few (filters, registered
        metrics) of this version (a copy each call): its scores are pivoted from long on every
        read (~0.5 s at 50 k rows, benchmarks/localization_read.py), and the pages ask it per
        click."""
        if name != "localization":
            return super().table(name, **filters)
        key = ("table", name, tuple(sorted(filters.items())), tuple(metric_names()))
        return self._kept(key, lambda: super(Store, self).table(name, **filters)).copy()

    def changed(self) -> bool:
        """Whether a writer has published a new version since this view was opened."""
        try:
            return _identity(self.path) != self._identity
        except FileNotFoundError:
            return False

    def refresh(self) -> bool:
        """Reopen if a new version was published; returns whether it did."""
        if self.changed():
            self._open()
            return True
        return False

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
            self._facts = {}

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_store(path: str | Path) -> Store:
    """Open a published store read-only."""
    return Store(path)
