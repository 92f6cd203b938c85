"""What a build records about its own doings: problem rows (what was dropped, changed or left
out, and why) and label matches (which model output scores which dataset label, and how).

Kept apart from :mod:`._writer`'s table writers: these rows are the "never silently wrong"
ledger the Overview and ``info`` read, and they are replaced or deduplicated by their own rules.
"""

from __future__ import annotations

import pandas as pd

from ..errors import StoreError
from ..labels import MATCH_KINDS

__all__ = ["RecordWriter"]


class RecordWriter:
    """Mixed into :class:`~cxrxai.store.StoreWriter` (uses its ``_con``)."""

    def put_problems(self, df: pd.DataFrame) -> int:
        """Append problem rows (dataset, stage, file, row, image_id, problem) that are not stored
        yet — the same row twice (a re-run of the same precompute) is kept once; returns how
        many were new. ``dataset``, ``stage`` and ``problem`` are required."""
        cols = ["dataset", "stage", "file", "row", "image_id", "problem"]
        if df.empty:
            return 0
        missing = [c for c in ("dataset", "stage", "problem") if c not in df.columns]
        if missing:
            raise StoreError(f"cannot write problems: missing columns {missing}")
        rows = df.reindex(columns=cols).astype(object).where(lambda d: d.notna(), None)
        rows["row"] = [None if r is None else int(r) for r in rows["row"]]
        rows = rows.astype({c: "string" for c in cols if c != "row"}).astype({"row": "Int64"})
        count = 'SELECT count(*) FROM problems'
        before = self._con.execute(count).fetchall()[0][0]
        select = 'SELECT dataset, stage, file, "row", image_id, problem FROM'
        self._con.register("_incoming", rows)
        try:
            self._con.execute(f'INSERT INTO problems (dataset, stage, file, "row", image_id, problem) '
                              f"{select} _incoming EXCEPT {select} problems")
        finally:
            self._con.unregister("_incoming")
        return self._con.execute(count).fetchall()[0][0] - before

    def put_label_matches(self, dataset: str, model_id: str, rows: list[dict]) -> int:
        """Replace the label matches of ``model_id`` on ``dataset`` with ``rows`` (``model_output``,
        ``dataset_label``, ``how`` — see :meth:`cxrxai.labels.LabelMatch.rows`); returns the count."""
        df = pd.DataFrame(rows, columns=["model_output", "dataset_label", "how"]).astype(object)
        bad = sorted(set(df["how"]) - set(MATCH_KINDS))
        if bad:
            raise StoreError(f"label match kind {bad[0]!r} is not one of {', '.join(MATCH_KINDS)}; "
                             "nothing was written")
        df = df.where(df.notna(), None).assign(dataset=dataset, model_id=model_id)
        self._con.execute("DELETE FROM label_matches WHERE dataset = ? AND model_id = ?", [dataset, model_id])
        if df.empty:
            return 0
        self._con.register("_incoming", df)
        try:
            cols = "dataset, model_id, model_output, dataset_label, how"
            self._con.execute(f"INSERT INTO label_matches ({cols}) SELECT {cols} FROM _incoming")
        finally:
            self._con.unregister("_incoming")
        return len(df)
