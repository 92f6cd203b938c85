"""The app on a demo store whose evidence is still being built: it starts the background build
once per server and shows its stage, progress and ETA in the sidebar."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from streamlit.testing.v1 import AppTest
from test_pages import APP  # tests/app is on sys.path (no __init__.py)

from cxrxai.pipeline import background
from cxrxai.pipeline.demo import build_demo
from cxrxai.store.status import process_start


@pytest.fixture(scope="module")
def quick_cache(tmp_path_factory, tiny_model_path, tiny_config):
    """A data cache whose demo store holds the quick phase only."""
    cache = tmp_path_factory.mktemp("cache")
    build_demo(cache / "demo.duckdb", model_path=tiny_model_path, data_dir=tiny_model_path.parent.parent / "phantoms",
               config=tiny_config, phase="quick")
    return cache


def _run(monkeypatch, cache, **env) -> AppTest:
    monkeypatch.setenv("CXRXAI_DATA_CACHE", str(cache))
    monkeypatch.delenv("CXRXAI_STORE", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.run()
    return at


def test_the_sidebar_shows_the_running_builds_stage_progress_and_eta(monkeypatch, quick_cache):
    store = quick_cache / "demo.duckdb"
    background.status_path(store).write_text(json.dumps({
        "pid": os.getpid(), "phase": "evidence", "state": "running", "stage": "maps ig", "done": 12, "total": 240,
        "per_s": 0.1, "eta_s": 2280.0}))
    at = _run(monkeypatch, quick_cache, CXRXAI_BACKGROUND="0")
    assert not at.exception
    bars = at.sidebar.get("progress")
    assert len(bars) == 1 and bars[0].proto.text == "maps ig · 12/240" and bars[0].proto.value == 5  # 12/240 = 5 %
    captions = [c.value for c in at.sidebar.caption]
    assert any(c.startswith("0.10 per s · ETA 38 min 00 s") for c in captions), captions


def test_a_build_that_is_starting_reads_starting_not_a_count_of_nothing(monkeypatch, quick_cache):
    """The status ensure_started writes as it launches the build (no task yet): no "starting · 0/0"."""
    store = quick_cache / "demo.duckdb"
    background.status_path(store).write_text(json.dumps({
        "pid": os.getpid(), "phase": "evidence", "state": "running", "stage": "starting", "done": 0, "total": 0}))
    at = _run(monkeypatch, quick_cache, CXRXAI_BACKGROUND="0")
    assert not at.exception
    assert [b.proto.text for b in at.sidebar.get("progress")] == ["starting"]


def test_the_sidebar_says_which_round_and_step_of_the_whole_build_is_running(monkeypatch, quick_cache):
    """The build's own status file (StatusWriter fed by build_demo's on_stage): round, step of all steps,
    the model, and the task's progress beneath."""
    store = quick_cache / "demo.duckdb"
    writer = background.StatusWriter(background.status_path(store), phase="evidence", every_s=0.0)
    writer.stage({"round": 1, "rounds": 2, "round_name": "first look", "stage": 15, "stages": 42, "name": "maps",
                  "model": "demo-resnet18"})
    writer("first look · demo-resnet18: Integrated Gradients maps", 20, 80)
    at = _run(monkeypatch, quick_cache, CXRXAI_BACKGROUND="0")
    assert not at.exception
    captions = [c.value for c in at.sidebar.caption]
    assert "Round 1 of 2 (first look) · Step 15 of 42: maps of demo-resnet18" in captions, captions
    assert at.sidebar.get("progress")[0].proto.text == "first look · demo-resnet18: Integrated Gradients maps · 20/80"


def test_a_killed_build_under_background_0_is_resumed_by_the_command(monkeypatch, quick_cache):
    """CXRXAI_BACKGROUND=0 forbids the app to start the build: no "restart the app", no Resume button."""
    store = quick_cache / "demo.duckdb"
    background.status_path(store).write_text(json.dumps({"pid": 2**22 + 7, "state": "running", "stage": "maps ig"}))
    at = _run(monkeypatch, quick_cache, CXRXAI_BACKGROUND="0")
    warnings = [w.value for w in at.sidebar.warning]
    assert len(warnings) == 1 and warnings[0].startswith("The background build stopped at maps ig;"), warnings
    assert ("CXRXAI_BACKGROUND=0 keeps the app from resuming it: resume it with `python -m cxrxai demo "
            "--phase evidence`") in warnings[0] and "restart" not in warnings[0].lower()
    assert not [b for b in at.sidebar.button if b.key == "_resume_build"]


