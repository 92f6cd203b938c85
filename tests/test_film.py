"""The film viewer's figure: what is drawn where, in which colour, on which scale."""

from __future__ import annotations

import base64

import cv2
import numpy as np
import plotly.graph_objects as go
import pytest

from cxrxai.explain.registry import KINDS
from cxrxai.present.film import (
    DISPLAY_DEFAULTS,
    READER_STYLES,
    blend,
    display_defaults,
    display_heat,
    film_figure,
    film_grid,
    view_revision,
    window,
)


def _film(h=300, w=200):
    return np.tile(np.linspace(0, 255, w, dtype=np.float32), (h, 1)).astype(np.uint8)


def _by_name(fig: go.Figure) -> dict:
    return {t.name: t for t in fig.data if t.name}


def test_values_under_the_floor_leave_the_film_untouched():
    film = np.full((4, 4, 3), 100, np.uint8)
    heat = np.array([[0.0, 0.1, 0.2, 0.21], [0.5, 0.9, 1.0, np.nan]] * 2, np.float32)
    out = blend(film, heat, alpha=0.6, floor=0.2)
    untouched = (heat <= 0.2) | np.isnan(heat)
    assert (out[untouched] == 100).all()
    assert (out[~untouched] != 100).any(axis=-1).all()
    # opacity grows with the value: the top value is blended more than one just over the floor
    assert np.abs(out[1, 2].astype(int) - 100).sum() > np.abs(out[0, 3].astype(int) - 100).sum()


def test_top_k_keeps_that_percentage_of_pixels_and_raw_maps_are_signed():
    sal = np.arange(100, dtype=np.float32).reshape(10, 10) - 30
    heat, (lo, hi) = display_heat(sal, (10, 10), mode="normalized", top_k=10)
    assert np.isfinite(heat).sum() == 10 and (lo, hi) == (0.0, 69.0)
    raw, scale = display_heat(sal, (10, 10), mode="raw")
    assert scale == (-69.0, 69.0) and raw.min() == pytest.approx(-30 / 69) and raw.max() == 1.0


def test_window_level_stretches_the_chosen_grey_range():
    assert window(np.array([[0, 100, 125, 150, 255]], np.uint8), 125, 50).tolist() == [[0, 0, 128, 255, 255]]


def test_the_figure_draws_every_reader_box_point_the_otsu_contour_and_a_colour_bar_in_film_pixels():
    film = _film()
    gt = np.zeros(film.shape, bool)
    gt[100:150, 50:120] = True
    hb = np.zeros(film.shape, bool)
    hb[105:145, 55:110] = True
    sal = np.zeros((7, 7), np.float32)
    sal[2:4, 1:4] = 3.0
    segmentation = np.zeros(film.shape, bool)
    segmentation[90:160, 40:130] = True  # the scored Otsu mask (cxrxai.present.panel.score_panel): outlined, never recomputed
    fig = film_figure(film, sal, masks={"gt": gt, "hb": hb}, boxes=[("gt", (50, 100, 70, 50))],
                      points=[("hb", (80.0, 120.0))], floor=0.1, segmentation=segmentation)
    traces = _by_name(fig)
    assert {"reference (gt)", "reader hb", "reference (gt) box", "reader hb point",
            "Otsu segmentation (scored for IoU)"} <= set(traces)
    ref, second = traces["reference (gt)"], traces["reader hb"]
    assert (ref.line.color, ref.line.dash) == READER_STYLES[0] and (second.line.color, second.line.dash) == READER_STYLES[1]
    xs = [x for x in ref.x if x is not None]
    ys = [y for y in ref.y if y is not None]
    assert (min(xs), max(xs), min(ys), max(ys)) == (50, 119, 100, 149)  # the mask's outline, film pixels
    otsu = traces["Otsu segmentation (scored for IoU)"]
    assert (min(x for x in otsu.x if x is not None), max(y for y in otsu.y if y is not None)) == (40, 159)
    box = traces["reference (gt) box"]
    assert list(box.x[:5]) == [50, 120, 120, 50, 50] and list(box.y[:5]) == [100, 100, 150, 150, 100]
    assert list(traces["reader hb point"].x) == [80.0]
    bar = next(t for t in fig.data if isinstance(t, go.Scatter) and t.marker.showscale)
    assert (bar.marker.cmin, bar.marker.cmax) == (0.0, 3.0)  # the map's own scale
    image = next(t for t in fig.data if isinstance(t, go.Image))
    assert image.dx * 200 == pytest.approx(200) and image.dy * 300 == pytest.approx(300)


