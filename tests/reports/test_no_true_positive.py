"""A model that called none of its scored positive cases has no true-positive slice: the report says
so with the count and points at the wider slices that do score them; it promises no fill (the cheap
explainers already cover the split: a rerun adds nothing). On a user's own store (tests/app/_user_store.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from cxrxai.errors import StoreError, UnknownNameError
from cxrxai.reports import run_report
from cxrxai.reports._cases import localization_cases, no_region
from cxrxai.store import open_store
from tests.app._user_store import MODEL, POSITIVE, user_store


def test_no_true_positive_says_the_model_called_none_of_its_positives(tmp_path):
    path = user_store(tmp_path / "user.duckdb", missed=POSITIVE)
    store = open_store(path)
    with pytest.raises(StoreError) as err:
        run_report(store, "explainers", MODEL)
    text = str(err.value)
    assert f"predicted none of the {len(POSITIVE)} ground-truth-positive cases" in text
    assert "slice=positive or slice=all" in text
    assert "--split all" in text and "fill it with" not in text
    table = run_report(store, "explainers", MODEL, slice="positive")
    assert not table.empty


class _Regions:
    """A store that answers only which annotations it holds."""

    def __init__(self, image_ids):
        self.image_ids = image_ids

    def annotations(self, *, reader=None):
        return pd.DataFrame({"image_id": self.image_ids, "reader": reader})


def test_regions_elsewhere_are_not_called_labels_only():
    """Maps scored on images without a box (NIH's boxes are on 880 of its images): the store has
    regions, so the sentence says they are not among the scored pairs, not that the data has none."""
    loc = pd.DataFrame({"image_id": ["a", "b"], "label": ["Nodule", "Nodule"], "gt_positive": [False, False]})
    text = no_region(_Regions(["c", "d", "d"]), MODEL, loc)
    assert "2 scored (image, finding) pairs" in text and "store's 2 images with a box or mask" in text
    assert "labels only" not in text
    assert "labels only" in no_region(_Regions([]), MODEL, loc)
    assert no_region(_Regions([]), MODEL, loc.assign(gt_positive=[True, False])) is None


def test_an_unknown_params_key_names_the_stored_ones(tmp_path):
    store = open_store(user_store(tmp_path / "user.duckdb"))
    with pytest.raises(UnknownNameError, match="allowed: "):
        localization_cases(store, MODEL, method="gradcam", params_key="patch=99")
