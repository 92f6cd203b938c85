"""The one sentence an empty page shows: what fills the missing evidence and when, from the build's
actual status (running with the step ahead, now or behind; finished; stopped with the app allowed or
forbidden to resume it), for the second seed of a model, and for the human benchmark of the demo and
of a user's dataset. Small stores written here; statuses as the build's StatusWriter writes them."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cxrxai.models.spec import ModelSpec
from cxrxai.store import CAM_ONLY_META, open_store, write_store
from cxrxai.summaries import fill_hint
from cxrxai.summaries.hints import DEMO_SOURCE

MAIN, SEED, RESNET = "demo-densenet121", "demo-densenet121-seed1", "demo-resnet18"
STEPS = ("predictions", "thresholds", "localization (CAMs)", "maps", "trust")
#: Two rounds; in each the main model's steps, then the ResNet's (the seed gets its CAMs' steps only).
PLAN = [[r, name, step, model] for r, name in ((1, "first look"), (2, "full evidence"))
        for model, steps in ((MAIN, STEPS), (SEED, STEPS[:3]), (RESNET, STEPS)) for step in steps]


def _status(step: int | None, *, state="running", plan=PLAN, **extra) -> dict:
    status = {"pid": 1, "phase": "evidence", "state": state, "running": state == "running", "plan": plan,
              "stages": len(plan), "rounds": len({p[0] for p in plan}), "stage_index": step, **extra}
    if step:
        status.update(round=plan[step - 1][0], round_name=plan[step - 1][1], step=plan[step - 1][2],
                      model=plan[step - 1][3])
    return status


def _trust_rows(model_id: str) -> pd.DataFrame:
    return pd.DataFrame([{"model_id": model_id, "method": "gradcam", "kind": "randomization",
                          "image_id": "i1", "label": "A", "step": "logits", "step_index": 1,
                          "other_model": "", "data_range": 1.0, "ssim": 0.5}])


def _store(tmp_path, *, dataset="demo", trust_of=(), readers=("gt",)):
    path = tmp_path / f"{dataset}.duckdb"
    with write_store(path) as w:
        w.put_dataset(dataset, source=DEMO_SOURCE if dataset == "demo" else "unit", labels=["A"])  # as the build
        w.put_images(pd.DataFrame({"image_id": ["i1"], "dataset": dataset, "patient_id": ["p1"], "sex": "F",
                                   "age": 61.0, "age_bin": "60-80", "view": "PA", "split": "test", "width": 8,
                                   "height": 8}))
        w.put_annotations(pd.DataFrame([{"image_id": "i1", "label": "A", "reader": r, "instance": 0,
                                         "kind": "box", "x": 1.0, "y": 2.0, "w": 3.0, "h": 4.0}
                                        for r in readers]))
        for name, arch in ((MAIN, "densenet121"), (SEED, "densenet121"), (RESNET, "resnet18")):
            w.put_model(ModelSpec(name=name, arch=arch, labels=("A",)))
        w.set_meta(CAM_ONLY_META, json.dumps({SEED: MAIN}))
        for model_id in trust_of:
            w.put_table("trust", _trust_rows(model_id))
    return open_store(path)


@pytest.fixture()
def demo(tmp_path):
    with _store(tmp_path) as s:
        yield s


def test_a_step_ahead_in_the_plan_is_named_with_where_the_build_is_now(demo):
    hint = fill_hint(demo, "trust", RESNET, status=_status(4), mode="on")  # at the main model's maps
    assert hint == ("the background build computes it at round 1 of 2 (first look), step 13 of 26 (trust of "
                    "demo-resnet18), after step 12; it is at step 4 (maps of demo-densenet121) now")


def test_the_step_running_now_says_so_with_its_eta(demo):
    hint = fill_hint(demo, "trust", MAIN, status=_status(5, eta_s=570.0), mode="on")
    assert hint == ("the background build is computing it now: round 1 of 2 (first look), step 5 of 26 "
                    "(trust of demo-densenet121), expected in about 10 min")


def test_a_step_behind_points_to_the_next_round_that_computes_it_again(demo):
    hint = fill_hint(demo, "trust", MAIN, status=_status(6), mode="on")  # round 1's trust is done
    assert "step 18 of 26 (trust of demo-densenet121), after step 17" in hint


def test_a_running_build_that_will_not_compute_it_says_so_and_what_fills_it(demo):
    plan = PLAN[:13]  # one round: trust of the main model (step 5) is behind
    hint = fill_hint(demo, "trust", MAIN, status=_status(9, plan=plan), mode="on")
    assert hint == ("the background build running now (step 9 of 13 (predictions of demo-resnet18)) does not "
                    "compute it; once it has finished, fill it with `python -m cxrxai demo`")


def test_a_finished_build_without_it_gives_the_command(demo):
    hint = fill_hint(demo, "trust", MAIN, status=_status(26, state="finished"), mode="on")
    assert hint == "the background build finished without it; fill it with `python -m cxrxai demo`"


def test_a_stopped_build_is_resumed_from_the_sidebar_when_the_app_may_run_it(demo):
    status = _status(4, state="stopped", stopped_by="asked to stop (SIGTERM, e.g. the sidebar's Stop)")
    hint = fill_hint(demo, "trust", MAIN, status=status, mode="on")
    assert hint == ("the background build stopped at round 1 of 2 (first look), step 4 of 26 (maps of "
                    "demo-densenet121) (asked to stop (SIGTERM, e.g. the sidebar's Stop)), before round 1 "
                    "of 2 (first look), step 5 of 26 (trust of demo-densenet121) that computes it; resume it "
                    "with Resume in the sidebar (or `python -m cxrxai demo --phase evidence`)")


def test_a_killed_build_under_background_0_is_resumed_by_the_command_not_the_app(demo):
    hint = fill_hint(demo, "trust", MAIN, status=_status(4, state="stopped"), mode="off")
    assert hint.endswith("; CXRXAI_BACKGROUND=0 keeps the app from resuming it: resume it with "
                         "`python -m cxrxai demo --phase evidence`")
    assert "Resume in the sidebar" not in hint and "restart" not in hint.lower()


def test_no_build_under_background_0_says_the_app_will_not_start_it(demo):
    assert fill_hint(demo, "trust", MAIN, status=None, mode="off") == (
        "the app's background build is off (CXRXAI_BACKGROUND=0): fill it with "
        "`python -m cxrxai demo --phase evidence`")


def test_the_seed_model_points_to_a_model_that_has_it_now(tmp_path):
    with _store(tmp_path, trust_of=(MAIN,)) as s:
        hint = fill_hint(s, "trust", SEED, status=_status(9), mode="on")  # the ResNet has none yet
    assert hint.startswith("it is a second training of 'demo-densenet121'")
    assert hint.endswith("; pick 'demo-densenet121' here, which has it now") and RESNET not in hint


def test_the_seed_model_says_which_model_will_have_it_and_when(demo):
    hint = fill_hint(demo, "trust", SEED, status=_status(4), mode="on")  # nobody has trust yet
    assert hint.endswith("; 'demo-densenet121' will have it: the background build computes it at round 1 "
                         "of 2 (first look), step 5 of 26 (trust of demo-densenet121), after step 4; it is "
                         "at step 4 (maps of demo-densenet121) now")


def test_the_seed_models_own_cam_scores_come_from_its_own_step(demo):
    hint = fill_hint(demo, "localization", SEED, method="gradcam", status=_status(4), mode="on")
    assert "step 8 of 26 (localization (CAMs) of demo-densenet121-seed1)" in hint


def test_the_human_benchmark_of_the_demo_is_the_demos_second_reader(demo):
    plan = [*PLAN[:5], [1, "first look", "second reader", MAIN]]
    hint = fill_hint(demo, "reader", MAIN, status=_status(4, plan=plan), mode="on")
    assert hint.startswith("the demo's second reader (hb-synthetic")
    assert "step 6 of 6 (second reader of demo-densenet121)" in hint and "chexpert" not in hint


def test_the_human_benchmark_of_a_users_dataset_names_what_would_fill_it(tmp_path):
    with _store(tmp_path, dataset="nih") as s:
        hint = fill_hint(s, "reader", MAIN, status=None, mode="on")
    assert hint.startswith("this store cannot have it: its datasets (nih) have no second reader's "
                           "annotations, only the reference")
    assert "hb_annotations_test.json" in hint and "demo" not in hint


def test_the_human_benchmark_of_a_dataset_with_second_readers_names_them(tmp_path):
    with _store(tmp_path, dataset="chexpert", readers=("gt", "hb")) as s:
        hint = fill_hint(s, "reader", MAIN, status=None, mode="on")
    assert hint.startswith("the second readers of this store's annotations (chexpert: hb) fill it")


def test_a_precompute_writing_the_store_is_named(tmp_path):
    with _store(tmp_path, dataset="nih") as s:
        status = {"pid": 1, "phase": "precompute (local engine)", "state": "running", "running": True,
                  "stage": "Grad-CAM", "done": 3, "total": 9}
        hint = fill_hint(s, "trust", MAIN, status=status, mode="on")
    assert hint.startswith("a precompute (local engine) is writing this store now (Grad-CAM 3/9)")


@pytest.mark.parametrize("status", [
    # as ensure_started writes it when it launches the build
    {"pid": 1, "phase": "evidence", "state": "running", "running": True, "stage": "starting", "done": 0,
     "total": 0},
    # as the build's StatusWriter first writes it, before its plan and its first task
    {"pid": 1, "phase": "evidence", "state": "running", "running": True},
])
def test_a_build_that_is_starting_says_so(demo, status):
    """Before the background build has told its plan: neither "a evidence" nor a task of 0/0."""
    hint = fill_hint(demo, "trust", MAIN, status=status, mode="on")
    assert hint == ("the background build is starting: once it has planned its steps this says which "
                    "computes it; what it computes shows here as it is published")


def test_a_demo_build_without_a_plan_names_its_task(demo):
    """A demo build that counts a task but has told no plan (the quick phase) is not "starting"."""
    status = {"pid": 1, "phase": "quick", "state": "running", "running": True, "stage": "cams", "done": 3,
              "total": 9}
    hint = fill_hint(demo, "trust", MAIN, status=status, mode="on")
    assert hint.startswith("a demo build (quick) is writing this store now (cams 3/9)")


def test_a_stopped_precompute_is_not_what_fills_a_human_benchmark_this_store_cannot_have(tmp_path):
    with _store(tmp_path, dataset="nih") as s:
        status = {"pid": 1, "phase": "precompute (local engine)", "state": "stopped", "running": False,
                  "stage": "Grad-CAM"}
        hint = fill_hint(s, "reader", MAIN, status=status, mode="on")
    assert hint.startswith("this store cannot have it") and "run the same command again" not in hint


def test_evidence_a_second_training_never_gets_is_not_missing_yet(demo):
    from cxrxai.errors import StoreError
    from cxrxai.reports import run_report

    with pytest.raises(StoreError) as err:
        run_report(demo, "trust", SEED)
    assert str(err.value).startswith(f"model {SEED!r} has no trust scores (table trust); it is a second "
                                     "training of 'demo-densenet121'"), err.value


def test_a_demo_model_without_a_second_training_is_told_it_has_no_repeatability(demo):
    from cxrxai.summaries import comparison_hint

    hint = comparison_hint(demo, RESNET)
    assert f"so {RESNET!r} has no repeatability" in hint and "train --seed" not in hint, hint
    assert "train --seed 1" in comparison_hint(demo, MAIN)  # its second seed: the demo build trains it
