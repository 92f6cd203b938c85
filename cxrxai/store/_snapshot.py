"""A store's result tables as Parquet files, and back (the SQL of :mod:`cxrxai.pipeline.evidence`).

Which tables travel comes from the schema (:data:`~cxrxai.store._schema.TABLES`), so a table a
later schema version adds is shipped without a change here. Left out: the tables a build writes
from its inputs (:data:`REGENERATED`: the phantom cases, their labels and masks, rebuilt from their
seeds in seconds). Of the saliency maps only those at their explainer's own grid travel (a CAM at
the network's feature grid, an occlusion map's window scores: tens to hundreds of values each);
a map at the input's pixels (:data:`PIXEL_MAPS`: 50,176 values at 224 px) is recomputed where a
page opens one. ``models`` travels without its machine-specific ``weights_path``; ``meta`` without
the keys that describe one store file (:data:`LOCAL_META`).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import StoreError
from ._schema import TABLES

__all__ = ["LOCAL_META", "PIXEL_MAPS", "REGENERATED", "export_table", "import_table", "shipped_tables"]

#: Written by a build from its inputs (the seeded phantoms): never shipped.
REGENERATED = ("datasets", "images", "labels", "annotations")
#: The ``kind`` of the maps too big to ship (a map at the input's pixels is 200 kB at 224 px):
#: recomputed live where a page opens one.
PIXEL_MAPS = "pixel"
#: Meta keys of one store file (its version and when it was published), not of its results.
LOCAL_META = ("schema_version", "built_at")


def shipped_tables() -> tuple[str, ...]:
    """Every table of the schema but the regenerated ones, in schema order (the maps in part)."""
    return tuple(t for t in TABLES if t not in REGENERATED)


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
        raise StoreError(f"{store.path} has no table {table!r}: open it with a writer to migrate it first")
    with store._cursor() as cur:
        cur.execute(f"COPY ({_select(table)}) TO {_quote(Path(path))} (FORMAT parquet, COMPRESSION zstd)")
        return int(cur.execute(f"SELECT count(*) FROM read_parquet({_quote(Path(path))})").fetchone()[0])


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
    be the table's (same schema version). Returns the rows added."""
    if table not in shipped_tables():
        raise StoreError(f"{table!r} is not a shipped table; shipped: {', '.join(shipped_tables())}")
    src = f"read_parquet({_quote(Path(path))})"
    have = [r[0] for r in writer._con.execute(f"DESCRIBE SELECT * FROM {table}").fetchall()]
    got = [r[0] for r in writer._con.execute(f"DESCRIBE SELECT * FROM {src}").fetchall()]
    if have != got:
        raise StoreError(f"{path} has the columns {got}, the store's {table} has {have}: the file is "
                         "from another schema version; rebuild it (`make demo-evidence`)")
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
