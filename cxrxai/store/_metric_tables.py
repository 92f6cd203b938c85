"""Reads of the metric tables (localization, geometry, trust, fidelity, problems, shortcut).

The localization scores are stored long (schema v6: ``localization_scores``, one row per map,
reader and metric) and read wide: :meth:`MetricTableQueries.table` pivots them into one column
per registered metric (:mod:`cxrxai.metrics.registry`), a metric with no stored value reading
NaN, so a newly registered metric reads at once from any store. Stores before v6 hold the scores
as columns of ``localization`` and are read as they are.
"""

from __future__ import annotations

import pandas as pd

from ..errors import UnknownNameError
from ..metrics.registry import metric_names
from ._schema import LOCALIZATION_KEY, METRIC_TABLES
from ._sql import quoted, where
from ._stage_tables import DECLARED_TABLES

__all__ = ["MetricTableQueries"]

_SCORES = "localization_scores"
_LEGACY_PREFIX = r"^(baseline|reader):"


class MetricTableQueries:
    """Mixed into :class:`~cxrxai.store._queries.Queries` (uses its ``_df``, ``_rows``, ``has_table``)."""

    def _columns(self, table: str) -> list[str]:
        return [
            r[0]
            for r in self._rows(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_catalog = current_database() AND table_name = ? ORDER BY ordinal_position",
                [table],
            )
        ]

    def table(self, name: str, **filters) -> pd.DataFrame:
        """Rows of a metric table or a table a stage declares, filtered by equality on any of its
        columns; empty if absent. ``localization`` has one column per registered metric, whatever
        the store's version."""
        if name not in METRIC_TABLES and name not in DECLARED_TABLES:
            raise UnknownNameError("metric table", name, (*METRIC_TABLES, *DECLARED_TABLES))
        if not self.has_table(name):
            return pd.DataFrame()
        if name == "localization" and self.has_table(_SCORES):
            return self._localization_wide(filters)
        if name == "localization":
            return _with_registered(self._wide_columns_table(filters))
        _refuse_unknown(filters, self._columns(name))
        where_sql, params = where(**filters)
        return self._df(f"SELECT * FROM {name}{where_sql}", params)

    def _localization_wide(self, filters: dict) -> pd.DataFrame:
        """The v6 pivot: the per-map fields, then one column per registered metric."""
        names = metric_names()
        _refuse_unknown(filters, [*self._columns("localization"), *names])
        key = ", ".join(LOCALIZATION_KEY)
        on_key = {k: v for k, v in filters.items() if k in LOCALIZATION_KEY}
        inner_where, inner_params = where(**on_key)
        outer_where, outer_params = where(**filters)
        picks = [f"max(value) FILTER (WHERE metric = ?) AS {quoted(n)}" for n in names]
        scores = (f"SELECT {key}, {', '.join(picks)} FROM {_SCORES}{inner_where} GROUP BY {key}"
                  if names else f"SELECT {key} FROM {_SCORES} LIMIT 0")
        metrics = "".join(f", s.{quoted(n)}" for n in names)
        sql = (f"SELECT * FROM (SELECT l.*{metrics} FROM localization l LEFT JOIN ({scores}) s "
               f"USING ({key})){outer_where}")
        return self._df(sql, [*names, *inner_params, *outer_params])

    def _wide_columns_table(self, filters: dict) -> pd.DataFrame:
        """``localization`` of a store before v6 (scores as columns), read as it is; before v3
        baselines and second readers were ``baseline:<name>`` / ``reader:<name>`` methods."""
        cols = self._columns("localization")
        legacy = "source" not in cols
        later = {k: filters.pop(k) for k in ("source", "method") if legacy and k in filters}
        _refuse_unknown(filters, [*cols, *metric_names()], also=("source",) if legacy else ())
        on_stored = {k: v for k, v in filters.items() if k in cols}
        where_sql, params = where(**on_stored)
        df = _with_registered(self._df(f"SELECT * FROM localization{where_sql}", params))
        for k, v in filters.items():  # a registered metric the old store has no column of: NaN
            if k not in cols:
                df = df[df[k] == v]
        if legacy:
            kind = df["method"].str.extract(_LEGACY_PREFIX, expand=False)
            df.insert(3, "source", kind.fillna("explainer"))
            df["method"] = df["method"].str.replace(_LEGACY_PREFIX, "", regex=True)
            for k, v in later.items():
                df = df[df[k] == v]
        return df.reset_index(drop=True)

    def localization_missing(self, **filters) -> pd.DataFrame:
        """The (localization row, registered metric) pairs with no stored score: the row's key
        columns and ``metric``. Resuming scoring fills them; ``filters`` as :meth:`table`'s on
        the per-map columns (e.g. ``model_id``, ``source='explainer'``)."""
        names = metric_names()
        columns = [*LOCALIZATION_KEY, "metric"]
        if not names or not self.has_table("localization"):
            return pd.DataFrame(columns=columns)
        if not self.has_table(_SCORES):
            rows = self.table("localization", **filters)
            stored = set(self._columns("localization"))
            missing = [n for n in names if n not in stored]
            return rows.reindex(columns=list(LOCALIZATION_KEY)).merge(
                pd.DataFrame({"metric": missing}), how="cross").reindex(columns=columns)
        _refuse_unknown(filters, self._columns("localization"))
        where_sql, params = where(prefix="l.", **filters)
        key = ", ".join(LOCALIZATION_KEY)
        return self._df(
            f"SELECT {key}, metric FROM (SELECT l.*, m.metric FROM localization l "
            f"CROSS JOIN (SELECT unnest(?::VARCHAR[]) AS metric) m{where_sql}) "
            f"ANTI JOIN {_SCORES} USING ({key}, metric) ORDER BY ALL",
            [names, *params],
        )

    def scored_settings(self, name: str, model_id: str) -> pd.DataFrame:
        """(method, params_key, n rows) of metric table ``name`` for ``model_id``, one aggregate
        query (a fidelity table carries whole curves per row); empty if the table is absent."""
        if name not in METRIC_TABLES:
            raise UnknownNameError("metric table", name, METRIC_TABLES)
        if not self.has_table(name):
            return pd.DataFrame(columns=["method", "params_key", "n"])
        return self._df(
            f"SELECT method, params_key, count(*) AS n FROM {name} WHERE model_id = ? GROUP BY ALL "
            "ORDER BY method, params_key",
            [model_id],
        )


def _refuse_unknown(filters: dict, known: list[str], also: tuple[str, ...] = ()) -> None:
    unknown = set(filters) - set(known) - set(also)
    if unknown:
        raise UnknownNameError("column", sorted(unknown)[0], sorted(known))


def _with_registered(df: pd.DataFrame) -> pd.DataFrame:
    """A localization frame of a store before v6 in the columns of a v6 one: the other columns,
    then one per registered metric in registry order (NaN where the store has no column)."""
    names = metric_names()
    absent = [n for n in names if n not in df.columns]
    df = df.assign(**dict.fromkeys(absent, float("nan"))) if absent else df
    return df[[c for c in df.columns if c not in names] + names]
