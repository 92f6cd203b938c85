"""A store's result tables as Parquet files, and back (the SQL of :mod:`cxrxai.pipeline.evidence`).

Which tables travel comes from the schema (:data:`~cxrxai.store._schema.TABLES`) and the tables
stages declare (:mod:`._stage_tables`), so a table a later schema version or a new stage adds is
shipped without a change here. A snapshot of an older schema version is migrated as an old store
is (:func:`migrate_snapshot`: the same :data:`~cxrxai.store._schema.MIGRATIONS`).

Left out: the tables a build writes from its inputs (:data:`REGENERATED`: the phantom cases, their
labels and masks, rebuilt from their seeds in seconds). Of the saliency maps only those at their
explainer's own grid travel (a CAM at the network's feature grid, an occlusion map's window
scores: tens to hundreds of values each); a map at the input's pixels (:data:`PIXEL_MAPS`: 50,176
values at 224 px) is recomputed where a page opens one. ``models`` travels without its
machine-specific ``weights_path``; ``meta`` without the keys that describe one store file
(:data:`LOCAL_META`).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ..errors import StoreError
from ._schema import MIGRATIONS, SCHEMA_VERSION, TABLES
from ._stage_tables import DECLARED_TABLES

__all__ = ["LOCAL_META", "PIXEL_MAPS", "REGENERATED", "export_table", "import_table", "migrate_snapshot",
           "shipped_tables"]

#: Written by a build from its inputs (the seeded phantoms): never shipped.
REGENERATED = ("datasets", "images", "labels", "annotations")
#: The ``kind`` of the maps too big to ship (a map at the input's pixels is 200 kB at 224 px):
#: recomputed live where a page opens one.
PIXEL_MAPS = "pixel"
#: Meta keys of one store file (its version and when it was published), not of its results.
LOCAL_META = ("schema_version", "built_at")


def shipped_tables() -> tuple[str, ...]:
    """Every table of the schema but the regenerated ones, in schema order (the maps in part),
    then every table a stage declares."""
    return (*(t for t in TABLES if t not in REGENERATED), *DECLARED_TABLES)


def _quote(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _select(table: str) -> str:
    """The rows of ``table`` that travel, in one fixed order (the same store gives the same file)."""
    if table == "meta":
        keys = ", ".join(f"'{k}'" for k in LOCAL_META)
        return f"SELECT * FROM meta WHERE key NOT IN ({keys}) ORDER BY ALL"
    if table == "models":
        return "SELECT * REPLACE (NULL::VARCHAR AS weights_path) FROM models ORDER BY model_id"
    if table == "maps":
        return f"SELECT * FROM maps WHERE kind <> '{PIXEL_MAPS}' ORDER BY ALL"
    return f"SELECT * FROM {table} ORDER BY ALL"


def export_table(store, table: str, path: str | Path) -> int:
    """Write ``table`` of ``store`` (a :class:`~cxrxai.store.Store`) to the Parquet file ``path``
    (zstd); returns its rows. A table the store does not have yet is written empty."""
    if table not in shipped_tables():
        raise StoreError(f"{table!r} is not a shipped table; shipped: {', '.join(shipped_tables())}")
    if not store.has_table(table):
        raise StoreError(f"{store.path} has no table {table!r}: open it with a writer to migrate it first"
                         + (" (or run the stage that declares it)" if table in DECLARED_TABLES else ""))
    with store._cursor() as cur:
        cur.execute(f"COPY ({_select(table)}) TO {_quote(Path(path))} (FORMAT parquet, COMPRESSION zstd)")
        return int(cur.execute(f"SELECT count(*) FROM read_parquet({_quote(Path(path))})").fetchone()[0])


def _columns(con, sql: str) -> list[str]:
    return [r[0] for r in con.execute(f"DESCRIBE {sql}").fetchall()]


def _same_columns(con, table: str, path: Path, version: int) -> list[str]:
    """The columns of ``table``; a :class:`StoreError` when the Parquet file ``path`` has others."""
    have = _columns(con, f"SELECT * FROM {table}")
    got = _columns(con, f"SELECT * FROM read_parquet({_quote(path)})")
    if have != got:
        raise StoreError(f"{path} has the columns {got}, {table} of schema version {version} has {have}: the "
                         "file is not of the version its provenance says; rebuild it (`make demo-evidence`)")
    return have


def _has_key(writer, table: str) -> bool:
    rows = writer._con.execute(
        "SELECT count(*) FROM duckdb_constraints() WHERE table_name = ? AND constraint_type = 'PRIMARY KEY'",
        [table],
    ).fetchone()
    return bool(rows[0])


def import_table(writer, table: str, path: str | Path, *, models: set[str] | None = None) -> int:
    """Add the rows of the Parquet file ``path`` to ``table`` through ``writer`` (a
    :class:`~cxrxai.store.StoreWriter`), replacing rows of the same key; ``models``: only the rows
    of these model ids (tables without a ``model_id`` column come whole). The file's columns must
    be the table's (same schema version: :func:`migrate_snapshot` brings an older one here); a table
    a stage declares is created first. Returns the rows added."""
    if table not in shipped_tables():
        raise StoreError(f"{table!r} is not a shipped table; shipped: {', '.join(shipped_tables())}")
    if table in DECLARED_TABLES:
        writer.ensure_table(table)
    src = f"read_parquet({_quote(Path(path))})"
    have = got = _same_columns(writer._con, table, Path(path), SCHEMA_VERSION)
    if table == "models":  # never a path from the machine that built it
        have = [c for c in have if c != "weights_path"]
    where, params = "", []
    if models is not None and "model_id" in got:
        where, params = " WHERE list_contains(?, model_id)", [sorted(models)]
    cols = ", ".join(f'"{c}"' for c in have)
    verb = "INSERT OR REPLACE" if _has_key(writer, table) else "INSERT"
    before = writer._con.execute(f"SELECT count(*) FROM {src}{where}", params).fetchone()[0]
    writer._con.execute(f"{verb} INTO {table} ({cols}) SELECT {cols} FROM {src}{where}", params)
    return int(before)


def migrate_snapshot(folder: str | Path, tables: list[str], version: int, out: str | Path) -> None:
    """Write to ``out`` the schema ``tables`` of the snapshot in ``folder`` (Parquet files of schema
    ``version``) as this schema version holds them: a scratch in-memory store is built at
    ``version``, filled from the files and migrated forward by :data:`MIGRATIONS`, as a writer
    migrates an old store file. A file whose columns are not of ``version`` is a :class:`StoreError`."""
    if not 1 <= version <= SCHEMA_VERSION:
        raise StoreError(f"cannot migrate a snapshot of schema version {version}; this cxrxai migrates "
                         f"1 to {SCHEMA_VERSION}")
    folder, out = Path(folder), Path(out)
    con = duckdb.connect(":memory:")
    try:
        _run_migrations(con, 1, version)
        _fill(con, folder, tables, version)
        _run_migrations(con, version + 1, SCHEMA_VERSION)
        for table in (t for t in shipped_tables() if t in TABLES):
            con.execute(f"COPY ({_select(table)}) TO {_quote(out / f'{table}.parquet')} (FORMAT parquet)")
    finally:
        con.close()


def _run_migrations(con, first: int, last: int) -> None:
    for v in range(first, last + 1):
        for ddl in MIGRATIONS[v]:
            con.execute(ddl)


def _fill(con, folder: Path, tables: list[str], version: int) -> None:
    for table in tables:
        cols = ", ".join(f'"{c}"' for c in _same_columns(con, table, folder / f"{table}.parquet", version))
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM read_parquet("
                    f"{_quote(folder / f'{table}.parquet')})")
