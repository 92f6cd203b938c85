"""The film viewer: a radiograph, its saliency map and every reader's ground truth as one Plotly figure.

Zoom and pan are Plotly's, kept by ``uirevision`` (layout and every axis) keyed on the case only
(:func:`view_revision`): a display change keeps them, a new case resets them — where the host honours
it. Streamlit 1.67's ``st.plotly_chart`` does not: the chart's element id hashes the figure spec,
so any change mounts a new chart at full view (streamlit#5107; a keyed chart keeps its identity
once streamlit PR #16052 ships). The film is shown through a window/level; the map is blended with an
opacity that grows with its value, so values under the display ``floor`` (or outside the top-k %)
are transparent and the film stays readable; a colour bar gives the map's own scale (its positive
part for ``normalized``, a diverging scale around 0 for signed ``raw`` maps). Each reader has its
own colour and dash in the legend; boxes and reader points are drawn; the Otsu segmentation that
IoU was scored on is a named contour — drawn from the mask the caller scored (``segmentation``,
:func:`cxrxai.present.panel.score_panel`), never segmented here. Axes are the film's own pixel
coordinates.

One module though past 300 lines: every trace of the one figure (the film, the map's layers, the
readers' contours, boxes and points, the segmentation) shares its scale factor, its legend and its
``uirevision``, and changes with them; the grid of several films reuses them.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable

import cv2
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..errors import DataError
from .film_display import (
    CAPTUM_OUTLIER_PERCENT,
    DISPLAY_DEFAULTS,
    DISPLAY_MODES,
    DIVERGING,
    blend,
    colorscale,
    display_defaults,
    display_heat,
    window,
)

__all__ = ["CAPTUM_OUTLIER_PERCENT", "DISPLAY_DEFAULTS", "DISPLAY_MODES", "DISPLAY_SIDE", "READER_STYLES",
           "SEGMENTATION_NAME", "blend", "colorscale", "display_defaults", "display_heat", "film_figure",
           "film_grid", "reader_styles", "view_revision", "window"]

#: Longest side of the film as sent to the browser (zooming in shows it at this resolution).
DISPLAY_SIDE = 1024
#: The legend name of the scored segmentation's contour.
SEGMENTATION_NAME = "Otsu segmentation (scored for IoU)"
#: (colour, dash) per reader in drawing order: the reference first.
READER_STYLES = [("#ffffff", "solid"), ("#ffd400", "dash"), ("#00e5ff", "dot"), ("#ff6ec7", "dashdot"),
                 ("#7CFC00", "longdash")]
def view_revision(*case_ids: str) -> str:
    """The ``uirevision`` of a figure of these cases: zoom and pan survive every display change
    (map, scale, opacity, window/level, a map refining) and reset only when a case changes."""
    return "view:" + "|".join(case_ids)


def _png_source(rgb: np.ndarray) -> str:
    ok, buf = cv2.imencode(".png", rgb[..., ::-1])
    if not ok:
        raise DataError("could not encode the overlay as PNG")
    return "data:image/png;base64," + base64.b64encode(buf.tobytes()).decode()


def _contours(mask: np.ndarray, f: float) -> tuple[list, list]:
    """x, y of a mask's outer contours at display factor ``f``, in film pixels (None-separated)."""
    small = (
        cv2.resize(mask.astype(np.uint8), None, fx=f, fy=f, interpolation=cv2.INTER_NEAREST)
        if f < 1
        else mask.astype(np.uint8)
    )
    found, _ = cv2.findContours(small, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    xs, ys, k = [], [], (1 / f if f < 1 else 1.0)
    for c in found:
        pts = c[:, 0, :].astype(float) * k
        xs += [*pts[:, 0], pts[0, 0], None]
        ys += [*pts[:, 1], pts[0, 1], None]
    return xs, ys


def reader_styles(readers: Iterable[str]) -> dict[str, tuple[str, str, str]]:
    """``{reader: (colour, dash, legend name)}`` in drawing order: the reference (gt) first, then
    by name: the viewer and its PNG export give a reader the same colour."""
    ordered = sorted(set(readers), key=lambda r: (r != "gt", r))
    return {r: (*READER_STYLES[k % len(READER_STYLES)], "reference (gt)" if r == "gt" else f"reader {r}")
            for k, r in enumerate(ordered)}


def _reader_traces(masks: dict, boxes: Iterable, points: Iterable, f: float) -> list[go.Scatter]:
    traces, styles = [], reader_styles({*masks, *(r for r, _ in boxes), *(r for r, _ in points)})
    for reader, (color, dash, name) in styles.items():
        line = dict(color=color, width=2, dash=dash)
        if reader in masks:
            xs, ys = _contours(masks[reader], f)
            traces.append(go.Scatter(x=xs, y=ys, mode="lines", line=line, name=name, legendgroup=reader))
        bx, by = [], []
        for r, (x, y, w, h) in boxes:
            if r == reader:
                bx += [x, x + w, x + w, x, x, None]
                by += [y, y, y + h, y + h, y, None]
        if bx:  # a reader's boxes are its mask's outline (a box-only truth): one legend entry
            traces.append(go.Scatter(x=bx, y=by, mode="lines", line=line, legendgroup=reader,
                                     name=f"{name} box", showlegend=reader not in masks))
        pts = [p for r, p in points if r == reader]
        if pts:
            traces.append(
                go.Scatter(
                    x=[p[0] for p in pts],
                    y=[p[1] for p in pts],
                    mode="markers",
                    name=f"{name} point",
                    marker=dict(symbol="x", size=10, color=color),
                    legendgroup=reader,
                )
            )
    return traces


_BAR_TITLE = {"normalized": "map value", "captum": "map value (clipped at 98 %)", "raw": "map value (signed)"}


def _bar_title(mode: str, clip: float | None, per_map: bool) -> str:
    clipped = f" (top: {clip:g}th percentile)" if clip is not None and mode != "captum" else ""
    return _BAR_TITLE[mode] + clipped + (" per map" if per_map else "")


def _segmentation_trace(segmentation: np.ndarray, f: float) -> go.Scatter:
    """The scored segmentation's outer contours in film pixels (traced at display factor ``f``)."""
    xs, ys = _contours(segmentation, f)
    return go.Scatter(x=xs, y=ys, mode="lines", legendgroup="otsu", line=dict(color="#39ff14", width=1.5),
                      name=SEGMENTATION_NAME)


def _map_layers(rgb, saliency, size, f, *, mode, colormap, alpha, floor, top_k, smooth, otsu, clip=None,
                segmentation=None, bar: tuple[float, float] | None = None) -> tuple:
    """The film with the map blended in, the colour bar (or a note when nothing is coloured) and
    the contour of ``segmentation`` (the scored mask, image size) when given and ``otsu`` is on.
    ``bar`` fixes the colour bar's range (a grid's shared 0–1)."""
    heat, (lo, hi) = display_heat(saliency, size, mode=mode, smooth=smooth, top_k=top_k, clip=clip)
    if rgb is not None:  # None: a figure without its picture (see film_figure's ``picture``)
        rgb = blend(rgb, heat, colormap=colormap, alpha=alpha, floor=floor)
    if hi <= lo:  # nothing to colour: say so instead of drawing a meaningless bar
        return rgb, [go.Scatter(x=[0], y=[0], mode="text", textposition="bottom right", showlegend=False,
                                hoverinfo="skip", textfont=dict(color="#ffd400"), text=[
                                    "  no positive attribution: Scale raw shows the signed map"
                                    if mode != "raw" else "  the map is 0 everywhere"])], []
    lo, hi = bar or (lo, hi)
    colour_bar = go.Scatter(
        x=[None],
        y=[None],
        mode="markers",
        showlegend=False,
        hoverinfo="skip",
        marker=dict(
            colorscale=DIVERGING if mode == "raw" else colorscale(colormap),
            cmin=lo,
            cmax=hi,
            color=[lo],
            showscale=True,
            colorbar=dict(
                title=dict(text=_bar_title(mode, clip, bool(bar)), side="right"), thickness=12, len=0.8
            ),
        ),
    )
    contour = [_segmentation_trace(segmentation, f)] if otsu and segmentation is not None else []
    return rgb, [colour_bar], contour


def _check_segmentation(segmentation, shape: tuple[int, int]) -> None:
    if segmentation is not None and np.shape(segmentation) != tuple(shape):
        raise DataError(f"a segmentation of shape {np.shape(segmentation)} cannot outline a film of "
                        f"{tuple(shape)}: score the map at the film's size")


def display_grey(image: np.ndarray) -> tuple[np.ndarray, tuple[int, int], float]:
    """The film on the display grid (longest side at most :data:`DISPLAY_SIDE`, area-averaged),
    not yet windowed, that grid's size and the display factor: the window/level applies to these
    grey levels, here and in the browser."""
    h, w = image.shape
    f = min(1.0, DISPLAY_SIDE / max(h, w))
    size = (max(1, round(h * f)), max(1, round(w * f)))
    grey = cv2.resize(image, (size[1], size[0]), interpolation=cv2.INTER_AREA) if f < 1 else image
    return np.asarray(grey, np.uint8), size, f


def _film(image: np.ndarray, level: tuple[float, float], picture: bool = True
          ) -> tuple[np.ndarray | None, tuple[int, int], float]:
    """The windowed film as RGB on the display grid (None without a ``picture``), that grid's
    size, and the display factor."""
    grey, size, f = display_grey(image)
    return (np.repeat(window(grey, *level)[..., None], 3, axis=2) if picture else None), size, f


def _image_trace(rgb: np.ndarray | None, shape: tuple[int, int], size: tuple[int, int]) -> go.Image:
    """The film's image trace: the picture ``rgb`` (None: none) on the display grid ``size``,
    placed over the image's ``shape``."""
    return go.Image(
        source=None if rgb is None else _png_source(rgb),
        x0=0,
        y0=0,
        dx=shape[1] / size[1],
        dy=shape[0] / size[0],
        hoverinfo="skip",
    )


def _legend_below() -> dict:
    return dict(orientation="h", yanchor="top", y=-0.02, x=0, bgcolor="#262730", font=dict(color="#fafafa"))


def film_figure(
    image: np.ndarray,
    saliency: np.ndarray | None = None,
    *,
    masks: dict | None = None,
    boxes=(),
    points=(),
    mode: str = "normalized",
    colormap: str = "jet",
    alpha: float = 0.6,
    floor: float = 0.2,
    top_k: float | None = None,
    smooth: bool = False,
    clip: float | None = None,
    level: tuple[float, float] = (127.5, 255.0),
    show_map: bool = True,
    otsu: bool = True,
    segmentation: np.ndarray | None = None,
    height: int = 620,
    title: str = "",
    revision: str = "",
    picture: bool = True,
) -> go.Figure:
    """The viewer's figure (see the module docstring). ``masks``: ``{reader: mask}`` of one finding
    at the film's size; ``boxes``: ``(reader, (x, y, w, h))``; ``points``: ``(reader, (x, y))``;
    ``segmentation``: the scored Otsu mask at the film's size, outlined when ``otsu`` (None: no
    contour). ``revision``: :func:`view_revision` of the case (zoom and pan kept while it stays).
    ``picture=False``: the image trace without its picture (the explorer's component paints the
    film itself from :func:`cxrxai.present.film_view.browser_film`'s data), neither blended nor
    encoded: everything else is the same figure."""
    h, w = image.shape
    _check_segmentation(segmentation, image.shape)
    rgb, size, f = _film(image, level, picture)
    traces: list = []
    if saliency is not None and show_map:
        rgb, bar, contour = _map_layers(rgb, saliency, size, f, mode=mode, colormap=colormap, alpha=alpha,
                                        floor=floor, top_k=top_k, smooth=smooth, otsu=otsu, clip=clip,
                                        segmentation=segmentation)
        traces = bar + contour
    fig = go.Figure(
        [_image_trace(rgb, (h, w), size), *traces, *_reader_traces(masks or {}, list(boxes), list(points), f)]
    )
    kept = revision or None  # zoom and pan: kept while the case's revision stays
    fig.update_xaxes(visible=False, range=[0, w], constrain="domain", uirevision=kept)
    fig.update_yaxes(visible=False, range=[h, 0], scaleanchor="x", constrain="domain", uirevision=kept)
    fig.update_layout(height=height, margin=dict(l=0, r=0, t=30 if title else 0, b=0), title=title or None,
                      legend=_legend_below(), dragmode="zoom", plot_bgcolor="black", uirevision=kept)
    return fig


def film_grid(panels: list[dict], *, columns: int = 2, mode: str = "normalized", colormap: str = "jet",
              alpha: float = 0.6, floor: float = 0.2, top_k: float | None = None, smooth: bool = False,
              clip: float | None = None, level: tuple[float, float] = (127.5, 255.0), show_map: bool = True,
              otsu: bool = True, height_per_row: int = 460, revision: str = "", picture: bool = True
              ) -> go.Figure:
    """Several films in one figure: a grid of explainers of one case, or the two sides of a compare.

    Each panel is a dict with ``image``, ``saliency`` (or None), ``title`` and optionally
    ``masks``/``boxes``/``points``/``segmentation`` as for ``film_figure`` and
    ``dim`` (a factor on the opacity:
    the previous map, dimmed, while a new one computes). Every map is normalised the same way
    (``mode``) onto one shared colour bar (0–1, or −1–1 for ``raw``), so a colour means the same in
    every panel. Zoom and pan are shared between panels of the same film size (one case); readers
    and the Otsu contour have one legend entry each, switching them in every panel at once.
    ``picture``: as for ``film_figure``.
    """
    if not panels:
        raise DataError("a film grid needs at least one panel")
    columns = max(1, min(columns, len(panels)))
    rows = -(-len(panels) // columns)
    same_size = len({p["image"].shape for p in panels}) == 1
    fig = make_subplots(
        rows=rows,
        cols=columns,
        subplot_titles=[p.get("title", "") for p in panels],
        shared_xaxes="all" if same_size else False,
        shared_yaxes="all" if same_size else False,
        horizontal_spacing=0.02,
        vertical_spacing=0.1 if rows > 1 else 0.0,
    )
    shared_bar = (-1.0, 1.0) if mode == "raw" else (0.0, 1.0)
    bar_drawn, legend_seen = False, set()
    for k, panel in enumerate(panels):
        row, col = k // columns + 1, k % columns + 1
        image = panel["image"]
        _check_segmentation(panel.get("segmentation"), image.shape)
        rgb, size, f = _film(image, level, picture)
        extra: list = []
        if panel.get("saliency") is not None and show_map:
            rgb, bar, contour = _map_layers(rgb, panel["saliency"], size, f, mode=mode, colormap=colormap,
                                            alpha=alpha * panel.get("dim", 1.0), floor=floor, top_k=top_k,
                                            smooth=smooth, otsu=otsu, clip=clip, bar=shared_bar,
                                            segmentation=panel.get("segmentation"))
            is_bar = bool(bar and bar[0].marker.showscale)
            extra = ([] if is_bar and bar_drawn else bar) + contour
            bar_drawn |= is_bar
        fig.add_trace(_image_trace(rgb, image.shape, size), row=row, col=col)
        for trace in extra + _reader_traces(panel.get("masks") or {}, list(panel.get("boxes", ())),
                                            list(panel.get("points", ())), f):
            if trace.name and trace.showlegend is not False:  # a mask's boxes: under the mask's entry
                trace.showlegend = trace.name not in legend_seen
                legend_seen.add(trace.name)
            fig.add_trace(trace, row=row, col=col)
        h, w = image.shape
        fig.update_xaxes(visible=False, range=[0, w], constrain="domain", uirevision=revision or None,
                         row=row, col=col)
        fig.update_yaxes(
            visible=False,
            range=[h, 0],
            scaleanchor=f"x{k + 1 if k else ''}",
            constrain="domain",
            uirevision=revision or None,
            row=row,
            col=col,
        )
    fig.update_annotations(font_size=12)  # the panels' titles
    fig.update_layout(
        height=height_per_row * rows + 60,
        # pad 0: the black plot background starts at the film, below the panels' titles (Streamlit's
        # chart theme pads it 8 px, into their second line)
        margin=dict(l=0, r=0, t=50, b=0, pad=0),
        legend=_legend_below(),
        dragmode="zoom",
        plot_bgcolor="black",
        uirevision=revision or None,
    )
    return fig
