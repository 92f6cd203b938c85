"""The split caption names where the thresholds came from as the store records them (a split, a
model card, a file), never a fixed 'chosen on val'."""

from __future__ import annotations

import pandas as pd

from cxrxai.summaries.predictions import split_note


class _Store:
    def __init__(self, thresholds: pd.DataFrame):
        self._thresholds = thresholds

    def prediction_splits(self, model_id):
        return {"test": 4, "val": 4}

    def thresholds(self, model_id):
        return self._thresholds


def _rows(split, method):
    return pd.DataFrame({"label": ["A", "B"], "split": [split, split], "method": [method, method]})


def test_the_threshold_source_is_the_stored_one():
    assert "(thresholds chosen on val)" in split_note(_Store(_rows("val", "f1")), "m", None)
    from_file = split_note(_Store(_rows(None, "file:thr.csv")), "m", None)
    assert "(thresholds from file:thr.csv)" in from_file and "val)" not in from_file
    none = split_note(_Store(_rows(None, "x").iloc[:0]), "m", None)
    assert "thresholds" not in none and none.endswith("(not counted: val 4) — reports evaluate the test split "
                                                      "where there is one.")
