"""Tables a stage owns: declared where the stage is defined, created by the store on first write.

The schema's own tables are versioned (:mod:`._schema`); a table a stage declares
(:class:`StageTable`, given to ``@stage(..., tables=...)`` in :mod:`cxrxai.pipeline.stages`) is
not: the store creates it when a stage first writes to it (:meth:`StoreWriter.put_table`), so
adding a stage with its own table changes no schema version, needs no migration and leaves every
older store and the shipped evidence snapshot readable as they are. A declaration names the
table's columns with their DuckDB types and its key (rows of the same key are replaced).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..errors import StoreError
from ._schema import TABLES

__all__ = ["DECLARED_TABLES", "StageTable", "declare_table", "undeclare_table"]

_NAME = re.compile(r"[a-z][a-z0-9_]*")
#: The column types a declared table may use (DuckDB's, as the schema's own tables use them).
COLUMN_TYPES = ("VARCHAR", "DOUBLE", "REAL", "FLOAT", "INTEGER", "BIGINT", "TINYINT", "BOOLEAN",
                "TIMESTAMP", "VARCHAR[]", "DOUBLE[]", "FLOAT[]")


@dataclass(frozen=True)
class StageTable:
    """A table a stage owns: ``columns`` (name → DuckDB type, in order) and its ``key`` columns.

    >>> StageTable("toy", {"model_id": "VARCHAR", "n": "INTEGER"}, key=("model_id",)).ddl()
    'CREATE TABLE IF NOT EXISTS toy ("model_id" VARCHAR NOT NULL, "n" INTEGER, PRIMARY KEY ("model_id"))'
    """

    name: str
    columns: Mapping[str, str]
    key: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", MappingProxyType(dict(self.columns)))
        object.__setattr__(self, "key", tuple(self.key))
        for name in (self.name, *self.columns):
            if not _NAME.fullmatch(name):
                raise StoreError(f"a declared table's name or column is lowercase letters, digits and _, "
                                 f"starting with a letter; got {name!r}")
        bad = {c: t for c, t in self.columns.items() if t not in COLUMN_TYPES}
        if bad:
            raise StoreError(f"table {self.name!r}: column types {bad} are not among "
                             f"{', '.join(COLUMN_TYPES)}")
        if not self.key or any(k not in self.columns for k in self.key):
            raise StoreError(f"table {self.name!r}: its key {list(self.key)} must be one or more of its "
                             f"columns {list(self.columns)}")

    @property
    def column_names(self) -> list[str]:
        return list(self.columns)

    def ddl(self) -> str:
        """The ``CREATE TABLE IF NOT EXISTS`` statement (key columns NOT NULL)."""
        cols = [f'"{c}" {t}' + (" NOT NULL" if c in self.key else "") for c, t in self.columns.items()]
        key = ", ".join(f'"{k}"' for k in self.key)
        return f"CREATE TABLE IF NOT EXISTS {self.name} ({', '.join(cols)}, PRIMARY KEY ({key}))"


_DECLARED: dict[str, StageTable] = {}
#: Every declared table by name, read-only, in declaration order.
DECLARED_TABLES = MappingProxyType(_DECLARED)


def declare_table(table: StageTable) -> StageTable:
    """Add ``table`` to the declared tables; a schema table's name, or the name of another
    declaration with other columns or key, is a :class:`StoreError`."""
    if table.name in TABLES:
        raise StoreError(f"{table.name!r} is a table of the store's schema; a stage's table needs a name "
                         f"of its own (taken: {', '.join(TABLES)})")
    taken = _DECLARED.get(table.name)
    if taken is not None and taken != table:
        raise StoreError(f"a table named {table.name!r} is already declared with other columns or key "
                         f"({dict(taken.columns)}, key {list(taken.key)}); choose another name")
    _DECLARED[table.name] = table
    return table


def undeclare_table(name: str) -> None:
    """Forget a declaration (a test's toy); nothing in any store changes."""
    _DECLARED.pop(name, None)

