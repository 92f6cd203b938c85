// The explorer's case grid in the browser (see pages/_case_grid.py; rows.js prints and orders the
// cells). Only the rows in view are in the page (two spacer rows stand for the others), so
// thousands of cases scroll as fast as ten. A click on a row highlights it and sends its
// (image_id, label) pair at once; a click on a header sorts by that column (again: reversed) and
// sends the sort; Up/Down move the selection when the grid has focus. The case Python shows (a
// click, the Previous/Next buttons, the URL, another page) is highlighted and scrolled into view.
"use strict";

const OVERSCAN = 8; // rows drawn above and below the view
const box = document.getElementById("grid");
const head = document.getElementById("head");
const body = document.getElementById("body");
const cols = document.getElementById("cols");
let data = null; // {columns, rows, dash, rev, texts, pairs: Map "image\0label" → row, pairAt: [i, j]}
let order = []; // the rows' indices in the order shown
let position = []; // each row's place in that order
let sort; // {column, descending} or null; undefined until the first render
let selected = -1; // the highlighted row
let shownPair = ""; // the pair highlighted: Python's, or a click's on its way there
let pending = null; // the stamp of a click Python has not taken yet
let last = {pair: null, clicked: null}; // the last click, sent again with a sort
let rowPx = 30, headPx = 30, framePx = 0, drawQueued = false, measured = false;
let waiting = null; // new cells to lay out once the page is idle (the latest render's arguments)
// clicks: how many row clicks; drawn: how many draws; renders: the last renders' times (ms since the
// epoch, the wall clock the page and the film share), lengths (ms) and whether their cells were new
window.gridStats = {clicks: 0, drawn: 0, rev: null, renders: []};

function post(type, extra) {
  window.parent.postMessage({isStreamlitMessage: true, type, ...extra}, "*");
}

function send() {
  post("streamlit:setComponentValue", {value: {...last, sort}, dataType: "json"});
}

const pairKey = (row) => `${row[data.pairAt[0]]}\u0000${row[data.pairAt[1]]}`; // as pair.join("\u0000")

function arrange() {
  order = sortedOrder(data.columns, data.rows, sort);
  position = new Array(order.length);
  order.forEach((row, k) => { position[row] = k; });
}

// The header: each column's name, the sort's arrow; the columns' widths from their longest text
function header() {
  head.replaceChildren(...data.columns.map((c, k) => {
    const th = document.createElement("th");
    const arrow = sort && sort.column === c.name ? (sort.descending ? " ▼" : " ▲") : "";
    th.textContent = c.name + arrow;
    th.dataset.col = String(k);
    th.title = `sort by ${c.name}`;
    if (c.number) th.className = "number";
    return th;
  }));
}

function widths() {
  const chars = data.columns.map((c) => c.name.length + 2);
  for (const row of data.texts) row.forEach((t, k) => { chars[k] = Math.max(chars[k], t.length); });
  cols.replaceChildren(...chars.map((n) => {
    const col = document.createElement("col");
    col.style.width = `${Math.min(n, 40) + 2}ch`;
    return col;
  }));
  box.querySelector("table").style.minWidth = `${chars.reduce((a, n) => a + Math.min(n, 40) + 2, 0)}ch`;
}

function spacer(px) {
  const tr = document.createElement("tr"), td = document.createElement("td");
  tr.className = "spacer";
  td.colSpan = data.columns.length;
  td.style.height = `${px}px`;
  tr.append(td);
  return tr;
}

// The rows in view (and OVERSCAN more each side), between spacers as high as the rows left out
function draw() {
  drawQueued = false;
  if (data === null) return;
  const n = order.length, top = box.scrollTop;
  const first = Math.max(0, Math.floor(top / rowPx) - OVERSCAN);
  const end = Math.min(n, Math.ceil((top + box.clientHeight - headPx) / rowPx) + OVERSCAN);
  const made = [spacer(first * rowPx)];
  for (let k = first; k < end; k++) {
    const row = order[k], tr = document.createElement("tr");
    tr.className = row === selected ? "row selected" : "row";
    tr.dataset.row = String(row);
    data.texts[row].forEach((text, j) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (data.columns[j].number) td.className = "number";
      tr.append(td);
    });
    made.push(tr);
  }
  made.push(spacer((n - end) * rowPx));
  body.replaceChildren(...made);
  window.gridStats.drawn += 1;
}

function redraw() {
  if (!drawQueued) {
    drawQueued = true;
    requestAnimationFrame(draw);
  }
}

// Scroll so that row ``row`` is in view under the header (nothing when it is already)
function reveal(row) {
  if (row < 0) return;
  const top = position[row] * rowPx;
  if (top < box.scrollTop) box.scrollTop = top;
  else if (top + rowPx > box.scrollTop + box.clientHeight - headPx) {
    box.scrollTop = top + rowPx - box.clientHeight + headPx;
  }
}

