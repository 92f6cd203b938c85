import numpy as np
import pytest

from cxrxai.data.masks import bounding_box, box_mask, decode_rle, encode_rle
from cxrxai.errors import DataError


def test_rle_round_trip_non_square():
    rng = np.random.default_rng(0)
    mask = rng.random((37, 53)) > 0.7
    assert np.array_equal(decode_rle(encode_rle(mask), 37, 53), mask)


def test_rle_is_column_major_coco():
    # A single pixel at row 1, col 0 of a 2x2 mask: column-major offset 1.
    mask = np.array([[0, 0], [1, 0]], bool)
    from pycocotools import mask as coco

    assert coco.decode({"size": [2, 2], "counts": encode_rle(mask).encode()}).tolist() == [[0, 0], [1, 0]]


def test_box_round_trip():
    mask = np.zeros((10, 12), bool)
    mask[2:5, 3:9] = True
    box = bounding_box(mask)
    assert box == (3, 2, 6, 3)
    assert np.array_equal(box_mask(box, 10, 12), mask)


def test_box_mask_clips_to_the_image():
    assert box_mask((-5, -5, 8, 8), 4, 4).sum() == 9


@pytest.mark.parametrize("bad", [np.zeros((2, 2, 2)), np.array([[0, 2]])])
def test_bad_masks_are_refused(bad):
    with pytest.raises(DataError):
        encode_rle(bad)


def test_empty_mask_has_no_box():
    with pytest.raises(DataError, match="empty"):
        bounding_box(np.zeros((3, 3), bool))
