"""Small SQL text helpers shared by the store's read and write methods."""

from __future__ import annotations

__all__ = ["quoted", "where"]


def where(prefix: str = "", **filters) -> tuple[str, list]:
    """``(" WHERE a = ? AND ...", [values])`` of the filters that are not None."""
    parts, params = [], []
    for col, val in filters.items():
        if val is not None:
            parts.append(f"{prefix}{quoted(col)} = ?")
            params.append(val)
    return (" WHERE " + " AND ".join(parts)) if parts else "", params


def quoted(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'
