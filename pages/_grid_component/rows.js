// The case grid's cells as text and its rows' order (see pages/_case_grid.py): no page here, so
// that the tests run it in Node on the cells Python sends and compare it with Python's order.
// A number arrives rounded to the decimals it is printed with (Python's rounding), so toFixed
// prints Python's digits; an infinite one arrives as Python prints it ("inf"), a missing one as null.
"use strict";

// One cell as text: the dash for a missing value, a number with its column's decimals
function cellText(value, column, dash) {
  if (value === null || value === undefined) return dash;
  if (typeof value === "number" && column.decimals !== null) { // -0 keeps its sign, as Python prints it
    return (Object.is(value, -0) ? "-" : "") + value.toFixed(column.decimals);
  }
  return String(value);
}

// What a cell sorts by: numbers as numbers (an infinite one as such), text as text, null missing
function sortKey(value, column) {
  if (value === null || value === undefined) return null;
  if (column.number && typeof value === "string") return value.startsWith("-") ? -Infinity : Infinity;
  return value;
}

// The rows' indices in the order shown: as sent, or by column ``sort.column`` (a stable sort:
// equal values keep the order sent; reversed with ``sort.descending``; a missing value last
// either way). Text compares by code unit, as Python compares by code point (the same below U+10000).
function sortedOrder(columns, rows, sort) {
  const order = rows.map((_, k) => k);
  const at = sort ? columns.findIndex((c) => c.name === sort.column) : -1;
  if (at < 0) return order;
  const keys = rows.map((row) => sortKey(row[at], columns[at]));
  const sign = sort.descending ? -1 : 1;
  return order.sort((i, j) => {
    const a = keys[i], b = keys[j];
    if (a === null || b === null) return (a === null) - (b === null);
    return a < b ? -sign : a > b ? sign : 0;
  });
}

// Every cell of ``rows`` as text, row by row
function cellTexts(columns, rows, dash) {
  return rows.map((row) => row.map((value, k) => cellText(value, columns[k], dash)));
}

if (typeof module !== "undefined") module.exports = {cellText, sortKey, sortedOrder, cellTexts};
