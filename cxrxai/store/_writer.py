"""Writing a store without ever disturbing its readers.

DuckDB allows one writer process and then refuses other opens, so writers never touch the
published file. :func:`write_store` takes an exclusive lock (``PATH.lock``), copies the published
store to ``PATH.staging``, writes there, and :meth:`StoreWriter.publish` swaps a complete,
checkpointed copy into place with ``os.replace`` (atomic on POSIX). An interrupted or failed write
leaves the last published store exactly as it was; a second concurrent writer gets a
:class:`StoreError` at once. Readers (:mod:`._reader`) reopen when they see the new version.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from ..errors import SchemaVersionError, StoreError
from ..models.spec import ModelSpec
from ._metric_writes import MetricTableWriter
from ._queries import Queries
from ._records import RecordWriter
from ._schema import MIGRATIONS, SCHEMA_VERSION
from ._staging import clear_leftovers, copy_to_staging, release_lock, take_lock

__all__ = ["StoreWriter", "params_key", "write_store"]

_IMAGE_COLUMNS = [
    "image_id", "dataset", "path", "generator_key", "patient_id", "sex", "age", "age_bin", "view",
    "split", "width", "height", "sex_source", "age_source", "view_source", "decode_note",
    "race", "insurance", "race_source", "insurance_source",
]
_ANNOTATION_COLUMNS = [
    "image_id", "label", "reader", "instance", "kind", "x", "y", "w", "h",
    "mask_rle", "mask_height", "mask_width",
]


class StoreWriter(MetricTableWriter, RecordWriter, Queries):
    """Writes to the staging copy; obtain one from :func:`write_store`."""

    def __init__(self, path: Path, staging: Path):
        self.path = path
        self.staging = staging
        try:
            self._con = duckdb.connect(str(staging))
            self._migrate()
        except duckdb.Error as err:
            raise StoreError(
                f"cannot open {path} as a DuckDB store to write ({type(err).__name__}: {err}); "
                "the file was left as it is — restore it from a copy or write a new store"
            ) from None

    @contextmanager
    def _cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        yield self._con

    def _migrate(self) -> None:
        version = self.schema_version() if self.has_table("meta") else 0
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.path} has schema version {version}; this cxrxai writes ≤ {SCHEMA_VERSION}"
            )
        for v in range(version + 1, SCHEMA_VERSION + 1):
            self._con.execute("BEGIN")
            for ddl in MIGRATIONS[v]:
                self._con.execute(ddl)
            self._con.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(v)]
            )
            self._con.execute("COMMIT")

    # ------------------------------------------------------------------ writes
    def set_meta(self, key: str, value: str) -> None:
        self._con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, value])

    def _upsert(self, table: str, df: pd.DataFrame, columns: list[str]) -> int:
        if df.empty:
            return 0
        missing = [c for c in columns if c not in df.columns]
        if missing:
            raise StoreError(f"cannot write {table}: missing columns {missing}")
        cols = ", ".join(f'"{c}"' for c in columns)
        self._con.register("_incoming", df[columns])
        try:
            self._con.execute(
                f"INSERT OR REPLACE INTO {table} ({cols}) SELECT {cols} FROM _incoming"
            )
        finally:
            self._con.unregister("_incoming")
        return len(df)

    def put_dataset(self, dataset: str, *, source: str, labels: list[str],
                    root: str | None = None, description: str | None = None,
                    config: dict | None = None) -> None:
        self._con.execute(
            "INSERT OR REPLACE INTO datasets (dataset, source, root, description, labels, config) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                dataset,
                source,
                root,
                description,
                list(labels),
                json.dumps(config) if config is not None else None,
            ],
        )

    def put_images(self, df: pd.DataFrame) -> int:
        """Rows of the images table, replacing those of the same image id.

        An image id that already belongs to another dataset is a :class:`StoreError` (nothing
        written): the row would move that image, and with it its labels, boxes and predictions
        (keyed by image id), to this dataset.
        """
        if not df.empty:
            self._refuse_other_datasets(df)
        return self._upsert("images", df.reindex(columns=_IMAGE_COLUMNS), _IMAGE_COLUMNS)

    def _refuse_other_datasets(self, df: pd.DataFrame) -> None:
        self._con.register("_incoming_ids", df[["image_id", "dataset"]])
        try:
            clash = self._con.execute(
                "SELECT i.dataset AS stored, n.dataset AS new, count(*) AS n, "
                "min(i.image_id) AS first "
                "FROM images i JOIN _incoming_ids n USING (image_id) "
                "WHERE i.dataset <> n.dataset GROUP BY ALL"
            ).df()
        finally:
            self._con.unregister("_incoming_ids")
        if len(clash):
            c = clash.iloc[0]
            raise StoreError(
                f"{int(c.n):,} image id(s) of dataset {c.new!r} already belong to dataset "
                f"{c.stored!r} in {self.path} (first: {c.first!r}); writing them would move "
                f"those images, with their labels, boxes and predictions, from {c.stored!r} to "
                f"{c.new!r}. Nothing was written: give this dataset image ids of its own (the "
                "folder CSV's image_id column), or write it to another --store"
            )

    def put_labels(self, df: pd.DataFrame) -> int:
        """Long table image_id, label, value (1, 0 or missing for unknown)."""
        return self._upsert("labels", df.astype({"value": "Int8"}), ["image_id", "label", "value"])

    def put_annotations(self, df: pd.DataFrame) -> int:
        cols = _ANNOTATION_COLUMNS
        return self._upsert("annotations", df.reindex(columns=cols), cols)

    def put_model(self, spec: ModelSpec, *, weights_path: str | None = None) -> None:
        self._con.execute(
            """INSERT OR REPLACE INTO models (model_id, arch, labels, input_size, explained_output,
               spec, weights_path, weights_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
            [
                spec.name,
                spec.arch,
                list(spec.labels),
                spec.input_size,
                spec.explained_output,
                spec.to_json(),
                weights_path,
                spec.card.get("weights_sha256"),
            ],
        )

    def put_predictions(self, model_id: str, image_ids: list[str], labels: tuple[str, ...],
                        logits: np.ndarray, probs: np.ndarray) -> int:
        n, k = len(image_ids), len(labels)
        if logits.shape != (n, k) or probs.shape != (n, k):
            raise StoreError(
                f"predictions must be ({n}, {k}); got {logits.shape} and {probs.shape}"
            )
        df = pd.DataFrame({
            "model_id": model_id,
            "image_id": np.repeat(np.asarray(image_ids, dtype=object), k),
            "label": np.tile(np.asarray(labels, dtype=object), n),
            "logit": logits.astype(np.float32).ravel(),
            "prob": probs.astype(np.float32).ravel(),
        })
        return self._upsert("predictions", df, ["model_id", "image_id", "label", "logit", "prob"])

    def put_thresholds(self, model_id: str, rows: list[dict]) -> int:
        df = pd.DataFrame(rows).assign(model_id=model_id)
        return self._upsert(
            "thresholds", df, ["model_id", "label", "threshold", "method", "criterion", "split"]
        )

    def put_maps(self, rows: list[dict]) -> int:
        """Rows with model_id, image_id, label, method, params (dict), target, kind, values (2-D),
        seconds, timing (the clock ``seconds`` were read from: ``cpu``, ``wall``), device."""
        if not rows:
            return 0
        df = pd.DataFrame({
            "model_id": [r["model_id"] for r in rows],
            "image_id": [r["image_id"] for r in rows],
            "label": [r["label"] for r in rows],
            "method": [r["method"] for r in rows],
            "params_key": [params_key(r["params"]) for r in rows],
            "params": [json.dumps(r["params"], sort_keys=True) for r in rows],
            "target": [r["target"] for r in rows],
            "kind": [r["kind"] for r in rows],
            "height": [int(np.shape(r["values"])[0]) for r in rows],
            "width": [int(np.shape(r["values"])[1]) for r in rows],
            "values": [np.asarray(r["values"], np.float32).ravel() for r in rows],
            "seconds": [r.get("seconds") for r in rows],
            "timing": [r.get("timing") for r in rows],
            "device": [r.get("device") for r in rows],
        })
        return self._upsert("maps", df, list(df.columns))

    # ------------------------------------------------------------------ publishing
    def publish(self) -> None:
        """Make everything written so far visible to readers, atomically."""
        self.set_meta("built_at", datetime.now(UTC).isoformat(timespec="seconds"))
        self._con.execute("CHECKPOINT")
        tmp = self.path.with_name(f"{self.path.name}.publish-{os.getpid()}")
        self._con.close()
        try:
            shutil.copyfile(self.staging, tmp)
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
            _fsync_dir(self.path.parent)
        finally:
            if tmp.exists():
                tmp.unlink()
            self._con = duckdb.connect(str(self.staging))

    def close(self) -> None:
        self._con.close()


def params_key(params: dict) -> str:
    """Canonical text key of a parameter dict (sorted keys, compact JSON)."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


@contextmanager
def write_store(path: str | Path, *, fresh: bool = False) -> Iterator[StoreWriter]:
    """Open ``path`` for writing through a staging copy; publish on success.

    ``fresh=True`` starts from an empty store (the published one stays until the first publish).
    Raises :class:`StoreError` if another process is writing the same store, or the store's
    folder cannot hold the writer's files (``_staging``).
    """
    path = Path(path)
    # StoreError: another writer, or a folder that cannot hold the staging files
    lock = take_lock(path)
    staging = path.with_name(path.name + ".staging")
    clear_leftovers(path, staging)
    writer = None
    try:
        if path.exists() and not fresh:
            copy_to_staging(path, staging)
        writer = StoreWriter(path, staging)
        yield writer
        writer.publish()
    finally:
        if writer is not None:
            writer.close()
        for leftover in (staging, staging.with_name(staging.name + ".wal")):
            leftover.unlink(missing_ok=True)
        release_lock(lock)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
