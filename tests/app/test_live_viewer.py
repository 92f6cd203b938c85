"""What a rerun of the explorer costs while a live map computes (AppTest, the tiny demo store, a
stand-in worker whose job runs for as long as the test wants).

A click during a live map must not wait on the job, re-score it, re-render its downloads or redraw
a film nothing changed in: each of those made clicks take seconds on 2 cores.
"""

from __future__ import annotations

import io
import json

import cv2
import numpy as np
import pytest
from test_pages import _app  # tests/app is on sys.path (no __init__.py)

import pages._common as ui
import pages._viewer as viewer
from cxrxai.live import JobState
from cxrxai.metrics import registry as metrics
from cxrxai.present import film, film_png, panel
from cxrxai.store import open_store

pytestmark = pytest.mark.slow
MODEL = "tiny-densenet121"
LIVE = {"method_0": "occlusion", "patch_0": 8, "stride_0": 4}  # no stored map: computed live


class StandIn:
    """A live worker that accepts jobs and leaves them running; the test finishes them."""

    def __init__(self):
        self.jobs: dict = {}
        self.waits: list = []

    def submit(self, job):
        if job.key in self.jobs:
            return self.jobs[job.key]
        job.state, job.progress, job.counts = JobState.RUNNING, (3, 12), ("", 3, 12)
        job.wait = lambda timeout=None, job=job: self.waits.append((job.key, timeout)) or False
        self.jobs[job.key] = job
        return job

    def queue_length(self) -> int:
        return 0

    @staticmethod
    def device_name() -> str:
        return "CPU"

    def live(self):
        return [j for j in self.jobs.values() if len(j.key) == 6 and j.key[4] == "occlusion"]  # case_job's key


@pytest.fixture()
def stand_in(monkeypatch):
    worker = StandIn()
    monkeypatch.setattr(ui, "worker", lambda: worker)
    return worker


@pytest.fixture()
def counted(monkeypatch):
    """Calls of the costly steps a rerun may repeat: the film figure, scoring, the PNG overlay."""
    calls = {"film": 0, "score": 0, "png": 0}

    def counting(name, fn):
        def wrapper(*a, **k):
            calls[name] += 1
            return fn(*a, **k)
        return wrapper

    monkeypatch.setattr(film, "film_figure", counting("film", film.film_figure))
    monkeypatch.setattr(panel, "segment_and_score", counting("score", panel.segment_and_score))
    monkeypatch.setattr(film_png, "film_png", counting("png", film_png.film_png))
    return calls


def _positive(store_path) -> str:
    with open_store(store_path) as s:
        table = s.prediction_table(MODEL, split="test")
    return table[(table.label == "Effusion") & (table.ground_truth == 1)].image_id.iloc[0]


def _film_args(at) -> dict:
    """What the explorer sent its film component (pages/_film_view.py)."""
    (view,) = [e for e in at.get("component_instance") if "cxrxai_film" in e.proto.component_name]
    return json.loads(view.proto.json_args)


def _drawn_film(at) -> str:
    """The film the browser draws: its map's values as the component gets them (the figure itself
    carries no picture: the component paints the film from these)."""
    return _film_args(at)["payload"]["films"][0]["heat"]


def test_a_rerun_never_waits_on_a_running_job_and_scores_only_the_finished_map(tiny_full_store, stand_in, counted):
    at = _app(tiny_full_store, "pages/explorer.py", f_finding="Effusion", sel_case=_positive(tiny_full_store), **LIVE)
    assert not at.exception, at.exception
    (job,) = stand_in.live()
    assert stand_in.waits == [(job.key, viewer.FIRST_WAIT_S)]  # a new job: waited on once
    assert at.get("progress") and not at.metric  # progress, and no scores of a map still computing
    job.partial = np.eye(8, dtype=np.float32)  # the first window batches: a partial map is drawn, not scored
    at.run()  # two polls
    at.run()
    assert stand_in.waits == [(job.key, viewer.FIRST_WAIT_S)]  # the running job: never waited on again
    assert counted["score"] == counted["png"] == 0 and not at.metric

    job.result = job.partial = np.outer(np.arange(4.0), np.arange(4.0)).astype(np.float32)
    job.state, job.seconds = JobState.DONE, 0.5
    at.run()
    assert [m.label for m in at.metric] == [metrics.get(n).label for n in ("iou", "hit", "roc_auc")]
    assert any("· recomputed live on CPU in" in c.value for c in at.caption), [c.value for c in at.caption]
    scored = counted["score"]
    at.run()
    at.run()
    assert counted["score"] == scored == 1  # the same map is scored once, whatever the display does
    assert counted["png"] == 0  # the PNG download is rendered when clicked, not on every rerun


