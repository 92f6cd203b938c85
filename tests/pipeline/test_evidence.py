"""The shipped evidence snapshot: every row it ships is recomputed by a check, a seeded sample of them
recomputes equal from scratch (so a change that alters a shipped number fails until ``make
demo-evidence`` rebuilds it), a changed number is caught, and a snapshot is imported only into a new
store whose weights, schema and phantoms are its own; the build then skips what it holds complete."""

from __future__ import annotations

import functools
import gzip
import json
import shutil
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from cxrxai import paths
from cxrxai.data.demo import _render_one, shipped_annotations
from cxrxai.data.phantom import PhantomConfig, sample_cohort
from cxrxai.pipeline.demo import Round
from cxrxai.pipeline.evidence import (
    PHANTOMS,
    PROVENANCE,
    SNAPSHOT_META,
    export_snapshot,
    import_snapshot,
    shipped_dir,
    skip_covered,
)
from cxrxai.pipeline.evidence.provenance import sha256
from cxrxai.pipeline.evidence.recompute import (
    CHECKS,
    differences,
    partners,
    recompute,
    recompute_together,
    sample,
    sample_together,
    unchecked,
)
from cxrxai.pipeline.runner import Stage
from cxrxai.store import SCHEMA_VERSION, open_store, write_store

SNAPSHOT = shipped_dir()
SEED = 20261125  # the sample: fixed, so the test is deterministic; any seed must pass
N_ROWS = 4


@pytest.fixture(scope="module")
def prov():
    return json.loads((SNAPSHOT / PROVENANCE).read_text())


def _recomputed(folder, table):
    rows = sample(folder, table, N_ROWS, SEED)
    again = recompute(folder, rows, table, models_dir=paths.shipped_models_dir(), data_dir=paths.demo_data_dir())
    return rows, again


def test_every_shipped_row_has_a_check(prov):
    assert sum(prov["tables"].values()) > 0
    assert unchecked(SNAPSHOT) == {}


def test_the_shipped_phantom_annotations_are_the_generators(prov):
    """The ground truth a recomputation reads instead of rendering every film (:func:`cohort`): one
    file per cohort of the snapshot (the demo's, the planted shortcut's), as provenance names it, each
    film's records those the generator draws for it now (a seeded sample of films rendered again)."""
    configs = [PhantomConfig.from_json(json.dumps(prov["phantom_config"]))]
    configs += [PhantomConfig.from_json(c) for c in sorted(set(pd.read_parquet(SNAPSHOT / "shortcut.parquet")
                                                                 .phantom_config))]
    names = [shipped_annotations(c, SNAPSHOT / PHANTOMS).name for c in configs]
    assert sorted(names) == sorted(prov["phantom_annotations"])
    rng = np.random.default_rng(SEED)
    for config, name in zip(configs, names):
        path = SNAPSHOT / PHANTOMS / name
        assert sha256(path) == prov["phantom_annotations"][name]
        records = json.loads(gzip.decompress(path.read_bytes()))
        specs = sample_cohort(config)
        for i in sorted(rng.choice(len(specs), 20, replace=False)):
            drawn = json.loads(json.dumps(_render_one(config, specs[i])[1]))
            assert [r for r in records if r["image_id"] == specs[i].image_id] == drawn, specs[i].image_id


#: The checks whose sample costs minutes (a forward pass per occluded window, per fidelity subset):
#: their test lives in test_evidence_costly.py, so that CI's workers (one per file) run them beside
#: these.
COSTLY = ("fidelity", "localization: occlusion sweep", "localization_scores: occlusion sweep", "shortcut")


def shipped_checks(costly: bool) -> list[str]:
    """The checks with rows in the shipped snapshot, the costly ones or the others (every check is
    exercised on a tiny snapshot in test_evidence_checks.py, whatever ships)."""
    return [name for name in sorted(CHECKS)
            if (name in COSTLY) == costly and not sample(SNAPSHOT, name, 1, SEED).empty]