def test_a_killed_build_is_resumed_from_the_sidebar_when_the_app_may(monkeypatch, quick_cache):
    store = quick_cache / "demo.duckdb"
    stopped = {"pid": 2**22 + 7, "state": "running", "stage": "maps ig"}
    background.status_path(store).write_text(json.dumps(stopped))
    calls = []
    monkeypatch.setattr(background, "ensure_started",
                        lambda path, *, complete, command=None: calls.append(path))
    from pages import _background

    _background._started.clear()
    at = _run(monkeypatch, quick_cache, CXRXAI_BACKGROUND="1")
    warnings = [w.value for w in at.sidebar.warning]
    assert len(warnings) == 1 and "resume it with Resume in the sidebar" in warnings[0], warnings
    [resume] = [b for b in at.sidebar.button if b.key == "_resume_build"]
    resume.click().run()
    assert calls == [str(store), store]  # the server's start (cached), then Resume's


def test_stop_in_the_sidebar_stops_the_running_build(monkeypatch, quick_cache):
    store = quick_cache / "demo.duckdb"
    build = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        background.status_path(store).write_text(json.dumps({
            "pid": build.pid, "pid_start": process_start(build.pid), "phase": "evidence", "state": "running",
            "stage": "maps ig", "done": 1, "total": 9}))
        at = _run(monkeypatch, quick_cache, CXRXAI_BACKGROUND="0")
        [stop] = [b for b in at.sidebar.button if b.key == "_stop_build"]
        stop.click().run()
        assert build.wait(timeout=10) == -signal.SIGTERM  # asked to stop (a real build stops cleanly)
        assert not at.exception and background.read_status(store)["state"] == "stopped"
        at = _run(monkeypatch, quick_cache, CXRXAI_BACKGROUND="0")
        assert [w.value for w in at.sidebar.warning][0].startswith("The background build stopped at maps ig")
        assert not [b for b in at.sidebar.button if b.key == "_stop_build"]
    finally:
        build.kill()
        build.wait()


def test_an_empty_page_says_when_the_running_build_computes_it(monkeypatch, quick_cache):
    """The Trust page of a store whose build runs: the step that computes the trust scores, from the
    status, not a command to run."""
    store = quick_cache / "demo.duckdb"
    plan = [[1, "", "maps", "tiny-densenet121"], [1, "", "localization", "tiny-densenet121"],
            [1, "", "trust", "tiny-densenet121"], [1, "", "fidelity", "tiny-densenet121"]]
    background.status_path(store).write_text(json.dumps({
        "pid": os.getpid(), "phase": "evidence", "state": "running", "stage": "maps ig", "done": 1,
        "total": 9, "plan": plan, "stages": 4, "rounds": 1, "round": 1, "stage_index": 1, "step": "maps",
        "model": "tiny-densenet121"}))
    monkeypatch.setenv("CXRXAI_DATA_CACHE", str(quick_cache))
    monkeypatch.setenv("CXRXAI_BACKGROUND", "0")
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["store_path"] = str(store)  # kept across the page switch
    at.run()
    at.switch_page("pages/trust.py").run()
    assert not at.exception
    assert [i.value for i in at.info] == [
        "model 'tiny-densenet121' has no trust scores yet (table trust); the background build computes it "
        "at step 3 of 4 (trust of tiny-densenet121), after step 2; it is at step 1 (maps of "
        "tiny-densenet121) now"]


def test_the_app_starts_the_evidence_build_once(monkeypatch, quick_cache):
    calls = []

    def fake(path, *, complete, command=None):
        calls.append((path, complete))
        return None

    monkeypatch.setattr(background, "ensure_started", fake)
    from pages import _background

    _background._started.clear()
    for _ in range(2):  # two visitors of one server
        at = _run(monkeypatch, quick_cache, CXRXAI_BACKGROUND="1")
        assert not at.exception and at.title[0].value == "Overview"
    assert calls == [(str(quick_cache / "demo.duckdb"), False)]  # two sessions, one start


def test_a_precompute_writing_another_store_shows_its_progress_until_it_finishes(monkeypatch, tiny_store, tmp_path):
    import shutil

    store = tmp_path / "nih.duckdb"
    shutil.copy(tiny_store, store)
    status = {"pid": os.getpid(), "phase": "precompute (ray engine)", "state": "running",
              "stage": "Grad-CAM / Grad-CAM++", "done": 32, "total": 128, "per_s": 4.0, "eta_s": 24.0}
    background.status_path(store).write_text(json.dumps(status))
    at = _run(monkeypatch, tmp_path / "cache", CXRXAI_STORE=str(store), CXRXAI_BACKGROUND="1")
    assert not at.exception
    bars = at.sidebar.get("progress")
    assert len(bars) == 1 and bars[0].proto.text == "Grad-CAM / Grad-CAM++ · 32/128" and bars[0].proto.value == 25
    assert any(m.value == "**Precompute (ray engine)** writing this store" for m in at.sidebar.markdown)
    background.status_path(store).write_text(json.dumps({**status, "state": "finished"}))
    at = _run(monkeypatch, tmp_path / "cache", CXRXAI_STORE=str(store), CXRXAI_BACKGROUND="1")
    assert not at.sidebar.get("progress")
