// The explorer's film in the browser (see pages/_film_view.py and cxrxai/present/film_view.py).
// The figure is the server's (film_figure); a display click re-blends the film here with the
// server's own arithmetic (float32 like NumPy, round half to even) and redraws it in place with
// Plotly.react on the same uirevision, so the zoom stays and nothing goes to the server. The
// settings go back to Python (debounced) only so that the PNG export is what is on screen.
"use strict";

const SETTLE_MS = 600; // the settings reach Python this long after the last display click
const gd = document.getElementById("film");
const ids = ["show_map", "otsu", "alpha", "floor", "top_k", "colormap", "lo", "hi"];
const controls = Object.fromEntries(ids.map((id) => [id, document.getElementById(id)]));
let shown = null; // {rev, figure, grey, heat, payload}
let settings = null;
let argsSettings = ""; // the settings Python last sent (applied only when they change)
let lastSent = ""; // the settings this component last sent to Python
let settleTimer = null;
let clickedAt = null;
window.filmStats = {applied: 0, lastMs: null};

function post(type, extra) {
  window.parent.postMessage({isStreamlitMessage: true, type, ...extra}, "*");
}

function bytes(b64) {
  const text = atob(b64);
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

function picture(s) {
  const {width, height} = shown.payload;
  const canvas = document.createElement("canvas");
  canvas.width = width;
  canvas.height = height;
  const ctx = canvas.getContext("2d");
  const image = ctx.createImageData(width, height);
  blendInto(image.data, shown.grey, shown.heat, shown.payload, s);
  ctx.putImageData(image, 0, 0);
  return canvas.toDataURL("image/png");
}

async function apply() {
  if (shown === null) return;
  const t0 = performance.now();
  const s = settings, url = picture(s), layers = shown.payload.layers;
  const t1 = performance.now();
  const img = new Image();
  img.src = url;
  await img.decode();
  const t2 = performance.now();
  const data = shown.figure.data.map((trace, k) => {
    const t = {...trace};
    if (k === 0) t.source = url;
    if (layers.bar.includes(k) || layers.note.includes(k)) t.visible = s.show_map;
    if (layers.contour.includes(k)) t.visible = s.show_map && s.otsu;
    if (layers.bar.includes(k)) t.marker = {...t.marker, colorscale: shown.payload.bars[s.colormap]};
    return t;
  });
  // gd.layout carries the user's zoom; the figure's uirevision keeps it through react
  await Plotly.react(gd, data, gd.layout || shown.figure.layout, shown.config);
  window.filmStats.parts = {picture: t1 - t0, decode: t2 - t1, react: performance.now() - t2};
  requestAnimationFrame(() => {
    window.filmStats.applied += 1;
    if (clickedAt !== null) window.filmStats.lastMs = performance.now() - clickedAt;
    clickedAt = null;
    document.body.dataset.applied = String(window.filmStats.applied);
    post("streamlit:setFrameHeight", {height: document.body.scrollHeight});
  });
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
  const id = event.target.id;
  settings = {...settings, [id]: read(id)};
  if (settings.lo >= settings.hi) settings[id === "lo" ? "lo" : "hi"] = id === "lo" ? settings.hi - 1 : settings.lo + 1;
  showSettings();
  requestAnimationFrame(apply);
  clearTimeout(settleTimer);
  settleTimer = setTimeout(() => {
    lastSent = JSON.stringify(settings);
    post("streamlit:setComponentValue", {value: settings, dataType: "json"});
  }, SETTLE_MS);
}

function render(args) {
  const p = args.payload;
  options(controls.top_k, [100, ...Object.keys(p.cuts).map(Number).sort((a, b) => b - a)],
    (v) => (v === 100 ? "all" : `top ${v} %`));
  options(controls.colormap, Object.keys(p.luts), (v) => v);
  // Python's settings are the component's own value coming back (ignored: the user may have
  // clicked since) or new ones (a map of another kind opens at its own floor).
  const sent = JSON.stringify(args.settings);
  let changed = false;
  if (sent !== argsSettings) {
    argsSettings = sent;
    if (sent !== lastSent) {
      settings = {...args.settings};
      changed = true;
    }
  }
  if (shown === null || shown.rev !== args.rev) {
    const heat = p.heat === null ? null : new Float32Array(bytes(p.heat).buffer);
    shown = {rev: args.rev, figure: JSON.parse(args.figure), grey: bytes(p.film), heat, payload: p,
      config: args.config};
    changed = true;
  }
  showSettings();
  if (changed) apply();
}

for (const id of ids) controls[id].addEventListener("input", onInput);
window.addEventListener("message", (event) => {
  if (!event.data || event.data.type !== "streamlit:render") return;
  if (event.data.theme) document.body.style.color = event.data.theme.textColor; // the app's theme
  render(event.data.args);
});
post("streamlit:componentReady", {apiVersion: 1});