@functools.cache
def _shipped_recomputed(names: tuple[str, ...]) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """The seeded samples of the checks ``names`` (:func:`partners`: one build recomputes them all)
    that ship rows, recomputed together: a localization check's metric scores drawn on the maps its
    localization rows rest on (:func:`sample_together`: each map computed once); cached so that the
    partners' tests share the build."""
    samples = sample_together(SNAPSHOT, names, N_ROWS, SEED)
    samples = {n: rows for n, rows in samples.items() if len(rows)}
    again = recompute_together(SNAPSHOT, samples, models_dir=paths.shipped_models_dir(),
                               data_dir=paths.demo_data_dir())
    return {n: (samples[n], again[n]) for n in samples}


def seeded_sample_recomputes_equal(table: str) -> None:
    together = tuple(p for p in partners(table) if (p in COSTLY) == (table in COSTLY))  # one file's: one worker's
    rows, again = _shipped_recomputed(together)[table]
    assert len(rows) == min(N_ROWS, len(CHECKS[table].rows(pd.read_parquet(SNAPSHOT / f"{CHECKS[table].table}.parquet"))))
    assert differences(rows, again, CHECKS[table].key) == []


@pytest.mark.evidence
@pytest.mark.parametrize("table", shipped_checks(costly=False))
def test_a_seeded_sample_of_shipped_rows_recomputes_equal(table):
    seeded_sample_recomputes_equal(table)


@pytest.mark.evidence
def test_a_changed_number_fails(tmp_path, prov):
    copy = tmp_path / "evidence"
    shutil.copytree(SNAPSHOT, copy)
    table = "predictions"
    rows = sample(copy, table, N_ROWS, SEED)
    shipped = pd.read_parquet(copy / f"{table}.parquet")
    hit = (shipped.image_id == rows.image_id[0]) & (shipped.label == rows.label[0]) \
        & (shipped.model_id == rows.model_id[0])
    shipped.loc[hit, "prob"] = shipped.loc[hit, "prob"] + 1e-3
    shipped.to_parquet(copy / f"{table}.parquet", index=False)
    rows, again = _recomputed(copy, table)
    found = differences(rows, again, CHECKS[table].key)
    assert len(found) == 1 and "prob" in found[0] and rows.image_id[0] in found[0]


def _new_store(tmp_path, prov):
    store = tmp_path / "new.duckdb"
    with write_store(store) as w:
        w.put_dataset("demo", source="test", labels=["Nodule"], config=prov["phantom_config"])
    return store


#: The columns a schema after the shipped snapshot's added to its tables (maps.timing: v7).
MIGRATED = {"maps": {"timing"}}


def test_import_then_export_gives_the_snapshot_back(tmp_path, prov):
    store = _new_store(tmp_path, prov)
    with write_store(store) as w:
        got = import_snapshot(w, SNAPSHOT, models_dir=paths.shipped_models_dir(),
                              phantom_config=prov["phantom_config"])
        again = import_snapshot(w, SNAPSHOT, models_dir=paths.shipped_models_dir(),
                                phantom_config=prov["phantom_config"])
    assert got["rows"] == {t: n for t, n in prov["tables"].items()}
    assert "new store only" in again["skipped"]
    with open_store(store) as s:
        assert json.loads(s.meta(SNAPSHOT_META))["steps"] == prov["steps"]
        paths_ = s.models().set_index("model_id").weights_path
        assert all(str(paths.shipped_models_dir()) in p for p in paths_)
    out = export_snapshot(store, tmp_path / "out")
    for table in prov["tables"]:
        a = pd.read_parquet(SNAPSHOT / f"{table}.parquet")
        b = pd.read_parquet(tmp_path / "out" / f"{table}.parquet")
        if table == "meta":
            a, b = (d[d.key != SNAPSHOT_META].reset_index(drop=True) for d in (a, b))
        # a column a later schema added comes back with the migration's value, the rest unchanged
        assert set(b.columns) - set(a.columns) == MIGRATED.get(table, set()), table
        if table == "maps":  # v7: a time stored before the clock was recorded is wall time
            assert b.loc[b.seconds.notna(), "timing"].eq("wall").all()
            assert b.loc[b.seconds.isna(), "timing"].isna().all()
        pd.testing.assert_frame_equal(a, b[list(a.columns)], check_dtype=True)
    assert out["models"] == prov["models"]


