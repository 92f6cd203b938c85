"""Export a demo store's result tables as a shipped snapshot; import one into a new store.

A snapshot is a folder of Parquet files, one per shipped table
(:func:`~cxrxai.store.shipped_tables`: every table of the schema but the phantom cases, and of the
maps those at their explainer's own grid), and ``provenance.json`` (:mod:`.provenance`). The demo
build imports it into a store it has just created, after registering the cases and the model, when
it belongs to these weights and phantoms (:func:`.provenance.check`; a snapshot of an older schema
version is migrated as an old store is); the background build then skips the steps the snapshot
holds complete (:func:`skip_covered`) and computes the rest, and the steps whose sources changed
since the snapshot was built (:func:`.step_sources.stale_steps`: recomputed, their rows replaced).
"""

from __future__ import annotations

import gzip
import json
import tempfile
import time
from dataclasses import fields, replace
from pathlib import Path

from ... import paths
from ...data.demo import cache_files, load_demo, shipped_annotations
from ...data.phantom import PhantomConfig
from ...errors import EvidenceSnapshotError, StoreError, UnknownNameError
from ...models.spec import ModelSpec
from ...store import (
    DECLARED_TABLES,
    SCHEMA_VERSION,
    export_table,
    import_table,
    migrate_snapshot,
    open_store,
    shipped_tables,
)
from ...store.status import read_status
from ..maps import MapPlan
from ..runner import Stage
from ..stages import get_stage
from . import provenance, step_sources
from .provenance import PHANTOMS, PROVENANCE, completed_steps, sha256

__all__ = ["SNAPSHOT_META", "SNAPSHOT_STEP", "covered_steps", "export_snapshot", "import_snapshot",
           "shipped_dir", "skip_covered", "snapshot_stage", "with_snapshot"]

#: Meta key of a store that imported a snapshot: the snapshot's provenance (JSON).
SNAPSHOT_META = "evidence_snapshot"
#: The name of the build step that imports it.
SNAPSHOT_STEP = "evidence snapshot"


def shipped_dir() -> Path:
    """The snapshot that comes with cxrxai: ``data_cache/evidence`` of the checkout or the package."""
    return paths.app_dir() / "data_cache" / "evidence"


def _models(store) -> dict[str, dict]:
    """Each model's weights file name and sha256; the snapshot cannot vouch for a model without them."""
    out = {}
    for row in store.models().itertuples():
        path = Path(row.weights_path or "")
        if not path.is_file():
            raise EvidenceSnapshotError(f"model {row.model_id}'s weights {row.weights_path!r} are missing: a "
                                        "snapshot names the weights its numbers come from")
        out[row.model_id] = {"file": path.name, "sha256": sha256(path)}
    return out


def export_snapshot(store_path: str | Path, folder: str | Path, *, dataset: str = "demo") -> dict:
    """Write the shipped tables of the store at ``store_path`` and their provenance to ``folder``
    (earlier Parquet files there are replaced); returns the provenance. Which build steps are
    complete comes from the build's status file beside the store."""
    folder, code = Path(folder), provenance.code_version()  # before the old files go: a clean checkout
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.parquet"):
        old.unlink()
    with open_store(store_path) as store:
        datasets = store.datasets()
        config = datasets.loc[datasets.dataset == dataset, "config"]
        if config.empty:
            raise EvidenceSnapshotError(f"{store_path} has no dataset {dataset!r} to snapshot")
        phantoms = json.loads(config.iloc[0])
        steps = completed_steps(read_status(store_path))
        prov = {
            "code_version": code,
            "sources_sha256": provenance.sources_sha256(),
            "schema_version": store.schema_version(),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "store_built_at": store.meta("built_at"),
            "phantom_config": phantoms,
            "seeds": {"phantoms": phantoms.get("seed"), "map_samples": MapPlan().seed},
            "models": _models(store),
            "evidence_complete": bool(store.meta("evidence_built_at")),
            "steps": steps,
            "step_sources": step_sources.stage_hashes(steps),
            "tables": {t: export_table(store, t, folder / f"{t}.parquet") for t in shipped_tables()
                       if t not in DECLARED_TABLES or store.has_table(t)},
        }
    prov["phantom_annotations"] = _ship_annotations(store_path, folder / PHANTOMS, dataset)
    (folder / PROVENANCE).write_text(json.dumps(prov, indent=1) + "\n")
    return prov