function choose(row) {
  selected = row;
  pending = Date.now();
  last = {pair: [data.rows[row][data.pairAt[0]], data.rows[row][data.pairAt[1]]], clicked: pending};
  window.gridStats.clicks += 1;
  send(); // at once: the case opens on this rerun
  reveal(row);
  draw();
}

function resort(k) {
  const name = data.columns[k].name;
  const again = sort && sort.column === name;
  sort = {column: name, descending: again ? !sort.descending : false};
  arrange();
  header();
  send();
  reveal(selected);
  draw();
}

// New cells (another table): printed once, laid out, the pairs indexed
function open(payload, pairColumns) {
  const names = payload.columns.map((c) => c.name);
  data = {...payload, texts: cellTexts(payload.columns, payload.rows, payload.dash),
    pairAt: pairColumns.map((c) => names.indexOf(c)), pairs: new Map()};
  data.rows.forEach((row, k) => data.pairs.set(pairKey(row), k));
  arrange();
  header();
  widths();
}

function fit(height) {
  headPx = head.offsetHeight || headPx;
  const px = Math.min(height, headPx + order.length * rowPx + 2);
  box.style.height = `${px}px`;
  if (px !== framePx) {
    framePx = px;
    post("streamlit:setFrameHeight", {height: document.body.scrollHeight});
  }
}

function render(args) {
  const t0 = performance.now();
  if (sort === undefined) sort = args.sort || null; // the component's own sort, drawn afresh
  const fresh = data === null || data.rev !== args.data.rev;
  if (fresh) open(args.data, args.pair_columns);
  // Python's case, unless a click of this grid is on its way there (its highlight stays)
  const mine = pending !== null && args.taken !== pending;
  if (!mine) pending = null;
  const pair = mine ? last.pair.join("\u0000") : args.selected ? args.selected.join("\u0000") : "";
  const moved = pair !== shownPair || fresh;
  shownPair = pair;
  selected = data.pairs.has(pair) ? data.pairs.get(pair) : -1;
  fit(args.height);
  if (moved && !mine) reveal(selected);
  window.gridStats.rev = data.rev;
  draw();
  if (!measured && body.querySelector("tr.row")) { // the rows' height as the page's fonts draw them
    measured = true;
    rowPx = body.querySelector("tr.row").offsetHeight || rowPx;
    fit(args.height);
    draw();
  }
  const renders = window.gridStats.renders;
  renders.push({at: performance.timeOrigin + t0, ms: performance.now() - t0, fresh});
  if (renders.length > 100) renders.shift(); // the last hundred
}

function layOut() {
  const args = waiting;
  waiting = null;
  render(args);
}

body.addEventListener("click", (event) => {
  const tr = event.target.closest("tr.row");
  if (tr) choose(Number(tr.dataset.row));
});
head.addEventListener("click", (event) => {
  const th = event.target.closest("th");
  if (th) resort(Number(th.dataset.col));
});
box.addEventListener("scroll", redraw);
box.addEventListener("keydown", (event) => {
  if (data === null || !order.length || (event.key !== "ArrowDown" && event.key !== "ArrowUp")) return;
  if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return; // plain Up/Down only
  event.preventDefault();
  const at = selected < 0 ? -1 : position[selected];
  const next = event.key === "ArrowDown" ? Math.min(order.length - 1, at + 1) : Math.max(0, at - 1);
  if (order[next] !== selected) choose(order[next]);
});
// Safari has no requestIdleCallback: there the new cells are laid out after the current task
const whenIdle = window.requestIdleCallback ? (f) => window.requestIdleCallback(f, {timeout: 250})
  : (f) => setTimeout(f, 1);
window.addEventListener("message", (event) => {
  if (!event.data || event.data.type !== "streamlit:render") return;
  const theme = event.data.theme;
  if (theme) { // the app's theme
    const root = document.documentElement.style;
    root.setProperty("--text", theme.textColor);
    root.setProperty("--bg", theme.backgroundColor);
    root.setProperty("--bg2", theme.secondaryBackgroundColor);
    root.setProperty("--primary", theme.primaryColor);
    if (theme.font) root.setProperty("--font", theme.font);
  }
  const args = event.data.args;
  // New cells (a finding or a filter changed) are laid out once the page is idle: the rerun that
  // sends them also sends the film, which the page draws first; the highlight alone is drawn at once
  if (data !== null && data.rev !== args.data.rev) {
    if (waiting === null) whenIdle(layOut);
    waiting = args;
  } else if (waiting !== null) {
    waiting = args; // the latest arguments are the ones laid out
  } else {
    render(args);
  }
});
post("streamlit:componentReady", {apiVersion: 1});
