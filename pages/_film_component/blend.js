// The film's pixels for a display setting, as the server computes them: film_display.window
// then film_display.blend (float32 like NumPy, rounded half to even), the top-k cut as
// display_heat's. Pure functions: the page loads them before film.js, and
// tests/app/test_film_component.py runs them in Node against film_figure's own picture.
// The blend is split in the stages a display click changes: the map's weights (map on, opacity,
// floor, top-k), its colours (colour map) and the grey levels (window/level); `blender` keeps
// each stage's result and recomputes only the stages whose settings changed.
"use strict";

const F = Math.fround;
const LITTLE = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

// NumPy's rounding of a non-negative float32: half to even
function rint(x) {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

// One RGBA pixel (opaque) as the Uint32 the platform's byte order stores it as
function pack(r, g, b) {
  if (LITTLE) return (0xff000000 | (b << 16) | (g << 8) | r) >>> 0;
  return ((r << 24) | (g << 16) | (b << 8) | 0xff) >>> 0;
}

// film_display.window of every grey level: clip((g - lo) * (255 / width), 0, 255), rounded
function windowTable(s) {
  const center = (s.lo + s.hi) / 2, width = Math.max(1, s.hi - s.lo);
  const lo = F(center - width / 2), k = F(255 / width), table = new Float32Array(256);
  for (let g = 0; g < 256; g++) table[g] = rint(Math.min(255, Math.max(0, F(F(g - lo) * k))));
  return table;
}

// The pixels the map colours (those over the floor once the top-k cut is applied), each one's
// weight w and the row of its colour: the LUT's for a map in [0, 1], 0/1 (negative/positive)
// for a signed one. null: nothing coloured (the map off or absent).
function mapWeights(heat, payload, s) {
  if (!s.show_map || heat === null) return null;
  const n = heat.length;
  const cut = String(s.top_k) in payload.cuts ? F(payload.cuts[String(s.top_k)]) : null;
  const kept = (h) => cut === null || Math.abs(h) >= cut;
  let signed = false;
  for (let i = 0; i < n && !signed; i++) signed = heat[i] < 0 && kept(heat[i]);
  const alpha = F(s.alpha * payload.dim), floor = F(s.floor), den = F(Math.max(1e-6, 1 - s.floor));
  const index = new Int32Array(n), weight = new Float32Array(n), row = new Uint8Array(n);
  let m = 0;
  for (let i = 0; i < n; i++) {
    const h = heat[i], mag = kept(h) ? Math.abs(h) : 0;
    if (!(mag > floor)) continue;
    index[m] = i;
    weight[m] = F(alpha * Math.min(1, Math.max(0, F(F(mag - floor) / den))));
    row[m] = signed ? (h > 0 ? 1 : 0) : Math.trunc(F(255 * Math.min(1, mag)));
    m++;
  }
  return {signed, index: index.subarray(0, m), weight: weight.subarray(0, m), row: row.subarray(0, m)};
}

// Each coloured pixel's kept share of the film (1 - w) and its colour times w, per channel
function mapColours(weights, payload, s) {
  if (weights === null) return null;
  const {index, weight, row} = weights, m = index.length;
  const {negative, positive} = payload.signed;
  const palette = weights.signed ? [negative, positive] : payload.luts[s.colormap];
  const keep = new Float32Array(m), tint = new Float32Array(3 * m);
  for (let k = 0; k < m; k++) {
    const w = weight[k], c = palette[row[k]];
    keep[k] = F(1 - w);
    for (let ch = 0; ch < 3; ch++) tint[3 * k + ch] = F(c[ch] * w);
  }
  return {index, keep, tint};
}

// film_display.blend over the windowed film (table: windowTable's) into RGBA bytes
function composite(data, grey, table, colours) {
  const n = grey.length, out = new Uint32Array(data.buffer, data.byteOffset, n);
  const greys = new Uint32Array(256);
  for (let g = 0; g < 256; g++) greys[g] = pack(table[g], table[g], table[g]);
  for (let i = 0; i < n; i++) out[i] = greys[grey[i]];
  if (colours === null) return;
  const {index, keep, tint} = colours;
  for (let k = 0; k < index.length; k++) {
    const i = index[k], g = table[grey[i]], kp = keep[k], t = 3 * k;
    const film = F(g * kp);
    out[i] = pack(rint(F(film + tint[t])), rint(F(film + tint[t + 1])), rint(F(film + tint[t + 2])));
  }
}

// The whole blend for one setting, every stage computed afresh
function blendInto(data, grey, heat, payload, s) {
  composite(data, grey, windowTable(s), mapColours(mapWeights(heat, payload, s), payload, s));
}

// The settings each stage depends on (besides those before it)
const STAGES = {weights: ["show_map", "alpha", "floor", "top_k"], colours: ["colormap"], table: ["lo", "hi"]};

// blendInto for a sequence of settings on one film, recomputing only the stages that changed;
// returns draw(data, s) and the names of the stages the last draw recomputed (draw.redone)
function blender(grey, heat, payload) {
  let last = null, weights = null, colours = null, table = null;
  const draw = (data, s) => {
    const changed = (stage) => last === null || STAGES[stage].some((key) => last[key] !== s[key]);
    const redone = [];
    if (changed("weights")) {
      weights = mapWeights(heat, payload, s);
      redone.push("weights");
    }
    if (redone.length || changed("colours")) {
      colours = mapColours(weights, payload, s);
      redone.push("colours");
    }
    if (changed("table")) {
      table = windowTable(s);
      redone.push("table");
    }
    last = {...s};
    draw.redone = redone;
    composite(data, grey, table, colours);
  };
  return draw;
}

if (typeof module === "object") module.exports = {blendInto, blender, rint, windowTable};
