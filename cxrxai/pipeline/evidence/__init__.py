"""The demo's evidence as a shipped snapshot: its result tables as Parquet with their provenance.

``make demo-evidence`` builds the demo store's evidence and exports it (:func:`export_snapshot`);
the demo build imports the shipped snapshot into a new store (:func:`import_snapshot`), and the
background build computes only what the snapshot does not hold (:func:`skip_covered`). A test
recomputes a seeded sample of the shipped rows from scratch (:mod:`.recompute`).
"""

from .provenance import PHANTOMS, PROVENANCE, completed_steps
from .snapshot import (
    SNAPSHOT_META,
    SNAPSHOT_STEP,
    covered_steps,
    export_snapshot,
    import_snapshot,
    shipped_dir,
    skip_covered,
    snapshot_stage,
    with_snapshot,
)

__all__ = ["PHANTOMS", "PROVENANCE", "SNAPSHOT_META", "SNAPSHOT_STEP", "completed_steps", "covered_steps",
           "export_snapshot", "import_snapshot", "shipped_dir", "skip_covered", "snapshot_stage",
           "with_snapshot"]
