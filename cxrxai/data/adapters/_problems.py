"""The problem ledger an adapter fills while it reads: each bad row (or note about a whole file)
with what was done about it, so a precompute reports what it left out instead of aborting."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...errors import DataError

__all__ = ["Problems"]


class Problems:
    """Collects bad rows, each with what was done about it; raises the first one in strict mode.

    ``action`` is appended to the message: ``"image skipped"`` (the default: the image leaves the
    dataset, see :meth:`skipped`), ``"annotation skipped"`` or ``"age set to missing"`` (the
    image stays).
    """

    SKIP_IMAGE = "image skipped"

    def __init__(self, strict: bool):
        self.strict = strict
        self.rows: list[dict] = []
        self._skipped: set[str] = set()

    def add(self, file: str | Path, row: int | None, image_id: str | None, problem: str, *,
            action: str = SKIP_IMAGE) -> None:
        where = f"{Path(file).name}" + (f", row {row}" if row is not None else "")
        if self.strict:
            raise DataError(f"{where}: {problem}" + (f" (image {image_id})" if image_id else ""))
        self.rows.append(
            {"file": str(file), "row": row, "image_id": image_id, "problem": f"{problem}; {action}"}
        )
        if action == self.SKIP_IMAGE and image_id is not None:
            self._skipped.add(str(image_id))

    def note(self, file: str | Path, problem: str, *, action: str | None = None) -> None:
        """A row about the whole file, not a bad row: what an option or a missing companion file
        left out or left missing, or what changed how the file was read (a delimiter other than a
        comma). Never raises, even in strict mode: nothing in the data is wrong."""
        self.rows.append({
            "file": str(file),
            "row": None,
            "image_id": None,
            "problem": problem if action is None else f"{problem}; {action}",
        })

    def skipped(self) -> set[str]:
        """Image ids whose problem removes the image from the dataset."""
        return set(self._skipped)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["file", "row", "image_id", "problem"])
