// The films' <canvas>es, each under its subplot's plot area and in line with its axes (see film.js).
// A canvas covers its plot area's pixel box (the axes' offset and length) and draws its film's
// picture with the transform that puts pixel (row, column) where the image trace would (x0, dx,
// y0, dy on the axes' current ranges): repainted after every plot, zoom and pan. Enlarged, the
// film's pixels stay square (no smoothing), as Plotly's own image; shrunk, it is smoothed.
// One figure may hold several films (compare, grid): one canvas each, the first one #canvas.
// The export is the figure with each canvas's picture in its image trace.
"use strict";

const CLEAR = "rgba(0,0,0,0)";
const gd = document.getElementById("film");
const stage = document.getElementById("stage");
let following = false;

// The figure's paper and plot colours (its template's where it sets none)
function backgrounds(layout) {
  const template = (layout.template && layout.template.layout) || {};
  return {paper: layout.paper_bgcolor || template.paper_bgcolor || "white",
    plot: layout.plot_bgcolor || template.plot_bgcolor || "white"};
}

// A trace's axis id ("x", "y2") as the layout's key ("xaxis", "yaxis2")
function axisKey(id) {
  return `${id[0]}axis${id.slice(1)}`;
}

// The canvas of the k-th film (#canvas, then #canvas-1, …), made when first needed; any beyond
// `count` (a figure with fewer films) removed
function canvases(count) {
  const made = [...stage.querySelectorAll(":scope > canvas")];
  for (let k = made.length; k < count; k++) {
    const c = document.createElement("canvas");
    c.id = `canvas-${k}`;
    stage.insertBefore(c, gd);
    made.push(c);
  }
  made.slice(count).forEach((c) => c.remove());
  return made.slice(0, count);
}

// An axis range, from a zoom or pan in progress (Plotly's relayouting event) or the axis itself
function range(axis, name, moving) {
  const a = moving && moving[`${name}.range[0]`], b = moving && moving[`${name}.range[1]`];
  return a !== undefined && b !== undefined ? [a, b] : axis.range;
}

// One film on its canvas for its axes' ranges (moving: a relayouting event's, while it lasts)
function paintFilm(film, full, moving) {
  const xname = axisKey(film.xaxis), yname = axisKey(film.yaxis);
  const xa = full[xname], ya = full[yname], dpr = window.devicePixelRatio || 1, screen = film.canvas;
  if (!xa || !ya) {  // no axes for this film in the figure: show nothing rather than an older picture
    film.canvas.width = 0;
    return;
  }
  const width = Math.max(1, Math.round(xa._length * dpr)), height = Math.max(1, Math.round(ya._length * dpr));
  Object.assign(screen.style, {left: `${xa._offset}px`, top: `${ya._offset}px`, width: `${width / dpr}px`,
    height: `${height / dpr}px`});
  if (screen.width !== width) screen.width = width;
  if (screen.height !== height) screen.height = height;
  const ctx = screen.getContext("2d");
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.fillStyle = shown.plot;
  ctx.fillRect(0, 0, width, height);
  const image = shown.figure.data[film.trace], x0 = image.x0 || 0, y0 = image.y0 || 0;
  const dx = image.dx || 1, dy = image.dy || 1;
  const [a, b] = range(xa, xname, moving), [c, d] = range(ya, yname, moving);
  const kx = width / (b - a), ky = height / (d - c);
  // column u (0 at the picture's left edge) at x0 + (u - 1/2) dx; row v at y0 + (v - 1/2) dy;
  // the canvas's x grows with x, its y grows from the range's end down
  const sx = dx * kx, sy = -dy * ky;
  // smoothed where the film is shrunk (the export draws it the same way: zsmooth below)
  film.smooth = Math.abs(sx) < 1 || Math.abs(sy) < 1;
  ctx.imageSmoothingEnabled = film.smooth;
  ctx.setTransform(sx, 0, 0, sy, (x0 - dx / 2 - a) * kx, (d - (y0 - dy / 2)) * ky);
  ctx.drawImage(film.picture, 0, 0);
}

// Every film on its canvas
function paint(moving) {
  const full = gd._fullLayout;
  if (shown === null || !full) return;
  for (const film of shown.films) paintFilm(film, full, moving);
}

// Repaint with every plot, zoom, pan and resize (once Plotly has made gd a plot)
function follow() {
  if (following) return;
  following = true;
  gd.on("plotly_afterplot", () => paint());
  gd.on("plotly_relayout", () => paint());
  gd.on("plotly_relayouting", (moving) => paint(moving));
  window.addEventListener("resize", () => paint()); // the page's zoom changes the device pixels
}

// The figure as shown: each film's picture (the server's image trace with its canvas's picture),
// the map's layers as the settings show them (layers.js), the current zoom of every axis, the colours
function exportFigure() {
  const full = gd._fullLayout, data = [...gd.data], m = mapLayers(settings);
  m.indices.forEach((k, at) => {
    if (!m.visible[at]) data[k] = hiddenLayer(data[k]);
  });
  for (const film of shown.films) {
    data[film.trace] = {...shown.figure.data[film.trace], source: film.picture.toDataURL("image/png"),
      zsmooth: film.smooth ? "fast" : false};
  }
  // the screen's margins: a colour bar hidden with the map keeps its space there (layers.js)
  const {l, r, t, b, p} = full._size;
  const layout = {...gd.layout, paper_bgcolor: shown.paper, plot_bgcolor: shown.plot, width: full.width,
    height: full.height, margin: {l, r, t, b, pad: p, autoexpand: false}};
  for (const name of Object.keys(full).filter((k) => /^[xy]axis\d*$/.test(k))) {
    layout[name] = {...gd.layout[name], range: [...full[name].range]};
  }
  return {data, layout};
}

// The toolbar's camera: the figure as shown, as a PNG (the component's toImageButtonOptions)
function download() {
  const options = {format: "png", filename: "film", ...shown.config.toImageButtonOptions};
  Plotly.downloadImage(exportFigure(), options);
}

// The PNG the camera saves, as a data URL (for tests: `scale` 1 is the screen's pixels)
window.filmExport = (scale) => Plotly.toImage(exportFigure(), {format: "png", scale});
