"""A demo case's pixels come from the demo's render cache when it holds that very case, and are
exactly what rendering its spec gives; anything else is rendered (cxrxai/data/cases.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cxrxai.data import cases
from cxrxai.data.demo import cache_files, load_demo
from cxrxai.data.phantom import PhantomConfig, render

CONFIG = PhantomConfig(size=64, n_images=6, split_fractions=(0.5, 0.25, 0.25), seed=3)


@pytest.fixture()
def demo(tmp_path):
    return load_demo(CONFIG, tmp_path, workers=1), {"dataset": "demo", "root": str(tmp_path),
                                                   "config": CONFIG.to_json()}


def _row(spec) -> dict:
    return {"image_id": spec.image_id, "dataset": "demo", "generator_key": spec.to_json()}


def test_a_cached_case_is_read_from_the_render_cache_and_is_its_render(demo, monkeypatch):
    data, dataset = demo
    expected = [render(spec, CONFIG).image for spec in data.specs]
    monkeypatch.setattr(cases, "render", lambda *_: pytest.fail("rendered a case the cache holds"))
    for spec, pixels in zip(data.specs, expected):
        got = cases.case_image(_row(spec), dataset)
        assert got.dtype == np.uint8 and np.array_equal(got, pixels), spec.image_id


def test_a_case_the_cache_does_not_hold_is_rendered(demo, tmp_path):
    data, dataset = demo
    other = dataclasses.replace(data.specs[2], seed=data.specs[2].seed + 1)  # same id, another case
    assert np.array_equal(cases.case_image(_row(other), dataset), render(other, CONFIG).image)
    cache_files(CONFIG, tmp_path)[0].unlink()  # no cache at all: rendered
    spec = data.specs[4]
    assert np.array_equal(cases.case_image(_row(spec), dataset), render(spec, CONFIG).image)
