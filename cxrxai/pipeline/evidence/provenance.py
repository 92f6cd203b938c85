"""What an evidence snapshot was built from, and whether it belongs to this checkout.

The provenance (``provenance.json`` beside the Parquet files) names the code (``git describe`` and
a hash of the sources that compute numbers), the seeds (the phantom configuration and the map
sampling seed), each model's weights (file and sha256), the schema version, which steps of the
demo build the snapshot holds complete with the hash of each step's sources
(:mod:`.step_sources`), and each table's rows. :func:`check` refuses a snapshot whose phantoms or
weights differ from this checkout's, or of a newer schema (never silently wrong); a step whose
sources changed since is recomputed alone (:func:`~.step_sources.stale_steps`).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from importlib import metadata
from pathlib import Path

from ...errors import EvidenceSnapshotError
from ...store import SCHEMA_VERSION

__all__ = ["PHANTOMS", "PROVENANCE", "RECORDS", "check", "code_version", "completed_steps", "read", "sha256",
           "sources_sha256"]

PROVENANCE = "provenance.json"
#: Tables that record what a build registered — its models (checked by their weights' sha256) and
#: their label matches (exact names over the phantom labels) — not numbers a step computes: a build
#: writes them before the snapshot is imported, and no check recomputes them.
RECORDS = ("meta", "models", "label_matches")
#: The folder of a snapshot that holds its phantoms' annotations (gzipped, as the render cache names
#: them): a recomputation reads the ground truth there and draws only the films it needs.
PHANTOMS = "phantoms"
_PACKAGE = Path(__file__).resolve().parents[2]
#: The parts of cxrxai whose code decides a stored number (the pages and reports only show them).
NUMERIC_SOURCES = ("data", "explain", "labels.py", "metrics", "models", "pipeline", "postprocess.py",
                   "stats.py", "store", "validate.py")


def sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sources_sha256() -> str:
    """One sha256 over the path and bytes of every ``.py`` file of :data:`NUMERIC_SOURCES`."""
    h = hashlib.sha256()
    for name in NUMERIC_SOURCES:
        root = _PACKAGE / name
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            h.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def code_version() -> str:
    """``git describe --always --dirty`` of the checkout, else the installed package's version."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=_PACKAGE, capture_output=True,
                             text=True, timeout=10, check=True)
        if out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return f"cxrxai {metadata.version('cxrxai')}"
    except metadata.PackageNotFoundError:
        return "unknown (neither a git checkout nor an installed package)"


def completed_steps(status: dict | None) -> list[list]:
    """The steps of a build's plan (``[round, round name, stage, model]``) it completed, from its
    status file: every one when it finished, else those before the step it stopped at."""
    if not status or not status.get("plan"):
        return []
    plan = status["plan"]
    if status.get("state") == "finished":
        return [list(s) for s in plan]
    return [list(s) for s in plan[: max(0, int(status.get("stage_index") or 1) - 1)]]


def read(folder: str | Path) -> dict:
    """The provenance of the snapshot in ``folder``; :class:`EvidenceSnapshotError` when unreadable."""
    path = Path(folder) / PROVENANCE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise EvidenceSnapshotError(f"cannot read the evidence snapshot's {path}: {err}") from None


def check(prov: dict, *, models_dir: str | Path, phantom_config: dict) -> dict[str, Path | None]:
    """Whether the snapshot ``prov`` describes belongs here: a schema version this cxrxai reads
    (its own or an older one, migrated on import), the same phantom cases (configuration, seed
    included) and, for each of its models whose weights file is in ``models_dir``, the same weights
    (sha256). Returns each model's local weights (None where the file is missing: the build trains
    it, as the planted shortcut's). :class:`EvidenceSnapshotError` says what differs otherwise."""
    fix = "rebuild the snapshot with `make demo-evidence`, or let the build compute the evidence"
    version = prov.get("schema_version")
    if not isinstance(version, int) or not 1 <= version <= SCHEMA_VERSION:
        raise EvidenceSnapshotError(f"the evidence snapshot has schema version {version}, this cxrxai "
                                    f"reads 1 to {SCHEMA_VERSION} (an older one is migrated): {fix}")
    if prov.get("phantom_config") != phantom_config:
        raise EvidenceSnapshotError(f"the evidence snapshot is of the phantoms {prov.get('phantom_config')}, "
                                    f"this build renders {phantom_config}: {fix}")
    local = {}
    for model_id, weights in sorted(prov.get("models", {}).items()):
        path = Path(models_dir) / weights["file"]
        local[model_id] = path if path.is_file() else None
        if path.is_file() and sha256(path) != weights["sha256"]:
            raise EvidenceSnapshotError(f"the evidence snapshot's {model_id} has weights sha256 "
                                        f"{weights['sha256'][:12]}…, {path} has {sha256(path)[:12]}…: {fix}")
    return local
