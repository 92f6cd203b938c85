"""What an explorer panel draws is what is scored (issue 26): the contour the film draws is the
segmentation the IoU beside it was computed from, pixel for pixel, for a stored map and a live
one; a partial map draws no contour and says why; a panel's numbers are its own model's."""

from __future__ import annotations

import cv2
import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from cxrxai.errors import DataError
from cxrxai.explain import OcclusionGrid, native_map
from cxrxai.live import LiveWorker, explain_job
from cxrxai.metrics.localization import iou, otsu_mask
from cxrxai.metrics.registry import score_map
from cxrxai.models.registry import LoadedModel
from cxrxai.models.spec import ModelSpec
from cxrxai.present import overlay
from cxrxai.present.film import SEGMENTATION_NAME, film_figure, film_grid
from cxrxai.present.panel import PanelState, panel_state, reference_truth, score_panel
from cxrxai.store import open_store, write_store

SIZE = 64


def _traced(fig, shape) -> np.ndarray | None:
    """The pixels the film's segmentation contour encloses (its polygons filled), None without one."""
    trace = next((t for t in fig.data if t.name == SEGMENTATION_NAME), None)
    if trace is None:
        return None
    canvas, polygon = np.zeros(shape, np.uint8), []
    for x, y in zip(trace.x, trace.y):
        if x is None:
            cv2.fillPoly(canvas, [np.array(polygon, np.int32)], 1)
            polygon = []
        else:
            polygon.append((round(x), round(y)))
    return canvas.astype(bool)


def _truth() -> np.ndarray:
    truth = np.zeros((SIZE, SIZE), bool)
    truth[8:30, 10:34] = True
    return truth


def _signed_map() -> np.ndarray:
    """An occlusion-like signed map: one positive blob, a strong negative one, weak noise. Otsu on the
    raw signed values splits negative from the rest (a contour over most of the film); on the
    positive part, which is what is scored, it finds the blob."""
    m = np.random.default_rng(3).normal(0, 0.05, (8, 8)).astype(np.float32)
    m[1:4, 1:4] += 1.0
    m[5:8, 5:8] -= 2.0
    return m


def _stored_map(tmp_path) -> np.ndarray:
    """The map as the explorer reads a stored one: written to a store, read back, rebuilt natively."""
    path = tmp_path / "maps.duckdb"
    with write_store(path) as w:
        w.put_maps([{"model_id": "m", "image_id": "i", "label": "Mass", "method": "gradcam", "params": {},
                     "target": "logit", "kind": "cam", "values": _signed_map()}])
    with open_store(path) as s:
        (stored,) = list(s.iter_maps("m", "gradcam", s.map_index(model_id="m").params_key.iloc[0]))
    return native_map(stored)


def _assert_drawn_is_scored(native: np.ndarray, truth: np.ndarray, state: PanelState):
    film = np.full(truth.shape, 90, np.uint8)
    shown = score_panel(state, native, truth)
    traced = _traced(film_figure(film, native, segmentation=shown.mask, floor=0.0), truth.shape)
    # the scoring pipeline's numbers (localization_stage stores segment_and_score's; score_map is its scores)
    stored = score_map(native, truth, prob=state.prob, threshold=state.threshold)
    assert traced is not None and traced.any()
    assert np.array_equal(traced, shown.mask)  # the contour drawn is the scored mask, pixel for pixel
    assert shown.scores["iou"] == iou(traced, truth) == stored["iou"]  # the IoU shown is that mask's
    assert shown.scores == pytest.approx(stored, nan_ok=True)
    grid = film_grid([{"image": film, "saliency": native, "segmentation": shown.mask}], floor=0.0)
    assert np.array_equal(_traced(grid, truth.shape), shown.mask)  # the compare/grid layouts draw the same
    return traced


def test_a_stored_maps_contour_is_the_segmentation_its_iou_was_scored_on(tmp_path):
    native = _stored_map(tmp_path)
    truth = _truth()
    traced = _assert_drawn_is_scored(native, truth, PanelState("m", "i", "Mass", 0.63, 0.30, "TP"))
    raw_signed = otsu_mask(native, truth.shape)  # what the film used to outline: Otsu on the signed map
    assert raw_signed.mean() > 2 * traced.mean() and not np.array_equal(raw_signed, traced)


