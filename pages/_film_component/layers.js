// The map's layers as drawn (see film.js): the colour bar, the scored contour and the note shown
// when nothing is coloured. Plotly draws them once per figure, all of them, the colour bar in the
// settings' colour map; map on/off, the contour and the colour map then hide or recolour what
// Plotly drew, without a Plotly redraw (a restyle took 40–60 ms idle, over 100 ms under load, and
// the colour bar's margin moved the film when the map went off: its space is kept instead).
// A hidden contour's legend entry is dimmed, as Plotly dims a trace hidden from its legend.
// Plotly's own data holds the colour scale shown, so that a redraw (zoom, legend click) draws it;
// after a redraw the layers are hidden again as the settings say (film.js's follow).
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const DIMMED = "0.5";

// The elements that draw trace k: its group on the plot (selector ".scatterlayer .trace") or its
// legend entry (".legend .traces")
function traceElements(selector, k) {
  return [...gd.querySelectorAll(selector)].filter((g) => g.__data__ && g.__data__[0]
    && g.__data__[0].trace && g.__data__[0].trace.index === k);
}

// A colour bar's gradient(s) as a Plotly colour scale ([[position, colour], …]): its stops replaced
function recolour(bar, scale) {
  for (const fill of bar.querySelectorAll(".cbfill")) {
    const id = (fill.style.fill || fill.getAttribute("fill") || "").match(/#([^"')]+)/);
    const gradient = id && document.getElementById(id[1]);
    if (!gradient) continue;
    gradient.replaceChildren(...scale.map(([position, colour]) => {
      const stop = document.createElementNS(SVG, "stop");
      stop.setAttribute("offset", `${100 * position}%`);
      stop.setAttribute("stop-color", colour);
      stop.setAttribute("stop-opacity", "1");
      return stop;
    }));
  }
}

// One trace's group shown or hidden, its legend entry dimmed while hidden (Plotly's own opacity
// for it kept aside, for when it is shown again)
function showTrace(k, on) {
  for (const g of traceElements(".scatterlayer .trace", k)) g.style.display = on ? "" : "none";
  for (const entry of traceElements(".legend .traces", k)) {
    if (entry.dataset.opacity === undefined) entry.dataset.opacity = entry.style.opacity;
    entry.style.opacity = on ? entry.dataset.opacity : DIMMED;
  }
}

// The map's layers as the settings say (m: film.js's mapLayers): Plotly's data told the colour
// scale, the colour bars hidden (their space kept) or recoloured, the contour and note shown or not
function showLayers(m) {
  for (const k of m.bars) gd.data[k].marker.colorscale = m.colorscale;
  for (const bar of gd.querySelectorAll(".colorbar")) {
    if (!bar.__data__ || !m.bars.includes(bar.__data__._traceIndex)) continue;
    bar.style.visibility = m.visible[m.indices.indexOf(bar.__data__._traceIndex)] ? "" : "hidden";
    recolour(bar, m.colorscale);
  }
  m.indices.forEach((k, at) => {
    if (!m.bars.includes(k)) showTrace(k, m.visible[at]);
  });
}

// A map layer the settings hide, as the export draws it: a colour bar left out, a contour in the
// legend only (its entry dimmed, as on screen); the export keeps the screen's margins (canvas.js)
function hiddenLayer(trace) {
  return {...trace, visible: trace.marker && trace.marker.showscale ? false : "legendonly"};
}
