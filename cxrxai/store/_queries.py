"""Typed reads shared by the read-only :class:`Store` and the :class:`StoreWriter`.

Every method returns plain pandas/numpy/dataclass values; the SQL stays here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import StoreError, UnknownNameError
from ..models.spec import ModelSpec
from ..models.stored import ModelIdentity
from ..models.thresholds import decision_sql
from ._audit import AuditQueries
from ._metric_tables import MetricTableQueries
from ._roots import with_resolved_paths
from ._schema import TABLES
from ._settings import main_settings
from ._sql import where as _where

__all__ = ["Queries", "StoredMap"]

_GROUPABLE = ("dataset", "split", "sex", "age_bin", "view")


@dataclass(frozen=True)
class StoredMap:
    """A saliency map as stored: native-resolution values plus how they were made."""

    model_id: str
    image_id: str
    label: str
    method: str
    params: dict
    target: str
    kind: str
    values: np.ndarray  # (height, width) float32
    seconds: float | None
    device: str | None


_IMAGE_COLUMNS = (
    "image_id",
    "dataset",
    "path",
    "generator_key",
    "patient_id",
    "sex",
    "age",
    "age_bin",
    "view",
    "split",
    "width",
    "height",
    "sex_source",
    "age_source",
    "view_source",
    "decode_note",
)


class Queries(MetricTableQueries, AuditQueries):
    """Read methods (the data audit's in :class:`AuditQueries`); subclasses provide ``_cursor()`` (a context
    manager yielding a cursor)."""

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
        rows = self._rows("SELECT value FROM meta WHERE key = ?", [key]) if self.has_table("meta") else []
        return rows[0][0] if rows else default

    def schema_version(self) -> int:
        return int(self.meta("schema_version", "0"))

    def table_counts(self) -> dict[str, int]:
        return {t: int(self._rows(f"SELECT count(*) FROM {t}")[0][0]) for t in TABLES if self.has_table(t)}

    def info(self) -> dict:
        """Counts per table, datasets, models, labels and explainers: what the store holds."""
        counts = self.table_counts()
        datasets = self.datasets()
        models = self.models()
        explainers = self._explainers(counts)
        labels = sorted({str(lab) for labs in datasets.get("labels", []) if labs is not None for lab in labs})
        return {
            "schema_version": self.schema_version(),
            "built_at": self.meta("built_at"),
            "counts": counts,
            "datasets": datasets[["dataset", "source"]].to_dict("records") if len(datasets) else [],
            "models": (models[["model_id", "arch", "weights_sha256"]].to_dict("records") if len(models)
                       else []),
            "labels": labels,
            "explainers": explainers,
            "problems": self.problem_counts().to_dict("records"),
        }

    def _explainers(self, counts: dict[str, int]) -> list[str]:
        """Every explainer with stored maps or scored rows (a build may score a map and not keep it)."""
        parts = ["SELECT method FROM maps"] if counts.get("maps") else []
        if counts.get("localization") and "source" in self._columns("localization"):
            parts.append("SELECT method FROM localization WHERE source = 'explainer'")
        return self._df(" UNION ".join(parts) + " ORDER BY method")["method"].tolist() if parts else []

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
        return self._df("SELECT dataset, stage, count(*) AS n FROM problems GROUP BY ALL ORDER BY ALL", [])

    def label_matches(self, *, dataset: str | None = None, model_id: str | None = None) -> pd.DataFrame:
        """Which model output scores which dataset label, and how (exact, case, alias), plus the
        outputs and labels that matched nothing — as the precompute recorded them."""
        cols = ["dataset", "model_id", "model_output", "dataset_label", "how"]
        if not self.has_table("label_matches"):
            return pd.DataFrame(columns=cols)
        where, params = _where(dataset=dataset, model_id=model_id)
        order = "CASE how WHEN 'unmatched label' THEN 1 ELSE 0 END, model_output, dataset_label"
        sql = f"SELECT {', '.join(cols)} FROM label_matches{where} ORDER BY dataset, model_id, {order}"
        return self._df(sql, params)

    # ------------------------------------------------------------------ cases
    def datasets(self) -> pd.DataFrame:
        """Rows of ``datasets``; ``root`` absolute (see :func:`~cxrxai.store._roots.with_resolved_paths`)."""
        if not self.has_table("datasets"):
            return pd.DataFrame()
        return with_resolved_paths(self._df("SELECT * FROM datasets ORDER BY dataset"), "root", self.path)

    def images(self, *, dataset: str | None = None, split: str | None = None,
               image_ids: Iterable[str] | None = None, columns: Iterable[str] | None = None) -> pd.DataFrame:
        """Rows of the images table (``columns``: only these, ``image_id`` first)."""
        where, params = _where(dataset=dataset, split=split)
        cols = "*"
        if columns is not None:
            known = [c for c in ("image_id", *columns) if c in _IMAGE_COLUMNS]
            unknown = sorted(set(columns) - set(_IMAGE_COLUMNS))
            if unknown:
                raise UnknownNameError("images column", unknown[0], _IMAGE_COLUMNS)
            cols = ", ".join(dict.fromkeys(known))
        if image_ids is not None:
            ids = list(image_ids)
            # a hash semi-join: list_contains would scan the list once per image (37 k × 377 k here)
            where += (" AND " if where else " WHERE ") + "image_id IN (SELECT unnest(?::VARCHAR[]))"
            params.append(ids)
        return self._df(f"SELECT {cols} FROM images{where} ORDER BY image_id", params)

    def image(self, image_id: str) -> dict:
        df = self._df("SELECT * FROM images WHERE image_id = ?", [image_id])
        if df.empty:
            raise StoreError(f"no image {image_id!r} in the store")
        return df.iloc[0].to_dict()

    def image_counts(self, by: Iterable[str], *, dataset: str | None = None) -> pd.DataFrame:
        """Number of images per combination of ``by`` columns (split, sex, age_bin, view...)."""
        cols = list(by)
        for c in cols:
            if c not in _GROUPABLE:
                raise UnknownNameError("grouping column", c, _GROUPABLE)
        where, params = _where(dataset=dataset)
        group = ", ".join(cols)
        return self._df(f"SELECT {group}, count(*) AS n FROM images{where} GROUP BY ALL ORDER BY ALL", params)

    def label_counts(self, *, dataset: str | None = None) -> pd.DataFrame:
        """Positives, negatives and unknowns per label and split."""
        where, params = _where(prefix="i.", dataset=dataset)
        return self._df(
            f"""SELECT i.split, l.label, count(*) FILTER (l.value = 1) AS positive,
                       count(*) FILTER (l.value = 0) AS negative, count(*) FILTER (l.value IS NULL) AS unknown
                FROM labels l JOIN images i USING (image_id){where} GROUP BY ALL ORDER BY ALL""",
            params,
        )

    def labels_wide(self, *, dataset: str | None = None) -> pd.DataFrame:
        """Image × label matrix of 1 / 0 / NaN, indexed by image_id."""
        where, params = _where(prefix="i.", dataset=dataset)
        long = self._df(f"SELECT l.* FROM labels l JOIN images i USING (image_id){where}", params)
        if long.empty:
            return pd.DataFrame()
        return long.pivot(index="image_id", columns="label", values="value").astype(float)

    def annotations(self, *, image_id: str | None = None, label: str | None = None,
                    reader: str | None = None) -> pd.DataFrame:
        where, params = _where(image_id=image_id, label=label, reader=reader)
        return self._df(
            f"SELECT * FROM annotations{where} ORDER BY image_id, label, reader, instance", params
        )

    def annotation_readers(self) -> pd.DataFrame:
        """dataset, reader, n (annotation rows): who drew each dataset's annotations (one aggregate query)."""
        if not self.has_table("annotations"):
            return pd.DataFrame(columns=["dataset", "reader", "n"])
        return self._df("SELECT i.dataset, a.reader, count(*) AS n FROM annotations a "
                        "JOIN images i USING (image_id) GROUP BY ALL ORDER BY ALL", [])

    # ------------------------------------------------------------------ models
    def models(self) -> pd.DataFrame:
        """Rows of ``models``; ``weights_path`` absolute (as :meth:`datasets`' ``root``)."""
        if not self.has_table("models"):
            return pd.DataFrame()
        found = self._df("SELECT * FROM models ORDER BY model_id")
        return with_resolved_paths(found, "weights_path", self.path)

    def model_identity(self, model_id: str) -> ModelIdentity:
        """Who model ``model_id`` is: the sha256 of its weights (column ``weights_sha256``) and their file."""
        models = self.models()
        found = models[models["model_id"] == model_id] if len(models) else models
        if found.empty:
            raise UnknownNameError("model", model_id, models.get("model_id", pd.Series()).tolist())
        return ModelIdentity.of(model_id, found["weights_sha256"].iloc[0], found["weights_path"].iloc[0])

    def model_spec(self, model_id: str) -> ModelSpec:
        rows = self._rows("SELECT spec FROM models WHERE model_id = ?", [model_id])
        if not rows:
            raise UnknownNameError("model", model_id, self.models().get("model_id", pd.Series()).tolist())
        return ModelSpec.from_json(rows[0][0])

    def predictions(self, model_id: str, *, split: str | None = None) -> pd.DataFrame:
        where, params = _where(prefix="i.", split=split)
        where += (" AND " if where else " WHERE ") + "p.model_id = ?"
        params.append(model_id)
        return self._df(
            f"SELECT p.image_id, p.label, p.logit, p.prob FROM predictions p JOIN images i USING (image_id)"
            f"{where} ORDER BY p.image_id, p.label",
            params,
        )

    def predicted_image_ids(self, model_id: str) -> set[str]:
        return {
            r[0]
            for r in self._rows("SELECT DISTINCT image_id FROM predictions WHERE model_id = ?", [model_id])
        }

    def predicted_labels(self, model_id: str) -> set[str]:
        """The labels ``model_id`` has predictions under."""
        rows = self._rows("SELECT DISTINCT label FROM predictions WHERE model_id = ?", [model_id])
        return {r[0] for r in rows}

    def prediction_splits(self, model_id: str) -> dict[str, int]:
        """Images with a prediction of ``model_id``, per split (a missing split reads "none")."""
        rows = self._rows(
            "SELECT coalesce(i.split, 'none'), count(*) FROM images i SEMI JOIN (SELECT image_id FROM "
            "predictions WHERE model_id = ?) p USING (image_id) GROUP BY ALL ORDER BY ALL",
            [model_id],
        )
        return {str(split): int(n) for split, n in rows}

    def thresholds(self, model_id: str) -> pd.DataFrame:
        return self._df("SELECT * FROM thresholds WHERE model_id = ? ORDER BY label", [model_id])

    def prediction_table(self, model_id: str, *, split: str | None = None) -> pd.DataFrame:
        """One row per image × label: demographics, probability, threshold, truth, decision.

        ``ground_truth`` is 1/0 or missing (unknown label); ``predicted`` is the decision rule
        (:func:`~cxrxai.models.thresholds.decision_sql`: ``prob >= threshold``, missing when the
        label has no threshold).
        """
        where, params = _where(prefix="i.", split=split)
        where += (" AND " if where else " WHERE ") + "p.model_id = ?"
        params.append(model_id)
        return self._arrow_df(
            f"""SELECT p.image_id, i.dataset, i.split, i.patient_id, i.sex, i.age, i.age_bin, i.view,
                       p.label, p.prob, p.logit, t.threshold, l.value AS ground_truth,
                       {decision_sql("p.prob", "t.threshold")} AS predicted
                FROM predictions p
                JOIN images i USING (image_id)
                LEFT JOIN thresholds t ON t.model_id = p.model_id AND t.label = p.label
                LEFT JOIN labels l ON l.image_id = p.image_id AND l.label = p.label
                {where} ORDER BY p.image_id, p.label""",
            params,
        )

    # ------------------------------------------------------------------ maps
    def stored_methods(self, model_id: str) -> list[str]:
        """The explainers with stored maps for ``model_id`` (one query, whatever the number of maps)."""
        if not self.has_table("maps"):
            return []
        return sorted(
            r[0] for r in self._rows("SELECT DISTINCT method FROM maps WHERE model_id = ?", [model_id])
        )

    def map_settings(self, model_id: str, *, method: str | None = None) -> pd.DataFrame:
        """Explainer settings with stored maps for ``model_id``: method, params_key, n (maps),
        most maps first (one aggregate query)."""
        if not self.has_table("maps"):
            return pd.DataFrame(columns=["method", "params_key", "n"])
        where, params = _where(model_id=model_id, method=method)
        return self._df(f"SELECT method, params_key, count(*) AS n FROM maps{where} GROUP BY ALL "
                        "ORDER BY n DESC, method, params_key", params)

    def default_settings(self, model_id: str) -> dict[str, str]:
        """Each explainer's default setting (params_key) for ``model_id``, as the map stages recorded
        it; empty for a store built before they did (the analyses then take the most stored)."""
        return json.loads(self.meta(f"default_settings:{model_id}", "{}"))

    def main_map_settings(self, model_id: str, *, method: str | None = None) -> pd.DataFrame:
        """:meth:`map_settings` cut to the setting the analyses score per method (see
        :func:`~cxrxai.store.main_settings`)."""
        return main_settings(self.map_settings(model_id, method=method), self.default_settings(model_id))

    def map_index(self, *, model_id: str | None = None, image_id: str | None = None,
                  label: str | None = None, method: str | None = None) -> pd.DataFrame:
        """Which maps exist (no values): model, image, label, method, parameters, seconds, device and
        (schema v7 on) ``timing``, the clock the seconds were read from."""
        if not self.has_table("maps"):
            return pd.DataFrame()
        where, params = _where(model_id=model_id, image_id=image_id, label=label, method=method)
        return self._df(f'SELECT * EXCLUDE ("values", created_at) FROM maps{where} ORDER BY ALL', params)

    def get_map(
        self, model_id: str, image_id: str, label: str, method: str, params_key: str
    ) -> StoredMap | None:
        rows = self._rows(
            """SELECT params, target, kind, height, width, "values", seconds, device FROM maps
               WHERE model_id = ? AND image_id = ? AND label = ? AND method = ? AND params_key = ?""",
            [model_id, image_id, label, method, params_key],
        )
        if not rows:
            return None
        params, target, kind, h, w, values, seconds, device = rows[0]
        arr = np.asarray(values, np.float32).reshape(h, w)
        return StoredMap(
            model_id, image_id, label, method, json.loads(params), target, kind, arr, seconds, device
        )

    def iter_maps(
        self, model_id: str, method: str, params_key: str, *, batch: int = 256
    ) -> Iterator[StoredMap]:
        """All maps of one method and parameter set, streamed in batches."""
        keys = self._rows(
            "SELECT image_id, label FROM maps WHERE model_id = ? AND method = ? AND params_key = ? "
            "ORDER BY ALL",
            [model_id, method, params_key],
        )
        for start in range(0, len(keys), batch):
            chunk = keys[start:start + batch]
            df = self._df(
                """SELECT image_id, label, params, target, kind, height, width, "values", seconds, device
                   FROM maps
                   WHERE model_id = ? AND method = ? AND params_key = ? AND list_contains(?, image_id)""",
                [model_id, method, params_key, sorted({k[0] for k in chunk})],
            )
            for r in df.itertuples(index=False):
                arr = np.asarray(r.values, np.float32).reshape(r.height, r.width)
                yield StoredMap(model_id, r.image_id, r.label, method, json.loads(r.params), r.target, r.kind,
                                arr, r.seconds, r.device)

