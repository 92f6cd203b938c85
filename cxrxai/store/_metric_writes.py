"""Writes to the metric tables (localization, geometry, trust, fidelity, shortcut) and to the
tables stages declare (:mod:`._stage_tables`: created here on first write).

``localization`` is written wide, as it is read (one column per registered metric beside the
per-map fields), and stored long from schema v6: the per-map fields in ``localization``, each
metric value a row of ``localization_scores``. A frame carrying only some metrics writes only
those scores and leaves the others and the per-map fields of existing rows as they are, so
scoring resumes per (map, metric).
"""

from __future__ import annotations

import pandas as pd

from ..errors import StoreError
from ..metrics.registry import metric_names
from ._schema import LOCALIZATION_KEY, METRIC_TABLES
from ._stage_tables import DECLARED_TABLES

__all__ = ["MetricTableWriter"]


class MetricTableWriter:
    """Mixed into :class:`~cxrxai.store.StoreWriter` (uses its ``_con``, ``_upsert``, ``put_problems``)."""

    def put_table(self, table: str, df: pd.DataFrame) -> int:
        """Upsert rows into a metric table (localization, geometry, trust, fidelity) or a table a
        stage declares (created on its first write); problem rows go through :meth:`put_problems`.
        Unknown columns are refused, nothing written."""
        if table in DECLARED_TABLES:
            return self._put_declared(table, df)
        if table not in METRIC_TABLES:
            raise StoreError(
                f"put_table writes metric tables ({', '.join(METRIC_TABLES)}) and the tables stages "
                f"declare ({', '.join(DECLARED_TABLES) or 'none'}), not {table!r}"
            )
        if table == "problems":
            return self.put_problems(df)
        known = self._table_columns(table)
        unknown = [c for c in df.columns if c not in known]
        if unknown:
            raise StoreError(
                f"{table} has no column(s) {unknown}; its columns: {known}"
                + (". A new localization metric needs its registration (cxrxai.metrics.registry.register)"
                   if table == "localization" else "")
                + " — nothing was written"
            )
        if table == "localization":
            return self._put_localization(df)
        return self._upsert(table, df, [c for c in known if c in df.columns])

    def ensure_table(self, table: str) -> None:
        """Create the declared ``table`` unless the store has it; a stored table whose columns
        differ from the declaration is a :class:`StoreError` (rename the table in its declaration)."""
        spec = DECLARED_TABLES[table]
        if not self.has_table(table):
            self._con.execute(spec.ddl())
            return
        stored = self._columns(table)
        if stored != spec.column_names:
            raise StoreError(f"{self.path} has a table {table!r} with the columns {stored}; its stage "
                             f"declares {spec.column_names}: declare the changed table under a new name "
                             "— nothing written")

    def _put_declared(self, table: str, df: pd.DataFrame) -> int:
        self.ensure_table(table)
        known = DECLARED_TABLES[table].column_names
        unknown = [c for c in df.columns if c not in known]
        if unknown:
            raise StoreError(f"{table} has no column(s) {unknown}; its columns: {known} "
                             "— nothing was written")
        return self._upsert(table, df, [c for c in known if c in df.columns])

    def _table_columns(self, table: str) -> list[str]:
        """The columns a frame written to ``table`` may have: its stored columns, and for
        ``localization`` one per registered metric (stored as rows of ``localization_scores``)."""
        stored = self._columns(table)
        if table != "localization":
            return stored
        return stored + [n for n in metric_names() if n not in stored]

    def _put_localization(self, df: pd.DataFrame) -> int:
        """The per-map fields of ``df`` into ``localization`` (only the columns it has: an existing
        row keeps the others), its metric columns as rows of ``localization_scores``."""
        if df.empty:
            return 0
        if "source" not in df.columns:
            df = df.assign(source="explainer")
        stored = self._columns("localization")
        fields = [c for c in stored if c in df.columns]
        metrics = [c for c in df.columns if c not in stored]
        self._upsert("localization", df, fields)  # INSERT OR REPLACE sets these columns only
        if metrics:
            key = list(LOCALIZATION_KEY)
            long = df[key + metrics].melt(id_vars=key, var_name="metric", value_name="value")
            long["value"] = pd.to_numeric(long["value"], errors="coerce").astype(float)
            self._upsert("localization_scores", long, [*key, "metric", "value"])
        return len(df)
