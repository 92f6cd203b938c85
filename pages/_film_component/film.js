// The explorer's films in the browser (see pages/_film_view.py and cxrxai/present/film_view.py).
// The figure is the server's (film_figure: one film; film_grid: compare or grid, one per panel),
// drawn by Plotly without its pictures: each film is a <canvas> under its subplot's plot area
// (canvas.js keeps it in line with the axes), so the colour bar, the scored contours, the readers'
// outlines, the titles and hover stay Plotly's, above it. A display click re-blends every film with
// the server's arithmetic (blend.js: only the stages the click changes, into one ImageData per
// film) and paints the canvases; map on/off, contour and colour map hide or recolour the map's
// layers Plotly drew (layers.js: no Plotly redraw, the zoom and the film's place stay). One set of
// controls acts on every film. The toolbar's camera exports the figure with the films as shown.
// The settings go back to Python (debounced) for the server's PNG download and the next figure.
// A new figure opens at the last zoom where it shows the same case(s), or with "Keep zoom" any
// (zoom.js: kept in the tab, so a frame Streamlit mounts anew has it too).
"use strict";

const SETTLE_MS = 600; // the settings reach Python this long after the last display click
const ids = ["show_map", "otsu", "alpha", "floor", "top_k", "colormap", "lo", "hi", "keep_zoom"];
const controls = Object.fromEntries(ids.map((id) => [id, document.getElementById(id)]));
let shown = null; // {rev, figure, payload, config, paper, plot, films: [{trace, xaxis, yaxis, draw, …}]}
let settings = null;
let argsSettings = ""; // the settings Python last sent (applied only when they change)
let lastSent = ""; // the settings this component last sent to Python
let settleTimer = null;
let layersFollowed = false;
let zoomFollowed = false;
let zoomKey = "film"; // the component's key: where its last view is kept (zoom.js)
let clickedAt = null;
let inputAt = null; // Date.now() of the last display click
// applied: films drawn; lastMs: a click to its drawing; values: for each value sent to Python, the
// milliseconds since the last display click (the settle time or more: never one per click)
window.filmStats = {applied: 0, lastMs: null, values: []};
// marks: when the last new figure arrived, was opened (decoded) and was drawn, on the wall clock
// shared with the page (ms since the epoch: the page's and the frame's performance.now() differ)
const wall = () => performance.timeOrigin + performance.now();

function post(type, extra) {
  if (type === "streamlit:setComponentValue") window.filmStats.values.push(Date.now() - inputAt);
  window.parent.postMessage({isStreamlitMessage: true, type, ...extra}, "*");
}

