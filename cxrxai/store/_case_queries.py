"""Reads of the cases: datasets, images, labels and annotations, in the one case schema every
adapter maps onto (:mod:`cxrxai.data.adapters`)."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from ..errors import StoreError, UnknownNameError
from ._roots import with_resolved_paths
from ._sql import where as _where

__all__ = ["CaseQueries"]

_GROUPABLE = ("dataset", "split", "sex", "age_bin", "view", "race", "insurance")

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
    "race",
    "insurance",
    "race_source",
    "insurance_source",
)


class CaseQueries:
    """Mixed into :class:`~cxrxai.store._queries.Queries` (uses its ``_df``, ``has_table``)."""

    def datasets(self) -> pd.DataFrame:
        """Rows of ``datasets``; ``root`` absolute (see
        :func:`~cxrxai.store._roots.with_resolved_paths`)."""
        if not self.has_table("datasets"):
            return pd.DataFrame()
        found = self._df("SELECT * FROM datasets ORDER BY dataset")
        return with_resolved_paths(found, "root", self.path)

    def images(self, *, dataset: str | None = None, split: str | None = None,
               image_ids: Iterable[str] | None = None,
               columns: Iterable[str] | None = None) -> pd.DataFrame:
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
            # a hash semi-join: list_contains would scan the list once per image (37 k × 377 k
            # here)
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
        return self._df(
            f"SELECT {group}, count(*) AS n FROM images{where} GROUP BY ALL ORDER BY ALL", params
        )

    def label_counts(self, *, dataset: str | None = None) -> pd.DataFrame:
        """Positives, negatives and unknowns per label and split."""
        where, params = _where(prefix="i.", dataset=dataset)
        return self._df(
            f"""SELECT i.split, l.label,
                       count(*) FILTER (l.value = 1) AS positive,
                       count(*) FILTER (l.value = 0) AS negative,
                       count(*) FILTER (l.value IS NULL) AS unknown
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
        """dataset, reader, n (annotation rows): who drew each dataset's annotations (one aggregate
        query)."""
        if not self.has_table("annotations"):
            return pd.DataFrame(columns=["dataset", "reader", "n"])
        return self._df(
            "SELECT i.dataset, a.reader, count(*) AS n FROM annotations a "
            "JOIN images i USING (image_id) GROUP BY ALL ORDER BY ALL",
            [],
        )
