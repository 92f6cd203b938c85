"""Every row kind the full evidence ships has a check that recomputes it: a tiny snapshot, built stage
by stage as the demo's evidence build does (its plan at a handful of cases, the planted shortcut
beside it) and exported with the snapshot code, has no unchecked row; for each check, a seeded
sample recomputes equal from scratch but for the one number changed by 1e-3 in a copy."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from cxrxai.errors import EvidenceSnapshotError
from cxrxai.models.registry import load
from cxrxai.pipeline.demo import PHASE_STAGES, build_demo
from cxrxai.pipeline.evidence import PROVENANCE, export_snapshot, import_snapshot
from cxrxai.pipeline.evidence.recompute import (
    CHECKS,
    MAP_UNIT,
    RUN_COLUMNS,
    differences,
    partners,
    recompute,
    recompute_together,
    sample,
    sample_together,
    unchecked,
)
from cxrxai.pipeline.fidelity import FidelityPlan
from cxrxai.pipeline.maps import MapConfig, MapPlan
from cxrxai.pipeline.plan import BuildPlan
from cxrxai.pipeline.shortcut import ShortcutPlan, shortcut_stage
from cxrxai.pipeline.trust import TrustPlan
from cxrxai.reports.thesis import occlusion_sweep
from cxrxai.store import open_store, write_store

#: Builds a tiny evidence store and recomputes samples of it (not in `make test-quick`).
pytestmark = pytest.mark.evidence

SEED = 7
#: The evidence stages at a handful of cases and cheap settings (a check reads a map's setting from
#: its row; the fidelity's iterations are the demo's).
TINY_MAPS = MapPlan(maps=(MapConfig("ig", {"steps": 4}, per_label=1), MapConfig("occlusion", {}, per_label=1)),
                    sweep=((32, 32), (32, 16)), sweep_cases=1)
TINY_PLAN = dict(maps=TINY_MAPS, trust=TrustPlan(images=2, methods=(("gradcam", ()),)),
                 fidelity=FidelityPlan(cases=1, methods=("gradcam",)))
#: The shortcut on four marked cases, a CAM and a costly method (the check reads the plan back).
TINY_SHORTCUT = ShortcutPlan(positives=2, negatives=2, methods=(("gradcam", ()), ("saliency", ())))


def _copy_weights(path, models) -> None:
    for f in path.parent.glob(f"{path.stem}.*"):
        shutil.copy(f, models / f.name)


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_model_path, tiny_config, shortcut_world):
    """(snapshot folder, models folder, phantoms folder) of a tiny evidence build: the demo's
    evidence stages at :data:`TINY_PLAN`, a second training for the trust comparisons, and the
    planted shortcut."""
    root = tmp_path_factory.mktemp("evidence")
    models, data_dir = root / "models", tiny_model_path.parent.parent / "phantoms"
    models.mkdir()
    shortcut_cfg, shortcut_path, _ = shortcut_world
    for path in (tiny_model_path, shortcut_path):
        _copy_weights(path, models)
    names = [n for n in PHASE_STAGES["all"] if n != "shortcut"]
    stages = BuildPlan(tuple(names), **TINY_PLAN).runnable()
    store = root / "store.duckdb"
    build_demo(store, model_path=models / tiny_model_path.name, data_dir=data_dir, config=tiny_config,
               stages=stages, extra_models=[models / shortcut_path.name])
    with write_store(store) as w:
        shortcut_stage(w, {"shortcut": load(models / shortcut_path.name, device="cpu"),
                           "control": load(models / tiny_model_path.name, device="cpu")},
                       config=shortcut_cfg, data_dir=data_dir, plan=TINY_SHORTCUT)
    export_snapshot(store, root / "snapshot")
    return root / "snapshot", models, data_dir


def test_the_tiny_evidence_has_every_row_kind_and_each_row_a_check(world):
    folder = world[0]
    assert unchecked(folder) == {}
    empty = [name for name in CHECKS if sample(folder, name, 1, SEED).empty]
    assert empty == []


def test_the_maps_at_their_explainers_grid_ship_and_the_sweep_report_reads_them(world, tmp_path):
    """CAMs and occlusion windows travel (the maps at the input's pixels do not): a store that
    imported the snapshot gives the occlusion sweep's report exactly as the build's store does."""
    folder, models, _ = world
    with open_store(folder.parent / "store.duckdb") as s:
        built = s.map_index()
        report = occlusion_sweep(s, built.model_id.iloc[0])
    assert set(built.kind) == {"cam", "occlusion_grid", "pixel"}
    shipped = pd.read_parquet(folder / "maps.parquet")
    assert set(shipped.kind) == {"cam", "occlusion_grid"}
    assert len(shipped) == (built.kind != "pixel").sum()
    phantoms = json.loads((folder / PROVENANCE).read_text())["phantom_config"]
    store = tmp_path / "new.duckdb"
    with write_store(store) as w:
        w.put_dataset("demo", source="test", labels=["Nodule"], config=phantoms)
        got = import_snapshot(w, folder, models_dir=models, phantom_config=phantoms)
    assert got["rows"]["maps"] == len(shipped)
    with open_store(store) as s:
        pd.testing.assert_frame_equal(occlusion_sweep(s, built.model_id.iloc[0]), report)
    assert len(report) == 2 and (report.maps > 0).all()


def _change(table: pd.DataFrame, hit, row: pd.Series, key: tuple[str, ...]) -> str:
    """Add 1e-3 to the first finite number of ``row`` outside its key and the run's own columns in the
    ``hit`` row of ``table``, or to the first value of its first array (a map); in a row of
    decisions alone (a baseline's, whose scores are rows of their own) flip the first decision;
    returns the column changed."""
    cols = [c for c in row.index if c not in key and c not in RUN_COLUMNS]
    for col in cols:
        if isinstance(row[col], float | np.floating) and np.isfinite(row[col]):
            table.loc[hit, col] = table.loc[hit, col] + 1e-3
            return col
    for col in cols:
        if isinstance(row[col], list | np.ndarray) and len(row[col]):
            at = table.index[hit][0]
            cell = np.array(table.at[at, col])  # a copy, in the column's own dtype
            cell[0] += 1e-3
            table.at[at, col] = cell
            return col
    for col in cols:
        if isinstance(row[col], bool | np.bool_):
            table.loc[hit, col] = ~table.loc[hit, col].astype(bool)
            return col
    raise AssertionError(f"nothing to change in {dict(row)}")


@pytest.mark.parametrize("name", sorted(set(CHECKS) - {"predictions", "thresholds", "localization",
                                                        "localization_scores"}))
def test_a_sample_recomputes_equal_but_a_changed_number(world, tmp_path, name):
    folder, models, data_dir = world
    check = CHECKS[name]
    copy = tmp_path / "snapshot"
    shutil.copytree(folder, copy)
    rows = sample(copy, name, 2, SEED)
    table = pd.read_parquet(copy / f"{check.table}.parquet")
    hit = np.logical_and.reduce([table[k] == rows[k].iloc[0] for k in check.key])
    assert hit.sum() == 1
    col = _change(table, hit, rows.iloc[0], check.key)
    table.to_parquet(copy / f"{check.table}.parquet", index=False)
    changed = sample(copy, name, 2, SEED)
    again = recompute(copy, changed, name, models_dir=models, data_dir=data_dir)
    found = differences(changed, again, check.key)
    assert len(found) == 1 and col in found[0], found


def test_a_fidelity_row_of_another_region_is_found(world, tmp_path):
    """The fidelity check recomputes with the demo plan's region, never the shipped row's own."""
    folder, models, data_dir = world
    check = CHECKS["fidelity"]
    copy = tmp_path / "snapshot"
    shutil.copytree(folder, copy)
    table = pd.read_parquet(copy / "fidelity.parquet")
    table["region"] = table["region"] // 2
    table.to_parquet(copy / "fidelity.parquet", index=False)
    rows = sample(copy, "fidelity", 1, SEED)
    found = differences(rows, recompute(copy, rows, "fidelity", models_dir=models, data_dir=data_dir), check.key)
    assert any(": region " in f for f in found), found


def test_partners_sampled_together_rest_on_the_maps_drawn_first(world):
    """A localization check's scores are drawn on the maps its localization rows rest on (a map is
    what a recomputation pays for); each check keeps its n rows, and a check whose rows are not maps'
    (or too few rest on the drawn maps) draws as alone."""
    folder = world[0]
    names = ("localization", "localization_scores", "geometry")
    together = sample_together(folder, names, 2, SEED)
    assert [len(together[n]) for n in names] == [2, 2, 2]

    def maps(rows):
        return set(rows[list(MAP_UNIT)].itertuples(index=False, name=None))

    assert maps(together["localization_scores"]) <= maps(together["localization"])
    assert maps(sample(folder, "localization_scores", 2, SEED)) - maps(together["localization"])  # alone: others
    pd.testing.assert_frame_equal(together["geometry"], sample(folder, "geometry", 2, SEED))
    apart = sample_together(folder, ("localization: baselines", "localization_scores"), 2, SEED)  # no shared map
    pd.testing.assert_frame_equal(apart["localization_scores"], sample(folder, "localization_scores", 2, SEED))


def test_partners_recomputed_together_give_each_its_rows_as_alone(world):
    """One build recomputes a table's localization rows and their metrics' scores (the shipped
    checks share it): each check gets exactly the rows its sample asks for, equal to its own
    recompute; checks of other stages are refused."""
    folder, models, data_dir = world
    names = ("localization: costly maps", "localization_scores: occlusion sweep")
    assert set(names) <= set(partners(names[0])) and "localization: baselines" not in partners(names[0])
    samples = {n: sample(folder, n, 2, SEED) for n in names}
    together = recompute_together(folder, samples, models_dir=models, data_dir=data_dir)
    for n in names:
        alone = recompute(folder, samples[n], n, models_dir=models, data_dir=data_dir)
        assert list(together[n].columns) == list(samples[n].columns) and len(together[n]) == len(samples[n])
        assert differences(alone, together[n], CHECKS[n].key) == [] == differences(samples[n], together[n],
                                                                                   CHECKS[n].key)
    with pytest.raises(EvidenceSnapshotError, match="together only"):
        recompute_together(folder, {**samples, "geometry": sample(folder, "geometry", 1, SEED)},
                           models_dir=models, data_dir=data_dir)
