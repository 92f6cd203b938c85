"""One sort of a map's pixels, each carrying its ground-truth label: what the Otsu segmentation and
every ranking metric of a map read (:mod:`cxrxai.metrics.otsu`, :mod:`cxrxai.metrics.ranking`).

A non-negative float32 value orders as its bit pattern does (as an unsigned integer), and its sign
bit is 0, so ``bits << 1 | label`` is a 32-bit key that sorts by value first and, among equal
values, puts background (0) before lesion (1). One sort of these keys — as fast as sorting the
values alone — gives the values in order and, for every lesion pixel, how many background pixels
score below it: no search of one class's scores among the other's. Every count is an integer, so
the ranking is exactly the one two separate sorts give.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LabelledSort", "Ranks", "as_float32_if_exact", "labelled_sort"]


@dataclass(frozen=True)
class Ranks:
    """The pixel ranking a map gives a mask, reduced to the lesion's distinct scores (ascending):
    how many lesion pixels score each (``lesion``), and how many background pixels score below it
    (``below``) and exactly it (``tied``); ``n1``, ``n0`` lesion and background pixels."""

    lesion: np.ndarray
    below: np.ndarray
    tied: np.ndarray
    n1: int
    n0: int


def as_float32_if_exact(scores: np.ndarray) -> np.ndarray:
    """``scores`` as float32 when float32 holds every value exactly (an upsampled map always: it
    is float32), else unchanged: the same ranking in half the bytes."""
    if scores.dtype == np.float32:
        return scores
    narrow = scores.astype(np.float32)
    return narrow if np.array_equal(narrow, scores) else scores


class LabelledSort:
    """The pixels of a non-negative float32 map sorted ascending, each with its mask label (see the
    module's notes); made by :func:`labelled_sort`.

    Indexing gives the sorted values (float32, as ``np.sort(m, axis=None)`` would: −0.0 reads
    +0.0, which compares equal), so :func:`~cxrxai.metrics.otsu.otsu_from_sorted` reads it as it
    reads a sorted array; :meth:`ranks` gives the ranking metrics' counts.
    """

    def __init__(self, keys: np.ndarray):
        self.keys = keys
        self.size = keys.size

    def __getitem__(self, index):
        return np.asarray(self.keys[index] >> 1).view(np.float32)[()]

    def ranks(self) -> Ranks:
        """The lesion's distinct scores with their counts, read off the sorted keys: the background
        pixels before a value's first lesion pixel are those below it and, ties coming first, those
        equal to it; where a background pixel does tie (rare in an upsampled map), the start of the
        value's run is searched to tell the two apart."""
        keys = self.keys
        # the keys' lowest bit as bytes: a bool array without an intermediate uint32 one
        at = np.flatnonzero(np.bitwise_and(keys, 1, dtype=np.uint8, casting="unsafe").view(bool))
        values = keys[at]
        distinct = np.empty(values.size, bool)
        distinct[:1] = True
        np.not_equal(values[1:], values[:-1], out=distinct[1:])
        first = np.flatnonzero(distinct)
        start = at[first]
        below = start - first  # background pixels scoring at most the value, for now
        # a background pixel of equal value sorts just before the value's first lesion pixel (at
        # position 0, index −1 reads the largest key, never a smaller background key)
        lowest = values[first]  # each distinct lesion score's key
        tie = np.flatnonzero(keys[start - 1] + 1 == lowest)
        run = np.searchsorted(keys, lowest[tie] - 1, side="left") - first[tie]
        tied = np.zeros_like(below)
        tied[tie] = below[tie] - run
        below[tie] = run
        counts = np.empty_like(first)
        np.subtract(first[1:], first[:-1], out=counts[:-1])
        counts[-1:] = at.size - first[-1:]
        return Ranks(counts, below, tied, int(at.size), int(keys.size - at.size))


def labelled_sort(m: np.ndarray, t: np.ndarray) -> LabelledSort | None:
    """The labelled sort of map ``m`` against bool mask ``t`` (one shape), or ``None`` when ``m``
    has a negative value or a value float32 cannot hold exactly (then sort the values instead)."""
    scores = as_float32_if_exact(np.ascontiguousarray(m))
    if scores.dtype != np.float32 or not scores.min() >= 0:
        return None
    keys = scores.view(np.uint32) << 1  # the sign bit drops out: −0.0 becomes +0.0's key
    np.bitwise_or(keys, np.asarray(t, dtype=bool).view(np.uint8), out=keys)
    keys = keys.ravel()
    keys.sort()
    return LabelledSort(keys)
