"""Reads of the stored saliency maps: which exist, under which explainer settings, and their
native-resolution values (:class:`StoredMap`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._settings import main_settings
from ._sql import where as _where

__all__ = ["MapQueries", "StoredMap"]


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


class MapQueries:
    """Mixed into :class:`~cxrxai.store._queries.Queries` (uses its ``_df``, ``_rows``,
    ``has_table``, ``meta``)."""

    def stored_methods(self, model_id: str) -> list[str]:
        """The explainers with stored maps for ``model_id`` (one query, whatever the number of
        maps)."""
        if not self.has_table("maps"):
            return []
        rows = self._rows("SELECT DISTINCT method FROM maps WHERE model_id = ?", [model_id])
        return sorted(r[0] for r in rows)

    def map_settings(self, model_id: str, *, method: str | None = None) -> pd.DataFrame:
        """Explainer settings with stored maps for ``model_id``: method, params_key, n (maps),
        most maps first (one aggregate query)."""
        if not self.has_table("maps"):
            return pd.DataFrame(columns=["method", "params_key", "n"])
        where, params = _where(model_id=model_id, method=method)
        return self._df(
            f"SELECT method, params_key, count(*) AS n FROM maps{where} GROUP BY ALL "
            "ORDER BY n DESC, method, params_key",
            params,
        )

    def default_settings(self, model_id: str) -> dict[str, str]:
        """Each explainer's default setting (params_key) for ``model_id``, as the map stages
        recorded it; empty for a store built before they did (the analyses then take the most
        stored)."""
        return json.loads(self.meta(f"default_settings:{model_id}", "{}"))

    def main_map_settings(self, model_id: str, *, method: str | None = None) -> pd.DataFrame:
        """:meth:`map_settings` cut to the setting the analyses score per method (see
        :func:`~cxrxai.store.main_settings`)."""
        stored = self.map_settings(model_id, method=method)
        return main_settings(stored, self.default_settings(model_id))

    def map_index(self, *, model_id: str | None = None, image_id: str | None = None,
                  label: str | None = None, method: str | None = None) -> pd.DataFrame:
        """Which maps exist (no values): model, image, label, method, parameters, seconds, device
        and (schema v7 on) ``timing``, the clock the seconds were read from."""
        if not self.has_table("maps"):
            return pd.DataFrame()
        where, params = _where(model_id=model_id, image_id=image_id, label=label, method=method)
        return self._df(
            f'SELECT * EXCLUDE ("values", created_at) FROM maps{where} ORDER BY ALL', params
        )

    def get_map(
        self, model_id: str, image_id: str, label: str, method: str, params_key: str
    ) -> StoredMap | None:
        rows = self._rows(
            """SELECT params, target, kind, height, width, "values", seconds, device FROM maps
               WHERE model_id = ? AND image_id = ? AND label = ? AND method = ?
                 AND params_key = ?""",
            [model_id, image_id, label, method, params_key],
        )
        if not rows:
            return None
        params, target, kind, h, w, values, seconds, device = rows[0]
        arr = np.asarray(values, np.float32).reshape(h, w)
        return StoredMap(
            model_id,
            image_id,
            label,
            method,
            json.loads(params),
            target,
            kind,
            arr,
            seconds,
            device,
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
                """SELECT image_id, label, params, target, kind, height, width, "values", seconds,
                          device
                   FROM maps
                   WHERE model_id = ? AND method = ? AND params_key = ?
                     AND list_contains(?, image_id)""",
                [model_id, method, params_key, sorted({k[0] for k in chunk})],
            )
            for r in df.itertuples(index=False):
                arr = np.asarray(r.values, np.float32).reshape(r.height, r.width)
                yield StoredMap(
                    model_id,
                    r.image_id,
                    r.label,
                    method,
                    json.loads(r.params),
                    r.target,
                    r.kind,
                    arr,
                    r.seconds,
                    r.device,
                )
