"""Typed reads for the data audit (``audit-data``, the Overview's Data section): what the tool
did to each dataset's files, where each demographic value came from, which model output scores
which dataset label. Mixed into :class:`~cxrxai.store._queries.Queries`; the SQL stays here.

Stores older than schema v5 lack the provenance columns and ``label_matches``:
:meth:`AuditQueries.images_have` tells the caller, and the methods that need them raise
:class:`~cxrxai.errors.StoreError` saying so instead of a DuckDB binder error.
"""

from __future__ import annotations

import pandas as pd

from ..errors import StoreError
from ..labels import ADMISSION_FIELDS

__all__ = ["PROVENANCE_COLUMNS", "AuditQueries"]

#: The image columns schema v5 added: where sex, age and view came from, what the film reader did.
PROVENANCE_COLUMNS = ("sex_source", "age_source", "view_source", "decode_note")
_FIELDS = ("sex", "age", "view")


class AuditQueries:
    """Audit reads; the class that mixes it in provides ``_df``, ``_rows`` and ``has_table``."""

    def table_columns(self, table: str) -> list[str]:
        """The columns of ``table`` in the store, in schema order (empty when it has no such table)."""
        return [r[0] for r in self._rows(
            "SELECT column_name FROM information_schema.columns WHERE table_catalog = current_database() "
            "AND table_name = ? ORDER BY ordinal_position", [table])]

    def images_have(self, columns) -> bool:
        """Whether the images table has every one of ``columns`` (False for a store before they existed)."""
        return set(columns) <= set(self.table_columns("images"))

    def _need(self, columns, what: str) -> None:
        if not self.images_have(columns):
            raise StoreError(f"this store (schema v{self.schema_version()}) has no {what} (image columns "
                             f"{', '.join(columns)}, schema v5); re-run precompute to record them")

    def audit_image_count(self, dataset: str) -> int:
        """Images of ``dataset`` in the store."""
        return int(self._rows("SELECT count(*) FROM images WHERE dataset = ?", [dataset])[0][0])

    def demographic_fields(self) -> tuple[str, ...]:
        """The demographics the images table holds: sex, age, view, and race and insurance in a
        store of schema v8 on."""
        return _FIELDS + (ADMISSION_FIELDS if self.images_have(ADMISSION_FIELDS) else ())

    def demographic_sources(self, dataset: str) -> pd.DataFrame:
        """Images of ``dataset`` per (field, source, known): field one of :meth:`demographic_fields`;
        ``known`` whether the value is there; ``source`` its recorded origin (``csv:<file>``,
        ``dicom:<Tag>``, ``derived:<rule>``), missing when none was recorded — and for every
        image of a store older than schema v5, which has no source columns."""
        fields = self.demographic_fields()
        have = self.images_have(f"{f}_source" for f in fields)
        parts = [f"SELECT '{f}' AS field, {f'{f}_source' if have else 'NULL::VARCHAR'} AS source, "
                 f"{f} IS NOT NULL AS known, count(*) AS n FROM images WHERE dataset = ? GROUP BY ALL"
                 for f in fields]
        return self._df(" UNION ALL ".join(parts) + " ORDER BY field, known DESC, n DESC, source",
                        [dataset] * len(fields))

    def demographic_values(self, dataset: str, field: str) -> pd.Series:
        """Each recorded ``field`` value of ``dataset``'s images, once per image (missing left out);
        ``field`` one of :meth:`demographic_fields`."""
        if field not in self.demographic_fields():
            raise StoreError(f"this store's images have no column {field!r}; they have "
                             f"{', '.join(self.demographic_fields())}")
        rows = self._df(f"SELECT {field} AS value FROM images WHERE dataset = ? AND {field} IS NOT NULL",
                        [dataset])
        return rows["value"]

    def decode_notes(self, dataset: str) -> pd.DataFrame:
        """Images of ``dataset`` per ``decode_note`` (what the film reader did; missing: nothing
        recorded), most frequent first. Needs schema v5."""
        self._need(("decode_note",), "film reader notes")
        return self._df("SELECT decode_note AS note, count(*) AS n FROM images WHERE dataset = ? "
                        "GROUP BY ALL ORDER BY n DESC, note NULLS FIRST", [dataset])

    def split_sizes(self, dataset: str) -> pd.DataFrame:
        """Images of ``dataset`` per split (a missing split reads 'none')."""
        return self._df("SELECT coalesce(split, 'none') AS split, count(*) AS n FROM images "
                        "WHERE dataset = ? GROUP BY ALL ORDER BY split", [dataset])

    def predicted_per_split(self, dataset: str) -> pd.DataFrame:
        """Images of ``dataset`` with a prediction, per model and split (model_id, split, n)."""
        if not self.has_table("predictions"):
            return pd.DataFrame(columns=["model_id", "split", "n"])
        return self._df(
            "SELECT p.model_id, coalesce(i.split, 'none') AS split, count(*) AS n FROM images i JOIN "
            "(SELECT DISTINCT model_id, image_id FROM predictions) p USING (image_id) WHERE i.dataset = ? "
            "GROUP BY ALL ORDER BY ALL", [dataset])

    def problem_splits(self, dataset: str) -> pd.DataFrame:
        """Problem rows of ``dataset`` with the split of their image (missing when the image is not
        in the images table, e.g. a row the adapter left out): the problems columns + split."""
        if not self.has_table("problems"):
            return pd.DataFrame(columns=["dataset", "stage", "file", "row", "image_id", "problem", "split"])
        return self._df(
            'SELECT p.*, i.split FROM problems p LEFT JOIN images i ON i.image_id = p.image_id AND '
            'i.dataset = p.dataset WHERE p.dataset = ? '
            'ORDER BY p.stage, p.file, p."row", p.image_id, p.problem',
            [dataset])
