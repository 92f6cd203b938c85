"""The DuckDB store: the only place in cxrxai with SQL.

Usage::

    from cxrxai.store import open_store, write_store
    with write_store("data_cache/demo.duckdb") as w:    # staging copy, published atomically
        w.put_images(df)
    store = open_store("data_cache/demo.duckdb")         # read-only; refresh() picks up new versions
"""

from ._map_queries import StoredMap
from ._reader import Store, open_store
from ._roots import reroot_dataset, reroot_model
from ._schema import CAM_ONLY_META, LOCALIZATION_KEY, SCHEMA_VERSION
from ._settings import SWEEP_PLAN_META, main_rows, main_settings
from ._snapshot import export_table, import_table, migrate_snapshot, shipped_tables
from ._stage_tables import DECLARED_TABLES, StageTable, declare_table, undeclare_table
from ._writer import StoreWriter, params_key, write_store

__all__ = [
    "CAM_ONLY_META",
    "DECLARED_TABLES",
    "LOCALIZATION_KEY",
    "SCHEMA_VERSION",
    "SWEEP_PLAN_META",
    "StageTable",
    "Store",
    "StoreWriter",
    "StoredMap",
    "declare_table",
    "export_table",
    "import_table",
    "main_rows",
    "main_settings",
    "migrate_snapshot",
    "open_store",
    "params_key",
    "reroot_dataset",
    "reroot_model",
    "shipped_tables",
    "undeclare_table",
    "write_store",
]