function bytes(b64) {
  const text = atob(b64);
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

// The map's layers for the settings: {indices, visible (per index), bars, colorscale}
function mapLayers(s) {
  const {layers, bars} = shown.payload;
  const indices = [...layers.bar, ...layers.note, ...layers.contour];
  const visible = indices.map((k) => (layers.contour.includes(k) ? s.show_map && s.otsu : s.show_map));
  return {indices, visible, bars: layers.bar, colorscale: bars[s.colormap]};
}

// The figure's traces as Plotly draws them: no pictures (the canvases show the films; an empty
// trace on the same axes in each one's place keeps the indices, and Plotly never decodes or redraws
// a picture), every map layer (layers.js hides those the settings leave out), the colour bar in the
// settings' colour map
function traces(s) {
  const m = mapLayers(s), films = new Set(shown.films.map((f) => f.trace));
  return shown.figure.data.map((trace, k) => {
    const t = films.has(k) ? {type: "scatter", x: [], y: [], hoverinfo: "skip", showlegend: false,
      xaxis: trace.xaxis, yaxis: trace.yaxis} : {...trace};
    if (m.bars.includes(k)) t.marker = {...t.marker, colorscale: m.colorscale};
    return t;
  });
}

async function apply(fresh) {
  if (shown === null) return;
  const s = settings, t0 = performance.now();
  for (const film of shown.films) {
    film.draw(film.image.data, s);
    film.picture.getContext("2d").putImageData(film.image, 0, 0);
  }
  const t1 = performance.now();
  if (fresh) {
    // a copy: Plotly writes its zoom into the layout it is given (the figure's stays the full film);
    // the figure's backgrounds are drawn by the page and the canvas, under Plotly's transparent ones
    const layout = structuredClone(shown.figure.layout);
    await Plotly.react(gd, traces(s), {...layout, paper_bgcolor: CLEAR, plot_bgcolor: CLEAR}, shown.config);
    follow();
    followLayers();
    followZoom();
    await openAtZoom();
  }
  showLayers(mapLayers(s));
  const t2 = performance.now();
  paint();
  const redone = shown.films[0].draw.redone.join("+") || "none";
  // plotly: a new figure drawn by Plotly (and any zoom carried to it), then the map's layers shown
  window.filmStats.parts = {blend: t1 - t0, plotly: t2 - t1, paint: performance.now() - t2, redone};
  // counted in the first task after the next frame (a frame callback runs before its paint): a
  // click's lastMs runs from its event to the film painted
  requestAnimationFrame(() => setTimeout(drawn, 0, fresh));
}

function drawn(fresh) {
  window.filmStats.applied += 1;
  window.filmStats.rev = shown.rev; // which film is drawn (a data click draws another)
  if (clickedAt !== null) window.filmStats.lastMs = performance.now() - clickedAt;
  if (fresh) window.filmStats.marks.drawn = wall();
  clickedAt = null;
  document.body.dataset.applied = String(window.filmStats.applied);
  post("streamlit:setFrameHeight", {height: document.body.scrollHeight});
}

// After every Plotly redraw (a zoom, a legend click), the map's layers as the settings say
function followLayers() {
  if (layersFollowed) return;
  layersFollowed = true;
  gd.on("plotly_afterplot", () => {
    if (shown !== null) showLayers(mapLayers(settings));
  });
}

// The axes' ranges as shown
function shownRanges() {
  const full = gd._fullLayout, ranges = {};
  for (const name of Object.keys(shown.figure.layout).filter((k) => AXIS.test(k) && full[k])) {
    ranges[name] = [...full[name].range];
  }
  return ranges;
}

function recordZoom() {
  if (shown !== null) storeZoom(zoomKey, zoomRecord(shown.figure.layout, shownRanges()));
}

// Every zoom and pan recorded as the component's last view
function followZoom() {
  if (zoomFollowed) return;
  zoomFollowed = true;
  gd.on("plotly_relayout", recordZoom);
}

// A new figure at the last view where that is of the same case(s), or any with "Keep zoom"
// (zoom.js; Plotly kept it already where this frame showed that case); the view it opens at
// recorded as the last
async function openAtZoom() {
  const update = carriedZoom(storedZoom(zoomKey), shown.figure.layout, settings.keep_zoom);
  const now = shownRanges();
  const moved = update && Object.entries(update).some(([name, range]) => {
    const axis = now[name.replace(".range", "")];
    return !axis || range.some((v, i) => Math.abs(v - axis[i]) > SAME * Math.abs(axis[1] - axis[0]));
  });
  if (moved) await Plotly.relayout(gd, update); // recorded by followZoom
  else recordZoom();
}

function showSettings() {
  for (const id of ids) {
    const el = controls[id];
    if (el.type === "checkbox") el.checked = Boolean(settings[id]);
    else el.value = String(settings[id]);
    const out = document.querySelector(`output[for=${id}]`);
    if (out) out.textContent = String(settings[id]);
  }
}

function read(id) {
  const el = controls[id];
  if (el.type === "checkbox") return el.checked;
  if (id === "colormap") return el.value;
  return Number(el.value);
}

function options(select, values, label) {
  if (select.options.length === values.length) return;
  select.replaceChildren(...values.map((v) => new Option(label(v), String(v))));
}

function onInput(event) {
  clickedAt = event.timeStamp;
  inputAt = Date.now();
  const id = event.target.id;
  settings = {...settings, [id]: read(id)};
  if (settings.lo >= settings.hi) {
    if (id === "lo") settings.lo = settings.hi - 1;
    else settings.hi = settings.lo + 1;
  }
  showSettings();
  requestAnimationFrame(() => apply(false));
  clearTimeout(settleTimer);
  settleTimer = setTimeout(() => {
    settleTimer = null;
    lastSent = JSON.stringify(settings);
    post("streamlit:setComponentValue", {value: settings, dataType: "json"});
  }, SETTLE_MS);
}

// One film of the figure: its data decoded once, its blend (blend.js takes the colour maps with
// the film's own data) and buffers made for its size, its canvas
function openFilm(f, p, canvas) {
  const grey = bytes(f.film), heat = f.heat === null ? null : new Float32Array(bytes(f.heat).buffer);
  const picture = document.createElement("canvas");
  picture.width = f.width;
  picture.height = f.height;
  const data = {...f, signed: p.signed, luts: p.luts};
  return {trace: f.trace, xaxis: f.xaxis, yaxis: f.yaxis, draw: blender(grey, heat, data),
    image: new ImageData(f.width, f.height), picture, canvas, smooth: false};
}

// New films (a data click)
function open(args) {
  const p = args.payload, figure = JSON.parse(args.figure), made = canvases(p.films.length);
  const config = {...args.config, modeBarButtonsToRemove: ["toImage"], modeBarButtonsToAdd: [
    {name: "Download the film as shown (PNG)", icon: Plotly.Icons.camera, click: download}]};
  shown = {rev: args.rev, figure, payload: p, config, films: p.films.map((f, k) => openFilm(f, p, made[k])),
    ...backgrounds(figure.layout)};
  stage.style.background = shown.paper;
}

function render(args) {
  zoomKey = args.zoom_key || "film";
  const cuts = new Set(args.payload.films.flatMap((f) => Object.keys(f.cuts).map(Number)));
  options(controls.top_k, [100, ...[...cuts].sort((a, b) => b - a)],
    (v) => (v === 100 ? "all" : `top ${v} %`));
  options(controls.colormap, Object.keys(args.payload.luts), (v) => v);
  // Python's settings are the component's own value coming back (ignored: the user may have
  // clicked since) or new ones (a map of another kind opens at its own floor). Clicks not sent yet
  // (a case clicked within SETTLE_MS of them) are newer than Python's: kept, and sent as due.
  const sent = JSON.stringify(args.settings);
  let changed = false;
  if (sent !== argsSettings) {
    argsSettings = sent;
    if (sent !== lastSent) {
      const kind = settings && args.settings.kind !== settings.kind;
      const floor = kind ? {kind: args.settings.kind, floor: args.settings.floor} : {};
      settings = settleTimer === null ? {...args.settings} : {...settings, ...floor};
      changed = true;
    }
  }
  const fresh = shown === null || shown.rev !== args.rev;
  if (fresh) {
    const received = wall();
    open(args);
    window.filmStats.marks = {received, opened: wall()};
  }
  showSettings();
  if (fresh || changed) apply(fresh);
}

for (const id of ids) controls[id].addEventListener("input", onInput);
window.addEventListener("message", (event) => {
  if (!event.data || event.data.type !== "streamlit:render") return;
  if (event.data.theme) document.body.style.color = event.data.theme.textColor; // the app's theme
  render(event.data.args);
});
post("streamlit:componentReady", {apiVersion: 1});
