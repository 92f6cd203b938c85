"""The viewer's PNG export: what the film viewer shows, at the film's own resolution.

The same layers as :func:`cxrxai.present.film.film_figure`, drawn with the same functions and settings:
the film through its window/level, the map blended with the same colour map, opacity, floor,
scale, smoothing, clip and top-k (pixels the viewer leaves clear stay the film's own grey), each
reader's outline, box and points in that reader's colour from ``film.READER_STYLES``, dashed as
on screen, and the scored segmentation's contour in green. The film occupies the top-left
``height × width`` pixels one for one (a film over :data:`EXPORT_MAX_SIDE` is shrunk to it, and the
legend says so); a colour bar with its scale stands to its right and the legend, wrapped to the
width, below. Pure OpenCV: no browser, no kaleido.
"""

from __future__ import annotations

import cv2
import numpy as np

from ..errors import DataError
from .film import (
    DIVERGING,
    SEGMENTATION_NAME,
    _bar_title,
    blend,
    colorscale,
    display_heat,
    reader_styles,
    window,
)

__all__ = ["EXPORT_MAX_SIDE", "SEGMENTATION_RGB", "film_png"]

#: Longest film side exported one for one; a larger film is shrunk to it (and the legend says so).
EXPORT_MAX_SIDE = 4096
SEGMENTATION_RGB = (0x39, 0xFF, 0x14)
_FONT = cv2.FONT_HERSHEY_SIMPLEX
_ASCII = str.maketrans({"·": "-", "–": "-", "—": "-", "→": "->", "≥": ">=", "≤": "<=", "×": "x", "…": "..."})


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[k:k + 2], 16) for k in (1, 3, 5))


def _text(s: str) -> str:
    """What OpenCV's Hershey font can draw: the viewer's typography in ASCII, anything else '?'."""
    return s.translate(_ASCII).encode("ascii", "replace").decode()