def _ship_annotations(store_path: str | Path, folder: Path, dataset: str) -> dict[str, str]:
    """Copy the ground truth of the snapshot's phantom cohorts (the dataset's and the planted
    shortcut's) into ``folder``, gzipped, as :func:`~cxrxai.data.demo.lazy_demo` reads them: a
    recomputation then draws only the films its sample needs. Returns file name → sha256; none
    when the dataset names no folder of rendered phantoms (a recomputation then renders them all)."""
    with open_store(store_path) as store:
        datasets = store.datasets().set_index("dataset")
        root = datasets.loc[dataset, "root"]
        configs = [datasets.loc[dataset, "config"]]
        shortcut = store.table("shortcut")
    if not root or not isinstance(root, str):
        return {}
    if not shortcut.empty:
        configs += sorted(set(shortcut.phantom_config))
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("annotations-*.json.gz"):
        old.unlink()
    out = {}
    for text in configs:
        config = PhantomConfig.from_json(text)  # the store keeps each configuration as its JSON
        load_demo(config, root)  # the render cache's files (rendered where missing)
        target = shipped_annotations(config, folder)
        # mtime 0: the same annotations give the same bytes
        target.write_bytes(gzip.compress(cache_files(config, root)[1].read_bytes(), mtime=0))
        out[target.name] = sha256(target)
    return out



def import_snapshot(writer, folder: str | Path, *, models_dir: str | Path,
                    phantom_config: dict | None) -> dict:
    """Add the snapshot in ``folder`` to the store ``writer`` writes (one that has no results yet)
    and record its provenance under :data:`SNAPSHOT_META`; each model whose weights are in
    ``models_dir`` is registered with them. A snapshot of an older schema version is migrated
    first; its steps whose sources changed since are left out of the steps it holds complete
    (``recomputed_steps``: the build computes them again). Returns what was imported, or
    ``{"refused": why}`` when the snapshot does not belong to these weights or phantoms, or is of
    a newer schema (the build then computes everything), or ``{"skipped": why}``."""
    folder = Path(folder)
    if phantom_config is None:
        return {"skipped": "the dataset has no phantom configuration to compare"}
    if not (folder / PROVENANCE).is_file():
        return {"skipped": f"no evidence snapshot at {folder}"}
    if any(writer.table_counts().get(t) for t in shipped_tables() if t not in provenance.RECORDS):
        return {"skipped": "the store has results already; a snapshot goes into a new store only"}
    try:
        prov = provenance.read(folder)
        local = provenance.check(prov, models_dir=models_dir, phantom_config=phantom_config)
    except EvidenceSnapshotError as err:
        return {"refused": str(err)}
    t0 = time.monotonic()
    try:
        rows = _import_tables(writer, folder, prov)
    except EvidenceSnapshotError as err:
        return {"refused": str(err)}
    stale = step_sources.stale_steps(prov)
    for spec in writer.models().spec:  # the models table came without paths: this machine's weights
        spec = ModelSpec.from_json(spec)
        if local.get(spec.name) is not None:
            writer.put_model(spec, weights_path=str(paths.absolute(local[spec.name])))
    kept = [s for s in prov.get("steps", []) if s not in stale]
    writer.set_meta(SNAPSHOT_META, json.dumps({**{k: v for k, v in prov.items() if k != "tables"},
                                               "steps": kept, "recomputed_steps": stale}))
    return {"rows": rows, "steps": len(kept), "recomputed_steps": stale,
            "left_out": sorted(set(prov.get("tables", {})) - set(rows)),
            "complete": prov.get("evidence_complete"), "code_version": prov.get("code_version"),
            "seconds": round(time.monotonic() - t0, 1),
            "without_local_weights": sorted(m for m, p in local.items() if p is None)}


