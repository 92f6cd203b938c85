"""The PNG export is what the viewer shows: same layers, same colours, the film's own resolution."""

from __future__ import annotations

import numpy as np
import pytest

from cxrxai.present import film_png
from cxrxai.present.film import READER_STYLES, blend, display_heat, window


def _rgb(hex_colour: str) -> tuple:
    return tuple(int(hex_colour[k:k + 2], 16) for k in (1, 3, 5))


def _scene(h=300, w=200):
    film = np.tile(np.linspace(0, 255, w, dtype=np.float32), (h, 1)).astype(np.uint8)
    saliency = np.zeros((h, w), np.float32)
    saliency[50:100, 40:90] = 1.0  # the map: one block, nothing elsewhere
    gt, hb = np.zeros((h, w), bool), np.zeros((h, w), bool)
    gt[150:200, 30:100] = True
    hb[160:210, 110:180] = True
    return film, saliency, {"gt": gt, "hb": hb}


def test_the_export_is_the_viewers_picture_at_the_films_own_size():
    film, saliency, masks = _scene()
    level, display = (100.0, 120.0), dict(colormap="jet", alpha=0.6, floor=0.2)
    out = film_png.film_png(film, saliency, masks=masks, segmentation=saliency > 0, level=level,
                            legend=("case · finding · model",), **display)
    assert out.shape[0] > 300 and out.shape[1] > 200  # the film one for one; the bar right, the legend below
    shown, grey = out[:300, :200].astype(int), window(film, *level).astype(int)
    clear = np.ones((300, 200), bool)
    clear[45:105, 35:95] = clear[145:215, 25:185] = False  # the map's block and the readers, with their lines
    assert (shown[clear] == grey[clear][:, None]).all()  # outside the map: the film's own grey, windowed
    heat, _ = display_heat(saliency, (300, 200))
    on_screen = blend(np.repeat(window(film, *level)[..., None], 3, axis=2), heat, **display)
    assert (out[60:90, 50:80] == on_screen[60:90, 50:80]).all()  # inside: the viewer's blend, pixel for pixel
    assert (out[50, 50:80] == film_png.SEGMENTATION_RGB).all()  # the scored contour
    white, yellow = (_rgb(READER_STYLES[k][0]) for k in (0, 1))
    assert (out[150, 40:90] == white).all(axis=-1).all()  # the reference: solid white
    hb_edge, is_yellow = out[160, 115:175], (out[160, 115:175] == yellow).all(axis=-1)
    gaps = grey[160, 115:175][~is_yellow, None]
    assert is_yellow.sum() >= 20 and (hb_edge[~is_yellow] == gaps).all()  # dashed: yellow runs, film between
    bar = out[40:260, 200:].reshape(-1, 3).astype(int)
    assert (np.ptp(bar, axis=1) > 100).sum() > 500  # a coloured colour bar beside the film


def test_a_map_switched_off_exports_the_film_and_a_huge_film_is_shrunk(monkeypatch):
    film, saliency, masks = _scene()
    out = film_png.film_png(film, saliency, show_map=False)
    assert out.shape[1] == 200 and (out[:300, :200] == film[..., None]).all()  # no map, no bar: the film
    monkeypatch.setattr(film_png, "EXPORT_MAX_SIDE", 150)
    small = film_png.film_png(film, saliency, masks=masks)
    assert small.shape[0] > 150 and small[:150, :100].shape == (150, 100, 3)
    with pytest.raises(Exception, match="cannot outline"):
        film_png.film_png(film, saliency, segmentation=np.zeros((10, 10), bool))