def test_a_large_film_is_sent_at_display_size_and_signed_maps_get_a_diverging_bar():
    film = _film(2320, 2828)
    fig = film_figure(film, np.random.default_rng(0).normal(size=(16, 16)), mode="raw", otsu=False)
    image = next(t for t in fig.data if isinstance(t, go.Image))
    assert image.dx == pytest.approx(2828 / 1024) and fig.layout.xaxis.range == (0, 2828)
    bar = next(t for t in fig.data if isinstance(t, go.Scatter) and t.marker.showscale)
    assert bar.marker.cmin == -bar.marker.cmax and "signed" in bar.marker.colorbar.title.text
    assert film_figure(film, None).data[0].source.startswith("data:image/png;base64,")


def test_a_map_without_positive_values_says_so_instead_of_drawing_an_empty_scale():
    fig = film_figure(_film(64, 64), -np.ones((8, 8), np.float32))
    assert not any(isinstance(t, go.Scatter) and t.marker.showscale for t in fig.data)
    note = next(t for t in fig.data if isinstance(t, go.Scatter) and t.mode == "text")
    assert "Scale raw shows the signed map" in note.text[0]
    raw = film_figure(_film(64, 64), -np.ones((8, 8), np.float32), mode="raw")
    bar = next(t for t in raw.data if isinstance(t, go.Scatter) and t.marker.showscale)
    assert (bar.marker.cmin, bar.marker.cmax) == (-1.0, 1.0)


def test_a_grid_draws_one_colour_bar_one_legend_and_notes_an_empty_map():
    film = _film(64, 64)
    rng = np.random.default_rng(0)
    gt = np.zeros((64, 64), bool)
    gt[10:30, 10:30] = True
    panels = [{"image": film, "saliency": -np.ones((8, 8), np.float32), "title": "all negative", "masks": {"gt": gt}},
              {"image": film, "saliency": rng.random((8, 8)), "title": "A", "masks": {"gt": gt}},
              {"image": film, "saliency": 100 * rng.random((8, 8)), "title": "B", "masks": {"gt": gt}, "dim": 0.35}]
    fig = film_grid(panels, columns=3, mode="captum")
    bars = [t for t in fig.data if getattr(t, "marker", None) is not None and t.marker.showscale]
    assert len(bars) == 1 and (bars[0].marker.cmin, bars[0].marker.cmax) == (0.0, 1.0)
    notes = [t for t in fig.data if t.type == "scatter" and t.mode == "text"]
    assert len(notes) == 1 and "no positive attribution" in notes[0].text[0]
    readers = [t for t in fig.data if t.name == "reference (gt)"]
    assert len(readers) == 3 and [t.showlegend for t in readers] == [True, False, False]
    assert len({fig.layout[a].matches for a in ("xaxis", "xaxis2", "xaxis3")} - {None}) == 1  # one zoom for all
    different = film_grid([panels[1], {**panels[2], "image": _film(80, 64)}])
    assert different.layout.xaxis2.matches is None  # films of different sizes keep their own zoom


def test_a_grids_panel_titles_clear_the_black_film_frame():
    """The panels' titles end where the plot area begins: no padding between it and its (hidden)
    axes, which Streamlit's chart theme otherwise sets to 8 px, drawing the black plot background
    8 px above the film, under the titles' second line (half hidden on a wide screen)."""
    panels = [{"image": _film(64, 64), "saliency": None, "title": f"Grad-CAM · m<br>case · P 0.9 · {o}"}
              for o in ("TP", "FN")]
    assert film_grid(panels).layout.margin.pad == 0


def test_captum_scale_clips_the_top_two_percent_of_the_mass():
    sal = np.ones((10, 10), np.float32)
    sal[0, 0] = 1000.0  # one outlier holds most of the mass
    heat, (lo, hi) = display_heat(sal, (10, 10), mode="captum")
    assert (lo, hi) == (0.0, 1000.0) and heat[0, 0] == 1.0
    spread = np.arange(1, 101, dtype=np.float32).reshape(10, 10)
    heat, (_, top) = display_heat(spread, (10, 10), mode="captum")
    # sorted cumulative sum 1+…+k ≥ 98 % of 5050 first at k = 99: values above 99 clip to 1
    assert top == 99.0 and heat.max() == 1.0 and heat[0, 0] == np.float32(1 / 99)