class _TinyNet(nn.Module):
    """conv → ReLU → conv (the CAM layer) → ReLU → mean → linear: milliseconds per map."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential()
        self.features.add_module("conv", nn.Conv2d(3, 6, 3, padding=1))
        self.features.add_module("relu", nn.ReLU())
        self.features.add_module("cam", nn.Conv2d(6, 5, 3, stride=2, padding=1))
        self.classifier = nn.Linear(5, 2)

    def forward(self, x):
        return self.classifier(torch.relu(self.features(x)).mean(dim=(2, 3)))


@pytest.fixture()
def live_occlusion():
    """A live occlusion job on a tiny net, through the live worker: its coarse partial grid and its
    final one."""
    torch.manual_seed(2)  # a signed map: a quarter of it positive
    spec = ModelSpec(name="tiny", arch="densenet121", labels=("a", "b"), input_size=SIZE,
                     cam_layer="features.cam")
    model = LoadedModel(_TinyNet().eval(), spec, torch.device("cpu"))
    image = torch.randn(1, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(1))
    job = explain_job(model, image, 1, "occlusion", {"patch": 16, "stride": 8, "baseline": "black"},
                      owner="t", case_key=("store", "case"))
    partials, run = [], job.run

    def recording(progress, cancelled):  # every (stage, map) the job streams, partial ones included
        for stage, value in run(progress, cancelled):
            partials.append(value)
            yield stage, value

    job.run = recording
    worker = LiveWorker(cache_size=2)
    try:
        done = worker.submit(job)
        assert done.wait(60) and done.result is not None, done.error
    finally:
        worker.close()
    assert isinstance(done.result, OcclusionGrid) and len(partials) >= 2
    return partials[0].to_map(), done.result.to_map()


def test_a_live_maps_contour_is_the_segmentation_its_iou_was_scored_on(live_occlusion):
    _, final = live_occlusion
    assert final.min() < 0 < final.max()
    traced = _assert_drawn_is_scored(final, _truth(), PanelState("tiny", "case", "b", 0.4, 0.5, "FN"))
    assert not np.array_equal(otsu_mask(final, final.shape), traced)  # not Otsu on the signed map


@pytest.mark.parametrize("partial", ["still computing", "cancelled"])
def test_a_partial_live_map_draws_no_contour_and_says_why(live_occlusion, partial):
    coarse, _ = live_occlusion
    shown = score_panel(PanelState("tiny", "case", "b", 0.4, 0.5, "FN"), coarse, _truth(), partial=partial)
    assert shown.mask is None and not shown.scores
    assert partial in shown.reason and "partial" in shown.caption
    assert shown.caption.startswith("No segmentation")
    fig = film_figure(np.full((SIZE, SIZE), 90, np.uint8), coarse, segmentation=shown.mask, floor=0.0)
    assert _traced(fig, (SIZE, SIZE)) is None  # the partial map is shown, without a contour


def test_a_map_with_nothing_to_segment_draws_no_contour_and_says_why():
    flat = -np.ones((8, 8), np.float32)  # no positive attribution anywhere
    shown = score_panel(PanelState("m", "i", "Mass"), flat, _truth())
    assert shown.mask is None and np.isnan(shown.scores["iou"]) and "segments nothing" in shown.caption


def test_a_segmentation_of_another_size_is_refused_not_misplaced():
    with pytest.raises(DataError, match="cannot outline"):
        film_figure(np.zeros((32, 32), np.uint8), np.ones((4, 4)), segmentation=np.ones((64, 64), bool))
    with pytest.raises(DataError, match="segmentation="):
        overlay.render_case(np.zeros((32, 32), np.uint8), np.ones((4, 4)), mode="otsu")


def test_a_panel_state_is_its_own_models_and_refuses_another_models_table():
    cases = pd.DataFrame({"model_id": ["a", "a"], "image_id": ["i", "i"], "label": ["Mass", "Nodule"],
                          "prob": [0.63, 0.2], "threshold": [0.301, np.nan], "outcome": ["TP", None]})
    assert panel_state(cases, "a", "i", "Mass").decision == "P 0.630 (threshold 0.301) · TP"
    assert "no threshold" in panel_state(cases, "a", "i", "Nodule").decision
    assert panel_state(cases, "a", "j", "Mass").decision == "no Mass prediction of a for this image"
    with pytest.raises(DataError, match="of \\['a'\\] was given for a panel of model 'b'"):
        panel_state(cases, "b", "i", "Mass")


def test_the_reference_readers_mask_is_scored_else_an_empty_one():
    gt = {("Mass", "gt"): _truth(), ("Mass", "r2"): ~_truth()}
    assert np.array_equal(reference_truth(gt, "Mass", (SIZE, SIZE)), _truth())
    assert not reference_truth(gt, "Nodule", (SIZE, SIZE)).any()
