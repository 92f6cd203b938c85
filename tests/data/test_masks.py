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


def test_masks_by_case_is_case_masks_of_each_image_in_one_pass():
    import pandas as pd

    from cxrxai.data.cases import case_masks, masks_by_case

    drawn = np.zeros((6, 8), bool)
    drawn[1:3, 2:5] = True
    rle = encode_rle(drawn)
    nan = float("nan")

    def row(img, label, reader, kind, rle=None, size=(nan, nan), box=(nan, nan, nan, nan)):
        return {"image_id": img, "label": label, "reader": reader, "kind": kind, "mask_rle": rle,
                "mask_height": size[0], "mask_width": size[1], "x": box[0], "y": box[1], "w": box[2], "h": box[3]}

    ann = pd.DataFrame([
        row("a", "Mass", "gt", "box", box=(0, 0, 2, 2)),  # a mask of the same label and reader wins
        row("a", "Mass", "gt", "mask", rle, (6, 8)),
        row("a", "Nodule", "gt", "box", box=(5, 3, 2, 2)),
        row("a", "Mass", "r2", "point", box=(3, 1, nan, nan)),  # points only: an empty mask
        row("b", "Mass", "gt", "mask", rle, (6, 8)),  # b is 4 × 8: its mask does not fit
        row("c", None, "gt", "box", box=(0, 0, 1, 1)),  # no label: no mask
        row("d", "Mass", "gt", "box", box=(0, 0, 1, 1)),  # no size known: left out
    ])
    sizes = {"a": (6, 8), "b": (4, 8), "c": (6, 8)}
    masks, bad = masks_by_case(ann, sizes)
    assert set(masks) == {"a", "c"} and set(bad) == {"b"}
    assert "(6, 8)" in str(bad["b"]) and masks["c"] == {}
    a = masks["a"]
    assert set(a) == {("Mass", "gt"), ("Nodule", "gt"), ("Mass", "r2")}
    assert (a[("Mass", "gt")] == drawn).all() and not a[("Mass", "r2")].any()
    assert (a[("Nodule", "gt")] == box_mask((5, 3, 2, 2), 6, 8)).all() and a[("Nodule", "gt")].sum() == 4
    theirs = case_masks(ann[ann.image_id == "a"], 6, 8)
    assert theirs.keys() == a.keys() and all((theirs[k] == a[k]).all() for k in a)
    with pytest.raises(DataError, match=r"Mass mask is \(6, 8\), image is \(4, 8\)"):
        case_masks(ann[ann.image_id == "b"], 4, 8)
