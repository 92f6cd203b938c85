// The films' zoom across new figures (see film.js). Plotly keeps a zoom while a figure's
// uirevision (its case or cases) stays, in one frame only: Streamlit mounts a new frame when the
// widgets above the film change (to or from an explainer with controls: Occlusion, IG), and a new
// case opens at the full film. The last view is kept in the tab's sessionStorage under the
// component's key, each axis's range as fractions of the axis's full range (the film's own extent):
// a new figure of the same case(s) opens at it; with "Keep zoom" (PACS' linked views) a figure of
// other cases too, on the same film-relative region (scaled when the films' sizes differ).
// Pure functions first (tests/app/test_film_zoom.py runs them in Node), then the storage.
"use strict";

const AXIS = /^[xy]axis\d*$/;
const SAME = 1e-9; // fractions closer than this are the same view

// The view of a figure of `layout` whose axes show `ranges` ({xaxis: [a, b], …}): its revision
// and, per axis, the range as fractions of the axis's full range (the layout's own)
function zoomRecord(layout, ranges) {
  const axes = {};
  for (const [name, range] of Object.entries(ranges)) {
    const full = AXIS.test(name) && layout[name] && layout[name].range;
    if (!full) continue;
    const span = full[1] - full[0];
    axes[name] = range.map((v) => (v - full[0]) / span);
  }
  return {revision: layout.uirevision === undefined ? null : layout.uirevision, axes};
}

// The relayout ({"xaxis.range": [a, b], …}) that opens a figure of `layout` at the recorded view:
// a view of the same revision, or with `keep` any; null where that is none or the full film
function carriedZoom(record, layout, keep) {
  const same = record && record.revision !== null && record.revision === layout.uirevision;
  if (!record || !(same || keep)) return null;
  const update = {};
  let zoomed = false;
  for (const [name, fraction] of Object.entries(record.axes)) {
    const full = layout[name] && layout[name].range;
    if (!full) continue;
    update[`${name}.range`] = fraction.map((f) => full[0] + f * (full[1] - full[0]));
    zoomed = zoomed || Math.abs(fraction[0]) > SAME || Math.abs(fraction[1] - 1) > SAME;
  }
  return zoomed ? update : null;
}

const remembered = {}; // where sessionStorage cannot be used (a page opened from a file)

function storedZoom(key) {
  try {
    const text = sessionStorage.getItem(`cxrxai-film-zoom:${key}`);
    return text === null ? null : JSON.parse(text);
  } catch (error) {
    return remembered[key] || null;
  }
}

function storeZoom(key, record) {
  remembered[key] = record;
  try {
    sessionStorage.setItem(`cxrxai-film-zoom:${key}`, JSON.stringify(record));
  } catch (error) {
    // remembered in this frame only
  }
}

if (typeof module === "object") module.exports = {carriedZoom, zoomRecord};