def test_the_downloads_render_the_finished_map_when_clicked(tiny_full_store, stand_in, monkeypatch):
    import streamlit

    offered, real = {}, streamlit.download_button

    def recording(label, data, **kwargs):
        kind = kwargs["file_name"].rsplit(".", 1)[-1]
        if kind in ("png", "npy"):  # the map's downloads (the Overview, run first, offers a CSV)
            offered[kind] = (kwargs["file_name"], data, kwargs.get("on_click"))
        return real(label, data, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", recording)
    case = _positive(tiny_full_store)
    at = _app(tiny_full_store, "pages/explorer.py", f_finding="Effusion", sel_case=case, **LIVE)
    assert offered == {}  # nothing to download while the map computes
    (job,) = stand_in.live()
    job.result = job.partial = np.outer(np.arange(4.0), np.arange(4.0)).astype(np.float32)
    job.state, job.seconds = JobState.DONE, 0.5
    at.run()
    assert not at.exception, at.exception
    name, data, click = offered["png"]
    assert name.startswith(f"{case}-Effusion-{MODEL}-occlusion-") and "-patch8-stride4" in name and click == "ignore"
    png = cv2.imdecode(np.frombuffer(data(), np.uint8), cv2.IMREAD_COLOR)
    with open_store(tiny_full_store) as s:
        height, width = (int(s.image(case)[k]) for k in ("height", "width"))
    # the film one for one, its colour bar to the right and its legend below
    assert png.shape[1] > width and png.shape[0] > height
    name, data, click = offered["npy"]
    assert name == offered["png"][0].replace(".png", ".npy") and click == "ignore"
    assert np.array_equal(np.load(io.BytesIO(data())), job.result)


def test_the_films_display_settings_reach_the_server_without_a_redraw(tiny_full_store, stand_in, counted):
    """A display click acts in the browser; its settings come back (debounced) for the PNG export:
    that rerun sends the film component the same figure and draws nothing again."""
    at = _app(tiny_full_store, "pages/explorer.py", f_finding="Effusion", sel_case=_positive(tiny_full_store))
    assert not at.exception, at.exception
    sent, first = _film_args(at), counted["film"]
    assert sent["settings"]["show_map"] is True
    at.session_state["film_0"] = {**sent["settings"], "show_map": False, "alpha": 0.3}  # the component's value
    at.run()
    assert not at.exception, at.exception
    again = _film_args(at)
    assert again["rev"] == sent["rev"] and again["figure"] == sent["figure"]  # nothing to draw again
    assert counted["film"] == first
    assert again["settings"]["show_map"] is False and again["settings"]["alpha"] == 0.3  # the export's


def test_a_partial_map_is_redrawn_at_most_every_few_seconds(tiny_full_store, stand_in, monkeypatch):
    at = _app(tiny_full_store, "pages/explorer.py", f_finding="Effusion", sel_case=_positive(tiny_full_store), **LIVE)
    (job,) = stand_in.live()
    job.partial = np.eye(8, dtype=np.float32)
    at.run()
    first = _drawn_film(at)
    job.partial = np.eye(8, dtype=np.float32)[::-1].copy()  # the next window batch
    monkeypatch.setattr(viewer, "PARTIAL_EVERY_S", 1e9)
    at.run()
    assert _drawn_film(at) == first  # the progress bar moves, the film is kept
    monkeypatch.setattr(viewer, "PARTIAL_EVERY_S", 0.0)
    at.run()
    assert _drawn_film(at) != first