def _gradient_map(side=224):
    """A pixel-gradient map as saliency and IG give them: heavy-tailed magnitudes over the whole
    film, five times larger over the lesion (7.7 % of the film), a few pixels holding most of the mass."""
    rng = np.random.default_rng(0)
    g = np.abs(rng.standard_t(2, size=(side, side))).astype(np.float32)
    yy, xx = np.mgrid[:side, :side]
    lesion = (yy - 120) ** 2 + (xx - 80) ** 2 < 35 ** 2
    g[lesion] *= 5
    return g, lesion


def _visible_share(fig: go.Figure, film: np.ndarray) -> float:
    """Share of film pixels the overlay changes by at least 8 grey levels in the figure's image."""
    src = next(t for t in fig.data if isinstance(t, go.Image)).source
    shown = cv2.imdecode(np.frombuffer(base64.b64decode(src.split(",", 1)[1]), np.uint8), cv2.IMREAD_COLOR)
    return float((np.abs(shown.astype(int) - film[..., None].astype(int)).max(-1) >= 8).mean())


def test_each_map_kind_opens_visible_a_sparse_gradient_map_included():
    film = np.full((448, 448), 120, np.uint8)
    grad, _ = _gradient_map()
    opened = film_figure(film, grad, **display_defaults("pixel"))
    assert _visible_share(opened, film) > 0.10  # was 4 % with smoothing and "transparent below 0.2"
    bar = next(t for t in opened.data if isinstance(t, go.Scatter) and t.marker.showscale)
    assert "99th percentile" in bar.marker.colorbar.title.text  # the scale says where its top is
    assert display_defaults("cam") == {"smooth": False, "clip": None, "floor": 0.2}  # CAMs as before
    cam = np.outer(np.hanning(8), np.hanning(8)).astype(np.float32)
    assert film_figure(film, cam, **display_defaults("cam")).to_json() == film_figure(film, cam).to_json()
    assert set(DISPLAY_DEFAULTS) == set(KINDS)  # every kind an explainer can register has defaults


def test_zoom_is_kept_across_display_changes_and_reset_by_a_new_case():
    film, sal = _film(64, 64), np.random.default_rng(1).random((8, 8)).astype(np.float32)
    displays = [{}, {"show_map": False}, {"alpha": 0.2}, {"level": (60.0, 40.0)},
                {"mode": "raw", "floor": 0.5}, {"smooth": True, "clip": 99.0, "top_k": 5, "colormap": "inferno"}]

    def revisions(fig: go.Figure) -> set:
        axes = [fig.layout[a] for a in fig.layout if a.startswith(("xaxis", "yaxis"))]
        return {fig.layout.uirevision, *(a.uirevision for a in axes)}

    case_a = [revisions(film_figure(film, sal, revision=view_revision("case-a"), **d)) for d in displays]
    assert all(r == case_a[0] for r in case_a) and len(case_a[0]) == 1 and None not in case_a[0]
    assert revisions(film_figure(film, sal, revision=view_revision("case-b"))) != case_a[0]
    panels = [{"image": film, "saliency": sal}, {"image": film, "saliency": sal[::-1]}]
    grid = [revisions(film_grid(panels, revision=view_revision("compare", "a", "a"), **d)) for d in displays]
    assert all(r == grid[0] for r in grid) and len(grid[0]) == 1 and None not in grid[0]
    assert revisions(film_grid(panels, revision=view_revision("compare", "a", "b"))) != grid[0]


def test_a_figure_without_its_picture_is_the_same_figure_with_an_empty_image_trace():
    """The explorer's component paints the film itself: its figure skips the blend and the PNG
    and is otherwise the very figure (traces, contour, bar, readers, layout), film or grid."""
    seg, masks = np.zeros((300, 200), bool), {"gt": np.zeros((300, 200), bool)}
    seg[100:150, 50:90] = masks["gt"][90:160, 40:100] = True
    saliency = np.random.default_rng(2).normal(size=(7, 7))
    for build in (lambda **k: film_figure(_film(), saliency, masks=masks, segmentation=seg, **k),
                  lambda **k: film_grid([{"image": _film(), "saliency": saliency, "segmentation": seg},
                                         {"image": _film(120, 90), "saliency": -saliency}], **k)):
        full, bare = build().to_plotly_json(), build(picture=False).to_plotly_json()
        images = [k for k, t in enumerate(full["data"]) if t["type"] == "image"]
        assert images and all(full["data"][k]["source"].startswith("data:image/png") for k in images)
        assert all("source" not in bare["data"][k] for k in images)
        for k in images:
            full["data"][k].pop("source")
        assert bare == full