def _import_tables(writer, folder: Path, prov: dict) -> dict[str, int]:
    """Each table of the snapshot into ``writer``'s store, the schema's migrated first when the
    snapshot is of an older version (a file not of the version it says: an
    :class:`EvidenceSnapshotError`, before anything is written); a table no stage declares any
    more is left out."""
    tables = [t for t in prov.get("tables", {}) if t in shipped_tables()]
    version = prov["schema_version"]
    files = {t: folder / f"{t}.parquet" for t in tables}
    with tempfile.TemporaryDirectory() as tmp:
        if version < SCHEMA_VERSION:
            try:
                migrate_snapshot(folder, [t for t in tables if t not in DECLARED_TABLES], version, tmp)
            except StoreError as err:
                raise EvidenceSnapshotError(f"the evidence snapshot cannot be migrated: {err}") from None
            schema = [t for t in shipped_tables() if t not in DECLARED_TABLES]
            files = {**{t: Path(tmp) / f"{t}.parquet" for t in schema}, **{
                t: p for t, p in files.items() if t in DECLARED_TABLES}}
        return {t: import_table(writer, t, path) for t, path in files.items()}


def snapshot_stage(folder: str | Path, models_dir: str | Path) -> Stage:
    """The build step that imports the snapshot in ``folder`` (:func:`import_snapshot`) into a new
    store, its phantom configuration the dataset's as the build registered it."""

    def run(ctx) -> dict:
        datasets = ctx.writer.datasets()
        config = datasets.loc[datasets.dataset == ctx.dataset, "config"]
        phantoms = json.loads(config.iloc[0]) if len(config) and config.iloc[0] else None
        return import_snapshot(ctx.writer, folder, models_dir=models_dir, phantom_config=phantoms)

    return Stage(SNAPSHOT_STEP, run)


def covered_steps(store) -> set[tuple[str, str, str]]:
    """The build steps ``(round name, stage, model)`` that the snapshot ``store`` (a store or its
    writer) imported holds complete; none when it imported none."""
    steps = json.loads(store.meta(SNAPSHOT_META) or "{}").get("steps", [])
    return {(name, stage, model) for _r, name, stage, model in steps}


def _unscored(ctx, stage_name: str) -> bool:
    """Whether a stage that writes localization scores has (map, metric) pairs to score: a metric
    registered after the snapshot was built is scored from the stored maps, never left out."""
    try:
        writes = get_stage(stage_name).writes
    except UnknownNameError:  # a build step of no registered stage (the snapshot's own import)
        return False
    model_id = ctx.model.spec.name
    return "localization" in writes and len(ctx.writer.localization_missing(model_id=model_id,
                                                                            source="explainer")) > 0


def _skipping(round_name: str, stage: Stage) -> Stage:
    def run(ctx) -> dict:
        model_id = ctx.model.spec.name
        if (round_name, stage.name, model_id) in covered_steps(ctx.writer) and not _unscored(ctx, stage.name):
            return {"skipped": "complete in the imported evidence snapshot"}
        return stage.run(ctx)

    return Stage(stage.name, run)


def skip_covered(rounds: list) -> list:
    """``rounds`` (:func:`~cxrxai.pipeline.demo.evidence_rounds`) with each stage skipped where the
    store's imported snapshot holds it complete for the model it runs on (:func:`covered_steps`, read
    when the stage starts): the snapshot's rows count as done, the rest is computed as before."""
    out = []
    for rnd in rounds:
        stages = {f.name: tuple(_skipping(rnd.name, st) for st in getattr(rnd, f.name))
                  for f in fields(rnd) if isinstance(getattr(rnd, f.name), tuple)}
        out.append(replace(rnd, **stages))
    return out


def with_snapshot(rounds: list, folder: str | Path | None, models_dir: str | Path) -> list:
    """The evidence build's ``rounds`` over a store that may take the snapshot in ``folder`` (None:
    none): its import first (:func:`snapshot_stage`, a new store only), then every stage skipped
    where the imported snapshot holds it complete (:func:`skip_covered`)."""
    rounds = skip_covered(rounds)
    if folder is None or not rounds:
        return rounds
    return [replace(rounds[0], main=(snapshot_stage(folder, models_dir), *rounds[0].main)), *rounds[1:]]
