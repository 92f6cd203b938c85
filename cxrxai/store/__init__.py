"""The DuckDB store: the only place in cxrxai with SQL.

Usage::

    from cxrxai.store import open_store, write_store
    with write_store("data_cache/demo.duckdb") as w:    # staging copy, published atomically
        w.put_images(df)
    store = open_store("data_cache/demo.duckdb")         # read-only; refresh() picks up new versions
"""

from ._queries import StoredMap
from ._roots import reroot_dataset, reroot_model
from ._schema import CAM_ONLY_META, LOCALIZATION_KEY, SCHEMA_VERSION
from ._settings import main_rows, main_settings
from ._snapshot import export_table, import_table, shipped_tables
from ._store import Store, StoreWriter, open_store, params_key, write_store

__all__ = [
    "CAM_ONLY_META",
    "LOCALIZATION_KEY",
    "SCHEMA_VERSION",
    "Store",
    "StoreWriter",
    "StoredMap",
    "export_table",
    "import_table",
    "main_rows",
    "main_settings",
    "open_store",
    "params_key",
    "reroot_dataset",
    "reroot_model",
    "shipped_tables",
    "write_store",
]
