"""Scoring at native resolution from one shared sort equals the path it replaced.

The reference is the previous implementation, frozen in ``benchmarks/reference_scoring.py``: every
metric must equal it (AUCs to 1e-9, everything else exactly) and every segmentation pixel for pixel,
on CheXlocalize's own maps and masks and on synthetic maps with every kind of tie.
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from benchmarks.reference_scoring import (
    _reference_iou,
    reference_otsu_mask,
    reference_ranking_metrics,
    reference_scores,
)
from cxrxai.data.masks import decode_rle
from cxrxai.errors import CxrxaiError
from cxrxai.metrics.localization import iou, otsu_mask, ranking_metrics
from cxrxai.metrics.otsu import otsu_level
from cxrxai.metrics.registry import segment_and_score
from cxrxai.postprocess import upsample

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "chexlocalize"
RANKING = ("roc_auc", "pr_auc", "ap")


def _assert_same_scores(got: dict, ref: dict) -> None:
    for k, v in ref.items():
        if isinstance(v, float) and np.isnan(v):
            assert np.isnan(got[k]), k
        elif k in RANKING:
            assert got[k] == pytest.approx(v, abs=1e-9), k
        else:
            assert got[k] == v, k


def _synthetic(kind: str, rng: np.random.Generator) -> np.ndarray:
    return {
        "16x16 CAM": rng.normal(size=(16, 16)),
        "256x256 pixel map": rng.normal(size=(256, 256)) ** 3,
        "coarse ties": np.round(rng.random((12, 9)), 1) - 0.3,
        "two levels": np.kron(rng.integers(0, 2, (4, 4)), np.ones((3, 3))).astype(float),
        "constant": np.full((8, 8), 0.7),
        "all negative": -rng.random((10, 10)),
        "one hot": np.pad(np.ones((1, 1)), ((3, 4), (5, 2))),
    }[kind]


def _truth(kind: str, shape, rng: np.random.Generator) -> np.ndarray:
    t = np.zeros(shape, bool)
    if kind == "box":
        t[shape[0] // 4: shape[0] // 2, shape[1] // 3: 2 * shape[1] // 3] = True
    elif kind == "scattered":
        t = rng.random(shape) < 0.3
    elif kind == "full":
        t[:] = True
    return np.asfortranarray(t)  # column-major, as a decoded RLE mask


@pytest.mark.parametrize("seed", range(3))
def test_otsu_level_equals_opencv_on_every_kind_of_histogram(seed):
    rng = np.random.default_rng(seed)
    images = [rng.integers(0, 256, (40, 50)), rng.integers(0, 3, (40, 50)) * 120,
              np.clip(rng.normal(60, 10, (40, 50)), 0, 255), np.clip(rng.normal(200, 30, (40, 50)), 0, 255),
              np.where(rng.random((40, 50)) < 0.02, 255, rng.integers(0, 5, (40, 50))),
              np.full((40, 50), 9), np.r_[np.zeros(1999), 255].reshape(40, 50)]
    for image in images:
        u8 = image.astype(np.uint8)
        expected, _ = cv2.threshold(u8, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
        assert otsu_level(np.bincount(u8.ravel(), minlength=256)) == int(expected)


@pytest.mark.parametrize("kind", ["16x16 CAM", "256x256 pixel map", "coarse ties", "two levels", "constant",
                                  "all negative", "one hot"])
@pytest.mark.parametrize("variant", ["chexlocalize", "plain"])
def test_otsu_mask_equals_the_previous_one_pixel_for_pixel(kind, variant):
    rng = np.random.default_rng(3)
    m = _synthetic(kind, rng)
    for size in (None, (301, 277)):
        got = otsu_mask(m, size, variant=variant)
        assert got.dtype == bool and np.array_equal(got, reference_otsu_mask(m, size, variant=variant))


@pytest.mark.parametrize("kind", ["16x16 CAM", "256x256 pixel map", "coarse ties", "two levels", "constant",
                                  "all negative", "one hot"])
@pytest.mark.parametrize("truth", ["box", "scattered", "empty", "full"])
def test_every_metric_equals_the_previous_path(kind, truth):
    rng = np.random.default_rng(5)
    m, t = _synthetic(kind, rng), _truth(truth, (413, 359), rng)
    for prob, threshold in ((None, None), (0.2, 0.5), (0.5, 0.5)):
        got = segment_and_score(m, t, prob=prob, threshold=threshold)
        seg, ref = reference_scores(m, t, prob=prob, threshold=threshold)
        assert np.array_equal(got.mask, seg)
        _assert_same_scores(got.scores, ref)


def test_every_metric_equals_the_previous_path_on_chexlocalize_maps_at_native_size():
    """Published Grad-CAM maps against the radiologists' masks (2828 × 2320 and 2022 × 2021 px)."""
    maps = np.load(FIX / "maps.npz")
    segs = json.loads((FIX / "gt_segmentations_val.json").read_text())
    keys = [k for k in maps.files if k.endswith(("|Airspace Opacity", "|Enlarged Cardiomediastinum"))]
    for key in keys:
        film, task = key.split("|")
        mask = decode_rle(segs[film][task]["counts"], *segs[film][task]["size"])
        got = segment_and_score(maps[key], mask)
        seg, ref = reference_scores(maps[key], mask)
        assert np.array_equal(got.mask, seg), key
        _assert_same_scores(got.scores, ref)
    assert len(keys) == 4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ranking_from_one_sort_equals_the_previous_ranking(dtype):
    rng = np.random.default_rng(11)
    truth = rng.random((90, 70)) < 0.2
    for m in (upsample(rng.normal(size=(6, 5)), (90, 70)), np.round(rng.normal(size=(90, 70)), 1),
              rng.normal(size=(90, 70)), np.full((90, 70), 2.0)):
        m = m.astype(dtype)
        got, ref = ranking_metrics(m, truth), reference_ranking_metrics(m, truth)
        _assert_same_scores(got, ref)


def test_iou_from_counts_equals_the_previous_iou():
    rng = np.random.default_rng(13)
    masks = [rng.random((37, 41)) < p for p in (0.0, 0.1, 0.5, 1.0)]
    masks.append(np.asfortranarray(rng.random((37, 41)) < 0.3))
    for p in masks:
        for t in masks:
            for convention in ("true_positive", "full"):
                got, ref = iou(p, t, convention=convention), _reference_iou(p, t, convention=convention)
                assert (np.isnan(got) and np.isnan(ref)) or got == ref


def test_a_map_with_nan_is_refused_as_before():
    m = np.ones((4, 4))
    m[1, 2] = np.nan
    truth = np.zeros((8, 8), bool)
    truth[:4, :4] = True
    with pytest.raises(CxrxaiError) as new:
        segment_and_score(m, truth)
    with pytest.raises(CxrxaiError) as old:
        reference_scores(m, truth)
    assert type(new.value) is type(old.value) and str(new.value) == str(old.value)
