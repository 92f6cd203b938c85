"""The audit as text (what ``audit-data`` prints), as JSON-ready records and as one CSV table."""

from __future__ import annotations

import json

import pandas as pd

from ._assemble import DatasetAudit, StoreAudit, list_command

__all__ = ["to_frame", "to_records", "to_text"]

#: Examples of each problem kind in the text (the CSV and JSON list every row).
EXAMPLES = 2
_INDENT = "    "


def _records(df: pd.DataFrame) -> list[dict]:
    return json.loads(df.to_json(orient="records", force_ascii=False)) if len(df) else []


def to_records(audit: StoreAudit) -> dict:
    """The whole audit as plain JSON values: per dataset, per section its lines, rows and why it is empty."""
    return {
        "store": audit.path, "schema_version": audit.schema_version, "built_at": audit.built_at,
        "empty": audit.empty,
        "datasets": [{"dataset": d.dataset, "source": d.source, "n_images": d.n_images,
                      "sections": {s.key: {"title": s.title, "lines": list(s.lines), "empty": s.empty,
                                           "rows": _records(s.table)} for s in d.sections}}
                     for d in audit.datasets],
    }


def to_frame(audit: StoreAudit) -> pd.DataFrame:
    """Every section's rows in one long table (dataset, section, then the section's own columns;
    an empty section is one row whose ``empty`` says why): the CSV of ``audit-data``. The rows of
    section ``problems`` are the full problem list."""
    parts = []
    for d in audit.datasets:
        for s in d.sections:
            rows = s.table if s.empty is None else pd.DataFrame({"empty": [s.empty]})
            parts.append(rows.assign(dataset=d.dataset, section=s.key))
    if not parts:
        return pd.DataFrame({"dataset": [None], "section": [None], "empty": [audit.empty]})
    # convert_dtypes: a count prints 3, not 3.0, beside the other sections' empty cells
    frame = pd.concat([p for p in parts if len(p)], ignore_index=True).convert_dtypes()
    first = ["dataset", "section"]
    return frame[first + [c for c in frame.columns if c not in first]]


def _table_text(df: pd.DataFrame) -> list[str]:
    shown = df.astype(object).where(df.notna(), "—")  # a missing cell prints a dash, never NaN
    return [_INDENT + line for line in shown.to_string(index=False).splitlines()]


def _examples(audit: DatasetAudit) -> list[str]:
    kinds, rows = audit.section("problem_kinds").table, audit.section("problems").table
    out = []
    for k in kinds.itertuples(index=False):
        out.append(f"{_INDENT}{k.n:>7,}  {k.stage} · {k.reason} · {k.action}")
        same = rows[(rows["stage"] == k.stage) & (rows["reason"] == k.reason) & (rows["action"] == k.action)]
        for r in same.head(EXAMPLES).itertuples(index=False):
            where = ", ".join(x for x in (None if pd.isna(r.file) else str(r.file),
                                          None if pd.isna(r.row) else f"row {int(r.row)}",
                                          None if pd.isna(r.image_id) else f"image {r.image_id}") if x)
            out.append(f"{_INDENT}         e.g. {where or 'no file or row'}: {r.problem}")
    return out


def _dataset_text(audit: DatasetAudit) -> list[str]:
    out = [f"Dataset {audit.dataset} (source {audit.source}): {audit.n_images:,} images"]
    for s in audit.sections:
        if s.key == "problems":
            continue
        out.append(f"  {s.title}")
        out += [f"{_INDENT}{line}" for line in s.lines]
        if s.empty is not None:
            out.append(f"{_INDENT}{s.empty}")
        elif s.key == "problem_kinds":
            out += _examples(audit)
        else:
            out += _table_text(s.table)
    return out


def to_text(audit: StoreAudit) -> str:
    """The audit as a user reads it in a terminal: each section's sentences and table, problems by
    kind with their first examples (file and row) and the command that lists them all."""
    built = f", built {audit.built_at}" if audit.built_at else ""
    out = [f"Data audit of {audit.path} (schema v{audit.schema_version}{built})"]
    if audit.empty is not None:
        out.append(audit.empty)
    for d in audit.datasets:
        out += ["", *_dataset_text(d)]
    if audit.datasets:
        out += ["", "Every problem row, with the rest of the audit as a table: "
                + list_command(audit.path, audit.datasets[0].dataset if len(audit.datasets) == 1 else "NAME")]
    return "\n".join(out) + "\n"
