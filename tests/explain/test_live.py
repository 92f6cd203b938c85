"""The live worker: one queue, cached results, superseded and cancelled jobs, partial occlusion."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from cxrxai.explain import OcclusionGrid, explain
from cxrxai.live import Job, JobState, LiveWorker, explain_job


@pytest.fixture()
def worker():
    w = LiveWorker(cache_size=2)
    yield w
    w.close()


def _blocking_job(key, owner, gate: threading.Event, started: threading.Event | None = None) -> Job:
    def run(progress, cancelled):
        if started:
            started.set()
        while not gate.wait(0.01):
            if cancelled():
                raise RuntimeError("stopped")
        yield "final", key

    return Job(key=(key,), owner=owner, run=run)


def test_occlusion_job_yields_the_coarse_grid_then_the_exact_map(worker, tiny_net, image):
    params = {"patch": 8, "stride": 4, "baseline": "black"}
    job = worker.submit(explain_job(tiny_net, image, 1, "occlusion", params, owner="a", case_key=("s", "c1")))
    assert job.wait(30) and job.state == JobState.DONE, job.error
    assert isinstance(job.result, OcclusionGrid)
    expected = explain(tiny_net, image, 1, "occlusion", **params)
    np.testing.assert_allclose(job.result.to_map(), expected, atol=1e-5)
    assert job.progress[0] == job.progress[1] > 0 and job.seconds is not None


def test_identical_request_is_served_from_the_cache(worker, tiny_net, image):
    make = lambda: explain_job(tiny_net, image, 0, "gradcam", {}, owner="a", case_key=("s", "c1"))  # noqa: E731
    first = worker.submit(make())
    assert first.wait(30) and first.state == JobState.DONE
    assert worker.submit(make()) is first
    other = worker.submit(explain_job(tiny_net, image, 2, "gradcam", {}, owner="a", case_key=("s", "c1")))
    assert other is not first and other.wait(30)


def test_a_viewers_newer_request_supersedes_its_queued_one_but_not_others(worker):
    gate, started = threading.Event(), threading.Event()
    running = worker.submit(_blocking_job("running", "x", gate, started))
    assert started.wait(5)
    old = worker.submit(_blocking_job("old", "viewer", gate))
    someone_else = worker.submit(_blocking_job("else", "other", gate))
    new = worker.submit(_blocking_job("new", "viewer", gate))
    assert old.state == JobState.CANCELLED and old.wait(0)
    assert worker.queue_length() == 2
    gate.set()
    for job in (running, someone_else, new):
        assert job.wait(5) and job.state == JobState.DONE
    assert new.result == "new"


def test_polling_the_running_job_never_queues_a_second_copy(worker):
    """A page re-submits its request on every poll; the running job must answer it."""
    gate, started = threading.Event(), threading.Event()
    running = worker.submit(_blocking_job("map", "viewer", gate, started))
    assert started.wait(5)
    for _ in range(3):
        assert worker.submit(_blocking_job("map", "viewer", gate)) is running
    assert worker.queue_length() == 0
    gate.set()
    assert running.wait(5) and running.state == JobState.DONE


def test_a_viewers_newer_request_cancels_its_running_one(worker):
    """A presenter moving the stride slider gets the new setting without waiting out the old."""
    gate, started = threading.Event(), threading.Event()
    old = worker.submit(_blocking_job("stride16", "viewer", gate, started))
    assert started.wait(5)
    new = worker.submit(_blocking_job("stride12", "viewer", gate))
    assert old.wait(5) and old.state == JobState.CANCELLED
    gate.set()
    assert new.wait(5) and new.state == JobState.DONE and new.result == "stride12"


def test_cancel_stops_a_running_job_and_keeps_the_worker_alive(worker, tiny_net, image):
    gate, started = threading.Event(), threading.Event()
    job = worker.submit(_blocking_job("slow", "a", gate, started))
    assert started.wait(5)
    job.cancel()
    assert job.wait(5) and job.state == JobState.CANCELLED
    after = worker.submit(explain_job(tiny_net, image, 0, "gradcam", {}, owner="a", case_key=("s", "c2")))
    assert after.wait(30) and after.state == JobState.DONE


def test_a_failing_job_reports_its_error(worker, tiny_net, image):
    job = worker.submit(explain_job(tiny_net, image, 0, "occlusion", {"patch": 99}, owner="a", case_key=("s", "c3")))
    assert job.wait(30) and job.state == JobState.FAILED
    assert "ExplainerError" in job.error and "does not fit" in job.error


def test_close_cancels_queued_work_and_refuses_more(tiny_net, image):
    w = LiveWorker()
    gate, started = threading.Event(), threading.Event()
    running = w.submit(_blocking_job("running", "a", gate, started))
    assert started.wait(5)
    queued = w.submit(_blocking_job("queued", "b", gate))
    w.close(timeout=5)
    assert running.state == JobState.CANCELLED and queued.state == JobState.CANCELLED
    with pytest.raises(RuntimeError, match="closed"):
        w.submit(_blocking_job("late", "c", gate))


@pytest.fixture()
def process_worker():
    w = LiveWorker(process=True)
    yield w
    w.close()


@pytest.mark.slow
def test_a_process_worker_computes_the_same_maps_and_survives_its_child(process_worker, tiny_model_path):
    """The app's worker computes in a child process: same maps, progress, partial results,
    cancellation; a killed child fails its job clearly and is replaced."""
    from cxrxai.models.registry import load
    from cxrxai.models.spec import preprocess

    model = load(tiny_model_path)
    grey = (np.random.default_rng(0).random((96, 96)) * 255).astype(np.uint8)
    x = preprocess(grey, model.spec)
    params = {"patch": 16, "stride": 8, "baseline": "black"}
    job = process_worker.submit(explain_job(model, x, 1, "occlusion", params, owner="a", case_key=("s", "p1"),
                                            weights_path=str(tiny_model_path)))
    assert job.wait(120) and job.state == JobState.DONE, job.error
    assert job.progress[0] == job.progress[1] > 0
    np.testing.assert_allclose(job.result.to_map(), explain(model, x, 1, "occlusion", **params), atol=1e-5)

    slow = process_worker.submit(explain_job(model, x, 0, "occlusion", {"patch": 8, "stride": 2}, owner="a",
                                             case_key=("s", "p2"), weights_path=str(tiny_model_path)))
    while slow.state == JobState.QUEUED:
        slow.wait(0.01)
    slow.cancel()
    assert slow.wait(60) and slow.state == JobState.CANCELLED

    doomed = process_worker.submit(explain_job(model, x, 2, "occlusion", {"patch": 8, "stride": 2}, owner="b",
                                               case_key=("s", "p3"), weights_path=str(tiny_model_path)))
    while doomed.progress[0] == 0 and not doomed.finished:
        doomed.wait(0.01)
    process_worker._child._proc.kill()
    assert doomed.wait(60) and doomed.state == JobState.FAILED and "process ended" in doomed.error
    after = process_worker.submit(explain_job(model, x, 1, "gradcam", {}, owner="b", case_key=("s", "p4"),
                                              weights_path=str(tiny_model_path)))
    assert after.wait(120) and after.state == JobState.DONE, after.error


@pytest.mark.slow
@pytest.mark.parametrize("in_process", [False, True])
def test_a_case_job_is_computed_from_ids_without_loading_the_model_in_the_server(tiny_full_store, in_process):
    """The app sends (store, image id, label, weights path): the map equals the stored case's
    explained here, and with a process worker this process never loads the model."""
    import cxrxai.live.jobs as live
    from cxrxai.data.cases import case_image
    from cxrxai.live import case_job
    from cxrxai.models.registry import load
    from cxrxai.models.spec import preprocess
    from cxrxai.store import open_store

    with open_store(tiny_full_store) as store:
        row = store.models().set_index("model_id").loc["tiny-densenet121"]
        image_id = store.images(split="test")["image_id"].iloc[0]
        image_row = store.image(image_id)
        pixels = case_image(image_row, store.datasets().set_index("dataset").loc[image_row["dataset"]].to_dict())
    live._MODELS.clear()
    worker = LiveWorker(process=not in_process)
    try:
        job = worker.submit(case_job(tiny_full_store, image_id, "Effusion", "occlusion", {"patch": 16, "stride": 16},
                                     model_spec=str(row["spec"]), weights_path=str(row["weights_path"]), owner="a"))
        assert job.wait(120) and job.state == JobState.DONE, job.error
    finally:
        worker.close()
    model = load(row["weights_path"])
    x = preprocess(pixels, model.spec)
    expected = explain(model, x, model.spec.label_index("Effusion"), "occlusion", patch=16, stride=16)
    np.testing.assert_allclose(job.result.to_map(), expected, atol=1e-5)
    assert job.key[1:5] == (str(tiny_full_store), image_id, "Effusion", "occlusion")
    assert (len(live._MODELS) == 1) is in_process  # loaded here only when the job ran in this process


def test_a_warm_job_loads_the_model_once_and_the_process_worker_leaves_the_server_a_core(tiny_model_path, monkeypatch):
    import json
    import os

    import cxrxai.live.jobs as jobs
    from cxrxai.live import warm_job

    spec = json.loads(Path(str(tiny_model_path)).with_suffix(".json").read_text())
    spec_json = json.dumps(spec)
    jobs._MODELS.clear()
    w = LiveWorker()
    try:
        first = w.submit(warm_job(spec_json, str(tiny_model_path)))
        assert first.wait(60) and first.state == JobState.DONE, first.error
        assert len(jobs._MODELS) == 1
        again = w.submit(warm_job(spec_json, str(tiny_model_path)))
        assert again is first  # finished jobs are cached: a second visit does not reload
    finally:
        w.close()
    monkeypatch.delenv("CXRXAI_LIVE_THREADS", raising=False)
    p = LiveWorker(process=True)
    p.close()
    assert p.threads == max(1, (os.cpu_count() or 2) - 1)
    monkeypatch.setenv("CXRXAI_LIVE_THREADS", "3")
    p = LiveWorker(process=True)
    p.close()
    assert p.threads == 3


def test_integrated_gradients_reports_its_batches_and_stops_at_the_next_one_once_cancelled(tiny_net, image):
    from cxrxai.explain import Cancelled, Setting
    from cxrxai.live.jobs import _stages

    ig = Setting.split("ig", {"steps": 64, "internal_batch_size": 8}, spec=tiny_net.spec)
    seen = []
    stages = list(_stages(tiny_net, image, 1, *ig, lambda done, total: seen.append((done, total)), lambda: False))
    # one forward checks the target, then 64 path points 8 per forward
    assert stages[0][0] == "final" and seen[-1] == (9, 9) and len(seen) == 9
    calls = []
    with pytest.raises(Cancelled):
        list(_stages(tiny_net, image, 1, *ig, lambda done, total: calls.append(done), lambda: len(calls) >= 2))
    assert calls == [1, 2]  # no third forward once cancelled