def _outline(rgb: np.ndarray, mask: np.ndarray, colour, dash: str, thick: int) -> None:
    """A mask's outer contours, solid or dashed (every other run of points) like the viewer's line."""
    found, _ = cv2.findContours(np.asarray(mask, np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    if dash == "solid":
        cv2.drawContours(rgb, found, -1, colour, thick, cv2.LINE_8)
        return
    run = 6 * thick
    for c in found:
        for start in range(0, len(c), 2 * run):
            cv2.polylines(rgb, [c[start:start + run]], False, colour, thick, cv2.LINE_8)


def _readers(rgb, masks: dict, boxes, points, f: float, thick: int) -> list[tuple[str, tuple]]:
    """Each reader's outline, boxes and points in its own colour; (legend name, colour) of each."""
    styles = reader_styles({*masks, *(r for r, _ in boxes), *(r for r, _ in points)})
    for reader, (hex_colour, dash, _) in styles.items():
        colour = _rgb(hex_colour)
        if reader in masks:
            m = np.asarray(masks[reader], np.uint8)
            if f != 1:
                m = cv2.resize(m, (rgb.shape[1], rgb.shape[0]), interpolation=cv2.INTER_NEAREST)
            _outline(rgb, m, colour, dash, thick)
        for r, (x, y, w, h) in boxes:
            if r == reader:
                corner = (round((x + w) * f) - 1, round((y + h) * f) - 1)
                cv2.rectangle(rgb, (round(x * f), round(y * f)), corner, colour, thick)
        for r, (x, y) in points:
            if r == reader:
                cv2.drawMarker(rgb, (round(x * f), round(y * f)), colour, cv2.MARKER_TILTED_CROSS, 6 * thick,
                               thick)
    return [(name, _rgb(c)) for c, _, name in styles.values()]


def _colour_bar(height: int, scale: tuple[float, float], *, mode: str, colormap: str, title: str,
                font: float) -> np.ndarray:
    """A vertical colour bar (top = the scale's top) with its ends' values and its title sideways."""
    thick, size = max(1, round(font)), 0.45 * font
    ends = [f"{v:.3g}" for v in scale]
    value_w = max(cv2.getTextSize(t, _FONT, size, thick)[0][0] for t in ends)
    (title_w, title_h), base = cv2.getTextSize(_text(title), _FONT, size, thick)
    ramp_w = max(10, int(14 * font))
    width = 6 + ramp_w + 6 + value_w + 8 + title_h + base + 6
    bar = np.full((height, width, 3), 255, np.uint8)
    stops = DIVERGING if mode == "raw" else colorscale(colormap)
    top, bottom = int(0.1 * height), int(0.9 * height)
    for y in range(top, bottom):
        bar[y, 6:6 + ramp_w] = np.round(_at(stops, 1 - (y - top) / max(1, bottom - top - 1))).astype(np.uint8)
    for text, y in ((ends[1], top + int(12 * font)), (ends[0], bottom)):
        cv2.putText(bar, text, (12 + ramp_w, y), _FONT, size, (0, 0, 0), thick, cv2.LINE_AA)
    label = np.full((title_h + base + 4, title_w + 4, 3), 255, np.uint8)
    cv2.putText(label, _text(title), (2, title_h + 2), _FONT, size, (0, 0, 0), thick, cv2.LINE_AA)
    rotated = cv2.rotate(label, cv2.ROTATE_90_COUNTERCLOCKWISE)[:bottom - top]
    y0, x0 = top + (bottom - top - rotated.shape[0]) // 2, width - rotated.shape[1] - 2
    bar[y0:y0 + rotated.shape[0], x0:x0 + rotated.shape[1]] = rotated
    return bar


def _at(stops: list, v: float) -> tuple[float, float, float]:
    """The colour of a Plotly colour scale at ``v`` in [0, 1] (linear between stops)."""
    pos = [s[0] for s in stops]
    rgb = [tuple(float(c) for c in s[1][4:-1].split(",")) for s in stops]
    return tuple(np.interp(v, pos, [c[k] for c in rgb]) for k in range(3))


def _legend(width: int, entries: list[tuple[str, tuple | None]], font: float) -> np.ndarray:
    """Legend entries (a colour swatch when given) wrapped to ``width`` pixels, on white."""
    thick, line_h = max(1, round(font)), int(22 * font)
    lines: list[tuple[str, tuple | None]] = []
    for text, colour in entries:
        words, current = _text(text).split(), ""
        for word in words:
            trial = f"{current} {word}".strip()
            if current and cv2.getTextSize(trial, _FONT, 0.5 * font, thick)[0][0] > width - int(40 * font):
                lines.append((current, colour))
                current, colour = word, None
            else:
                current = trial
        lines.append((current, colour))
    strip = np.full((line_h * len(lines) + int(10 * font), width, 3), 255, np.uint8)
    for k, (text, colour) in enumerate(lines):
        y = line_h * (k + 1)
        if colour is not None:  # white on white would vanish: a grey-rimmed swatch
            cv2.rectangle(strip, (4, y - int(12 * font)), (4 + int(22 * font), y - 2), colour, -1)
            cv2.rectangle(strip, (4, y - int(12 * font)), (4 + int(22 * font), y - 2), (120, 120, 120), 1)
        cv2.putText(strip, text, (int(32 * font), y), _FONT, 0.5 * font, (0, 0, 0), thick, cv2.LINE_AA)
    return strip


def film_png(image: np.ndarray, saliency: np.ndarray | None = None, *, masks: dict | None = None, boxes=(),
             points=(), segmentation: np.ndarray | None = None, mode: str = "normalized",
             colormap: str = "jet",
             alpha: float = 0.6, floor: float = 0.2, top_k: float | None = None, smooth: bool = False,
             clip: float | None = None, level: tuple[float, float] = (127.5, 255.0), show_map: bool = True,
             otsu: bool = True, legend: tuple[str, ...] = ()) -> np.ndarray:
    """The viewer's picture as RGB (see the module docstring); arguments as :func:`film.film_figure`'s.
    ``legend``: caption lines written above the layers' own entries."""
    h, w = image.shape
    if segmentation is not None and np.shape(segmentation) != (h, w):
        raise DataError(f"a segmentation of shape {np.shape(segmentation)} cannot outline a film of {(h, w)}")
    f = min(1.0, EXPORT_MAX_SIDE / max(h, w))
    size = (max(1, round(h * f)), max(1, round(w * f)))
    grey = window(image, *level)
    if f < 1:
        grey = cv2.resize(grey, (size[1], size[0]), interpolation=cv2.INTER_AREA)
    rgb = np.repeat(grey[..., None], 3, axis=2)
    font, thick = max(0.6, max(size) / 700), max(1, round(max(size) / 500))
    entries = [(line, None) for line in legend]
    if f < 1:
        entries.append((f"film shrunk from {w} x {h} to {size[1]} x {size[0]} px "
                        f"(export limit {EXPORT_MAX_SIDE})", None))
    scale = None
    if saliency is not None and show_map:
        heat, scale = display_heat(saliency, size, mode=mode, smooth=smooth, top_k=top_k, clip=clip)
        rgb = blend(rgb, heat, colormap=colormap, alpha=alpha, floor=floor)
        if otsu and segmentation is not None:
            seg = np.asarray(segmentation, np.uint8)
            if f < 1:
                seg = cv2.resize(seg, (size[1], size[0]), interpolation=cv2.INTER_NEAREST)
            _outline(rgb, seg, SEGMENTATION_RGB, "solid", thick)
            entries.append((SEGMENTATION_NAME, SEGMENTATION_RGB))
    entries += _readers(rgb, masks or {}, list(boxes), list(points), f, thick)
    if scale is not None and scale[1] <= scale[0]:  # as the viewer: say why nothing is coloured
        entries.append(("no positive attribution: Scale raw shows the signed map" if mode != "raw"
                        else "the map is 0 everywhere", None))
    if scale is not None and scale[1] > scale[0]:
        bar = _colour_bar(size[0], scale, mode=mode, colormap=colormap, title=_bar_title(mode, clip, False),
                          font=font)
    else:
        bar = np.full((size[0], 0, 3), 255, np.uint8)
    top = np.hstack([rgb, bar])
    return np.vstack([top, _legend(top.shape[1], entries, font)])
