// The film's pixels for a display setting, as the server computes them: film_display.window
// then film_display.blend (float32 like NumPy, rounded half to even), the top-k cut as
// display_heat's. Pure functions: the page loads them before film.js, and tests/test_film_view.py
// runs them in Node against film_figure's own picture.
"use strict";

const F = Math.fround;

// NumPy's rounding of a non-negative float32: half to even
function rint(x) {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

// film_display.window of every grey level: clip((g - lo) * (255 / width), 0, 255), rounded
function windowTable(s) {
  const center = (s.lo + s.hi) / 2, width = Math.max(1, s.hi - s.lo);
  const lo = F(center - width / 2), k = F(255 / width), table = new Float32Array(256);
  for (let g = 0; g < 256; g++) table[g] = rint(Math.min(255, Math.max(0, F(F(g - lo) * k))));
  return table;
}

// film_display.blend over the windowed film; the top-k cut as display_heat's
function blendInto(data, grey, heat, payload, s) {
  const table = windowTable(s), n = grey.length;
  const on = s.show_map && heat !== null;
  const cut = on && String(s.top_k) in payload.cuts ? F(payload.cuts[String(s.top_k)]) : null;
  const kept = (h) => cut === null || Math.abs(h) >= cut;
  let signed = false;
  if (on) for (let i = 0; i < n && !signed; i++) signed = heat[i] < 0 && kept(heat[i]);
  const alpha = F(s.alpha * payload.dim), floor = F(s.floor), den = F(Math.max(1e-6, 1 - s.floor));
  const lut = payload.luts[s.colormap], pos = payload.signed.positive, neg = payload.signed.negative;
  for (let i = 0, j = 0; i < n; i++, j += 4) {
    const g = table[grey[i]];
    let r = g, gg = g, b = g;
    const h = on ? heat[i] : 0, mag = on && kept(h) ? Math.abs(h) : 0;
    if (mag > floor) {
      const w = F(alpha * Math.min(1, Math.max(0, F(F(mag - floor) / den))));
      const c = signed ? (h > 0 ? pos : neg) : lut[Math.trunc(F(255 * Math.min(1, mag)))];
      const keep = F(1 - w);
      r = rint(F(F(g * keep) + F(c[0] * w)));
      gg = rint(F(F(g * keep) + F(c[1] * w)));
      b = rint(F(F(g * keep) + F(c[2] * w)));
    }
    data[j] = r; data[j + 1] = gg; data[j + 2] = b; data[j + 3] = 255;
  }
}

if (typeof module === "object") module.exports = {blendInto, rint, windowTable};