def test_a_snapshot_of_other_weights_is_refused(tmp_path, prov):
    models = tmp_path / "models"
    shutil.copytree(paths.shipped_models_dir(), models)
    with open(models / "demo-resnet18.pt", "ab") as f:
        f.write(b"retrained")
    store = _new_store(tmp_path, prov)
    with write_store(store) as w:
        got = import_snapshot(w, SNAPSHOT, models_dir=models, phantom_config=prov["phantom_config"])
    assert "demo-resnet18" in got["refused"] and "sha256" in got["refused"]
    assert "make demo-evidence" in got["refused"]
    with open_store(store) as s:
        assert s.table_counts()["predictions"] == 0 and s.meta(SNAPSHOT_META) is None


@pytest.mark.parametrize("change", ["schema_version", "phantom_config"])
def test_a_snapshot_of_a_newer_schema_or_other_phantoms_is_refused(tmp_path, prov, change):
    """(An older schema is migrated: tests/pipeline/test_evidence_import.py.)"""
    copy = tmp_path / "evidence"
    shutil.copytree(SNAPSHOT, copy)
    edited = {**prov, "schema_version": SCHEMA_VERSION + 1} if change == "schema_version" else {
        **prov, "phantom_config": {**prov["phantom_config"], "n_images": 100}}
    (copy / PROVENANCE).write_text(json.dumps(edited))
    store = _new_store(tmp_path, prov)
    with write_store(store) as w:
        got = import_snapshot(w, copy, models_dir=paths.shipped_models_dir(), phantom_config=prov["phantom_config"])
    assert ("schema version" if change == "schema_version" else "phantoms") in got["refused"]


def test_the_build_skips_the_steps_the_snapshot_holds_complete():
    ran = []
    stages = tuple(Stage(name, lambda ctx, name=name: ran.append((name, ctx.model.spec.name)) or {})
                   for name in ("predictions", "maps"))
    given = Round("first look", stages)
    rounds = skip_covered([given])
    meta = json.dumps({"steps": [[1, "first look", "predictions", "a"], [1, "full", "maps", "a"]]})
    for model in ("a", "b"):
        ctx = SimpleNamespace(writer=SimpleNamespace(meta=lambda key: meta), model=_model(model))
        for st in rounds[0].main:
            st.run(ctx)
    assert ran == [("maps", "a"), ("predictions", "b"), ("maps", "b")]
    assert given.main == stages  # the rounds given are left as they were


def _model(name):
    return SimpleNamespace(spec=SimpleNamespace(name=name))


@pytest.mark.parametrize("missing", [0, 3])
def test_a_covered_localization_step_still_scores_a_metric_registered_since(missing):
    """The snapshot's localization step is skipped only while every (map, metric) pair is scored: a
    metric registered after the snapshot was built is scored from the stored maps, never left out."""
    ran = []
    given = Round("first look", (Stage("localization (CAMs)", lambda ctx: ran.append("scored") or {}),))
    meta = json.dumps({"steps": [[1, "first look", "localization (CAMs)", "a"]]})
    pairs = pd.DataFrame({"metric": ["toy"] * missing})
    writer = SimpleNamespace(meta=lambda key: meta, localization_missing=lambda **filters: pairs)
    for st in skip_covered([given])[0].main:
        st.run(SimpleNamespace(writer=writer, model=_model("a")))
    assert ran == (["scored"] if missing else [])
