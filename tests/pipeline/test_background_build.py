"""The demo in two phases: the quick one the app opens on, the evidence built in the background.

Pins which stages each phase runs, the evidence sizes (≥ 30 positives per finding, one set of
≥ 20 sweep cases, fidelity on ≥ 50, trust on ≥ 30) and the status file the pages read (progress,
ETA, a killed build). That the evidence phase resumes a quick store and marks it complete is pinned
on the tiny two-model demo of tests/app/test_second_model.py (one build for both).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import pytest

from cxrxai.errors import UnknownNameError
from cxrxai.pipeline import background
from cxrxai.pipeline.demo_plan import EVIDENCE, _plans, demo_stages


def test_the_phases_split_the_build_and_the_evidence_is_sized_as_promised():
    quick = [s.name for s in demo_stages(phase="quick")]
    evidence = [s.name for s in demo_stages(phase="evidence")]
    assert quick == ["predictions", "thresholds", "cams"]
    assert evidence[:3] == ["predictions", "thresholds", "localization (CAMs)"]  # resumed instantly, then scores
    assert {"maps", "occlusion sweep", "localization", "trust", "fidelity", "baselines", "shortcut"} <= set(evidence)
    assert "shortcut" not in quick
    assert [s.name for s in demo_stages()] == [*quick, *evidence[3:]]
    plan, trust, fidelity = _plans(False, EVIDENCE)
    assert {m.method: m.per_label for m in plan.maps} == {"gradientshap": 30, "ig": 30, "occlusion": 30}
    assert (plan.sweep_cases, fidelity.cases, trust.images) == (20, 50, 30)
    with pytest.raises(UnknownNameError, match="quick"):
        demo_stages(phase="fast")


def test_status_reports_progress_and_an_eta_from_the_stages_own_pace(tmp_path):
    now = [1000.0]
    status_file = tmp_path / "s.json"
    writer = background.StatusWriter(status_file, phase="evidence", every_s=0.0, clock=lambda: now[0])
    writer("maps ig", 0, 240)
    now[0] += 20
    writer("maps ig", 10, 240)  # 0.5 per s: 230 left → 460 s
    state = json.loads(status_file.read_text())
    assert (state["stage"], state["done"], state["total"], state["per_s"], state["eta_s"]) == ("maps ig", 10, 240, 0.5, 460.0)
    now[0] += 100
    writer("occlusion sweep 8/8", 0, 20)  # a new stage starts its own clock
    now[0] += 5
    writer("occlusion sweep 8/8", 1, 20)
    state = json.loads(status_file.read_text())
    assert state["per_s"] == pytest.approx(0.2) and state["eta_s"] == pytest.approx(95.0)
    writer.finish()
    assert json.loads(status_file.read_text())["state"] == "finished"


def test_a_running_build_is_never_started_twice_and_a_killed_one_reads_as_stopped(tmp_path):
    store = tmp_path / "demo.duckdb"
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    first = background.ensure_started(store, complete=False, command=sleeper)
    try:
        assert first["running"] and background.read_status(store)["running"]
        again = background.ensure_started(store, complete=False, command=sleeper)
        assert again["pid"] == first["pid"]  # the running build is reported, not started again
    finally:
        os.kill(first["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while background.read_status(store)["running"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert background.read_status(store)["state"] == "stopped"
    assert background.ensure_started(store, complete=True, command=sleeper)["state"] == "stopped"  # nothing to do
    restarted = background.ensure_started(store, complete=False, command=sleeper)  # the next start resumes
    os.kill(restarted["pid"], signal.SIGKILL)
    assert restarted["pid"] != first["pid"]
