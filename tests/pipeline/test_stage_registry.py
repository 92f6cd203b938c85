"""The stage registry: a stage registered from here (no other file touched) is offered by
``precompute --analyses`` with its help and runs in a build when named, writing what it declares;
the demo's and a dataset's stage lists are ordered registered names, checked against the registry."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cxrxai.cli import main
from cxrxai.errors import StageError, UnknownNameError
from cxrxai.pipeline import BuildPlan, dataset_plan
from cxrxai.pipeline.dataset import DATASET_STAGES
from cxrxai.pipeline.demo import (
    AFTER_FIRST_LOOK,
    MODEL_EVIDENCE_STAGES,
    OTHER_MODEL_STAGES,
    PHASE_STAGES,
    SAME_ARCH_STAGES,
)
from cxrxai.pipeline.stages import (
    StageSpec,
    analysis_names,
    register_stage,
    stage_names,
    unregister_stage,
    validate,
)
from cxrxai.store import open_store

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipeline.test_label_matching import _checkpoint, _folder, _precompute  # noqa: E402

TOY_KEY = "toy_census"


def toy_census(ctx) -> dict:
    """Count the images this model predicted and record the count in the store's meta."""
    n = len(ctx.writer.predicted_image_ids(ctx.model.spec.name))
    ctx.writer.set_meta(TOY_KEY, json.dumps({"model": ctx.model.spec.name, "predicted": n}))
    return {"predicted": n}


@pytest.fixture
def toy():
    spec = register_stage(StageSpec("toy census", toy_census, reads=("predictions",), writes=("meta",),
                                    help="count the predicted images", analysis="census"))
    yield spec
    unregister_stage(spec.name)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CXRXAI_DATA_CACHE", str(tmp_path / "cache"))


def test_a_registered_stage_is_offered_by_precompute_help(toy, capsys):
    with pytest.raises(SystemExit):
        main(["precompute", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "census — count the predicted images (reads predictions; writes meta)" in text
    for name in ("sweep", "trust", "fidelity"):  # the built-in analyses, from the same registry
        assert f"{name} — " in text


def test_a_registered_stage_runs_in_a_build_when_named(toy, tmp_path, capsys):
    root, store = _folder(tmp_path / "data"), tmp_path / "s.duckdb"
    assert _precompute(root, store, _checkpoint(tmp_path), "--split", "all", "--analyses", "census") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["toy census"]["predicted"] == 8
    with open_store(store) as s:
        assert json.loads(s.meta(TOY_KEY)) == {"model": "net", "predicted": 8}


def test_an_unnamed_stage_does_not_run(toy, tmp_path, capsys):
    root, store = _folder(tmp_path / "data"), tmp_path / "s.duckdb"
    assert _precompute(root, store, _checkpoint(tmp_path), "--split", "all") == 0
    assert "toy census" not in json.loads(capsys.readouterr().out)
    with open_store(store) as s:
        assert s.meta(TOY_KEY) is None


def test_every_build_list_names_registered_stages():
    lists = [DATASET_STAGES, MODEL_EVIDENCE_STAGES, SAME_ARCH_STAGES, AFTER_FIRST_LOOK, OTHER_MODEL_STAGES,
             *PHASE_STAGES.values()]
    for names in lists:
        assert validate(names) == tuple(names)
    assert set().union(*lists) <= set(stage_names())


def test_an_unknown_stage_is_a_typed_error_naming_the_registered_ones(toy):
    with pytest.raises(UnknownNameError) as err:
        BuildPlan(("predictions", "toy censsus"))
    assert "'toy censsus'" in str(err.value)
    assert "toy census" in str(err.value) and "localization (CAMs)" in str(err.value)
    with pytest.raises(UnknownNameError) as err:
        dataset_plan(analyses=["sweep", "censsus"])
    assert "census" in str(err.value) and "fidelity" in str(err.value)


def test_an_analysis_adds_its_stage_and_what_follows_it(toy):
    assert {"sweep", "trust", "fidelity", "census"} <= set(analysis_names())
    plan = dataset_plan(explainers=("gradcam",), analyses=["census", "sweep"], split=None, cases=3)
    assert plan.stages == (*(n for n in DATASET_STAGES if n != "maps"), "toy census", "occlusion sweep",
                           "sweep scores")
    assert plan.maps.split is None and plan.maps.sweep_cases == 3 and plan.trust.images == 3
    assert [s.name for s in plan.runnable()] == list(plan.stages)


def test_a_taken_name_is_refused(toy):
    with pytest.raises(StageError, match="'toy census' is already registered"):
        register_stage(StageSpec("toy census", lambda ctx: {}, reads=(), writes=(), help="another"))
    with pytest.raises(StageError, match="analysis named 'census'"):
        register_stage(StageSpec("toy two", toy_census, reads=(), writes=(), help="x", analysis="census"))
    assert "toy two" not in stage_names()
