"""A model that called none of its scored positive cases has no true-positive slice: the report says
so with the count and points at the wider slices that do score them; it promises no fill (the cheap
explainers already cover the split: a rerun adds nothing). On a user's own store (tests/app/_user_store.py)."""

from __future__ import annotations

import pytest

from cxrxai.errors import StoreError
from cxrxai.reports import run_report
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
