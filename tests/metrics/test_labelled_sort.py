"""One sort of labelled keys gives the sorted values and the ranking's counts exactly."""

from __future__ import annotations

import numpy as np
import pytest

from cxrxai.metrics.labelled_sort import labelled_sort
from cxrxai.postprocess import upsample


def _counted(m: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct lesion score (ascending): lesion pixels at it, background pixels below and at it,
    counted pair by pair."""
    lesion, background = m[t], m[~t]
    values = np.unique(lesion)
    return ((lesion[None, :] == values[:, None]).sum(1), (background[None, :] < values[:, None]).sum(1),
            (background[None, :] == values[:, None]).sum(1))


def _maps(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "upsampled": upsample(np.maximum(rng.normal(size=(5, 4)), 0), (40, 30)),
        "coarse ties": np.round(rng.random((40, 30)), 1).astype(np.float32),
        "negative zeros": np.where(rng.random((40, 30)) < 0.5, np.float32(-0.0), np.float32(1.5)),
        "constant": np.full((40, 30), 0.25, np.float32),
        "integers as float64": rng.integers(0, 4, (40, 30)).astype(float),
    }


@pytest.mark.parametrize("kind", ["upsampled", "coarse ties", "negative zeros", "constant",
                                  "integers as float64"])
@pytest.mark.parametrize("share", [0.02, 0.3, 1.0])
def test_ranks_equal_the_counts_pair_by_pair(kind, share):
    rng = np.random.default_rng(17)
    m = _maps(rng)[kind]
    t = rng.random(m.shape) < share
    t.flat[np.argmin(m)] = True  # a lesion pixel at the smallest score, where ties are read at index 0
    ranks = labelled_sort(m, t).ranks()
    lesion, below, tied = _counted(m, t)
    assert np.array_equal(ranks.lesion, lesion)
    assert np.array_equal(ranks.below, below) and np.array_equal(ranks.tied, tied)
    assert (ranks.n1, ranks.n0) == (int(t.sum()), int((~t).sum()))


@pytest.mark.parametrize("kind", ["upsampled", "coarse ties", "negative zeros", "constant"])
def test_indexing_reads_the_sorted_values(kind):
    rng = np.random.default_rng(19)
    m = _maps(rng)[kind]
    ordered = labelled_sort(m, rng.random(m.shape) < 0.3)
    expected = np.sort(m, axis=None)
    assert ordered.size == m.size
    assert np.array_equal(ordered[np.arange(m.size)], expected)  # −0.0 == +0.0
    assert ordered[0] == expected[0] and ordered[-1] == expected[-1]


def test_a_map_the_keys_cannot_hold_is_left_to_the_plain_sort():
    t = np.zeros((3, 3), bool)
    t[0, 0] = True
    assert labelled_sort(np.full((3, 3), -1e-30, np.float32), t) is None  # a negative value
    assert labelled_sort(np.full((3, 3), 0.1), t) is None  # float64 that float32 rounds
