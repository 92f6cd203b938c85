"""Typed reads shared by the read-only :class:`Store` and the :class:`StoreWriter`.

Every method returns plain pandas/numpy/dataclass values; the SQL stays in this module and the
mixins it is made of, one per part of the store: the cases (:mod:`._case_queries`), the models
and their predictions (:mod:`._model_queries`), the maps (:mod:`._map_queries`), the metric
tables (:mod:`._metric_tables`) and the data audit (:mod:`._audit`).
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager

import pandas as pd

from ..errors import StoreError
from ._audit import AuditQueries
from ._case_queries import CaseQueries
from ._map_queries import MapQueries, StoredMap
from ._metric_tables import MetricTableQueries
from ._model_queries import ModelQueries
from ._schema import TABLES
from ._sql import where as _where

__all__ = ["Queries", "StoredMap"]


class Queries(CaseQueries, ModelQueries, MapQueries, MetricTableQueries, AuditQueries):
    """Read methods: the store's meta, counts and problem rows here, the rest in the mixins;
    subclasses provide ``_cursor()`` (a context manager yielding a cursor)."""

    def _cursor(self) -> AbstractContextManager:  # pragma: no cover - abstract
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers
    def _df(self, sql: str, params: Iterable = ()) -> pd.DataFrame:
        with self._cursor() as cur:
            return cur.execute(sql, list(params)).df()

    def _arrow_df(self, sql: str, params: Iterable = ()) -> pd.DataFrame:
        """As :meth:`_df` through Arrow: half the time on the 0.5 M-row prediction table of a
        store of MIMIC-CXR size (0.9 s against 1.8 s here). Only for that table: an all-NULL
        text column (``generator_key`` of a real dataset) reads NaN here where ``.df()`` gives
        None, and the explorer took the NaN for a phantom key."""
        with self._cursor() as cur:
            return cur.sql(sql, params=list(params) or None).to_arrow_table().to_pandas()

    def _rows(self, sql: str, params: Iterable = ()) -> list[tuple]:
        with self._cursor() as cur:
            return cur.execute(sql, list(params)).fetchall()

    def has_table(self, table: str) -> bool:
        rows = self._rows(
            "SELECT 1 FROM information_schema.tables "
            "WHERE table_catalog = current_database() AND table_name = ?",
            [table],
        )
        return bool(rows)

    def _require(self, table: str, command: str) -> None:
        if not self.has_table(table):
            raise StoreError(f"the store has no '{table}' table yet; fill it with `{command}`")

    # ------------------------------------------------------------------ meta
    def meta(self, key: str, default: str | None = None) -> str | None:
        if not self.has_table("meta"):
            return default
        rows = self._rows("SELECT value FROM meta WHERE key = ?", [key])
        return rows[0][0] if rows else default

    def schema_version(self) -> int:
        return int(self.meta("schema_version", "0"))

    def table_counts(self) -> dict[str, int]:
        counts = {}
        for t in TABLES:
            if self.has_table(t):
                counts[t] = int(self._rows(f"SELECT count(*) FROM {t}")[0][0])
        return counts

    def info(self) -> dict:
        """Counts per table, datasets, models, labels and explainers: what the store holds."""
        counts = self.table_counts()
        datasets = self.datasets()
        models = self.models()
        explainers = self._explainers(counts)
        labels = sorted({
            str(lab) for labs in datasets.get("labels", []) if labs is not None for lab in labs
        })
        if len(datasets):
            dataset_rows = datasets[["dataset", "source"]].to_dict("records")
        else:
            dataset_rows = []
        if len(models):
            model_rows = models[["model_id", "arch", "weights_sha256"]].to_dict("records")
        else:
            model_rows = []
        return {
            "schema_version": self.schema_version(),
            "built_at": self.meta("built_at"),
            "counts": counts,
            "datasets": dataset_rows,
            "models": model_rows,
            "labels": labels,
            "explainers": explainers,
            "problems": self.problem_counts().to_dict("records"),
        }

    def _explainers(self, counts: dict[str, int]) -> list[str]:
        """Every explainer with stored maps or scored rows (a build may score a map and not keep
        it)."""
        parts = ["SELECT method FROM maps"] if counts.get("maps") else []
        if counts.get("localization") and "source" in self._columns("localization"):
            parts.append("SELECT method FROM localization WHERE source = 'explainer'")
        if not parts:
            return []
        return self._df(" UNION ".join(parts) + " ORDER BY method")["method"].tolist()

    def problems(self, *, dataset: str | None = None) -> pd.DataFrame:
        """Bad rows and files the adapters and stages left out, and what was done about each."""
        if not self.has_table("problems"):
            return pd.DataFrame(columns=["dataset", "stage", "file", "row", "image_id", "problem"])
        where, params = _where(dataset=dataset)
        return self._df(
            f'SELECT * FROM problems{where} ORDER BY dataset, stage, file, "row", image_id', params
        )

    def problem_counts(self) -> pd.DataFrame:
        """Problems per dataset and stage (adapter, decode, import, localization...)."""
        if not self.has_table("problems"):
            return pd.DataFrame(columns=["dataset", "stage", "n"])
        return self._df(
            "SELECT dataset, stage, count(*) AS n FROM problems GROUP BY ALL ORDER BY ALL", []
        )

    def label_matches(self, *, dataset: str | None = None,
                      model_id: str | None = None) -> pd.DataFrame:
        """Which model output scores which dataset label, and how (exact, case, alias), plus the
        outputs and labels that matched nothing — as the precompute recorded them."""
        cols = ["dataset", "model_id", "model_output", "dataset_label", "how"]
        if not self.has_table("label_matches"):
            return pd.DataFrame(columns=cols)
        where, params = _where(dataset=dataset, model_id=model_id)
        order = "CASE how WHEN 'unmatched label' THEN 1 ELSE 0 END, model_output, dataset_label"
        sql = (
            f"SELECT {', '.join(cols)} FROM label_matches{where} "
            f"ORDER BY dataset, model_id, {order}"
        )
        return self._df(sql, params)
