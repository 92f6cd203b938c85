"""Headless Chromium: the explorer's case grid (``pages/_case_grid.py``) opens the case of a clicked
row, sorts by a clicked header (again: reversed), and the Previous/Next buttons and the Up/Down
keys follow the order it shows; the case shown is the one highlighted, in view.
"""

from __future__ import annotations

import re

import pytest
from test_browser import ARTIFACTS, _browser, _chromium, _no_error, app_url, choose  # noqa: F401 — fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]

GRID = 'iframe[title*="cxrxai_grid"]'
#: The rows in the page (only those in view and a few more), each as its cells' texts
ROWS = "() => [...document.querySelectorAll('tr.row')].map((tr) => [...tr.cells].map((td) => td.textContent))"
#: The highlighted row's cells and whether it is inside the grid's view, under the header
SELECTED = """() => { const tr = document.querySelector('tr.selected'), box = document.getElementById('grid');
  if (!tr) return null;
  const r = tr.getBoundingClientRect(), b = box.getBoundingClientRect(), head = document.getElementById('head');
  return {cells: [...tr.cells].map((td) => td.textContent),
          inView: r.top >= b.top + head.offsetHeight - 1 && r.bottom <= b.bottom + 1}; }"""


def grid_frame(page):
    """The grid component's frame once it has drawn its rows."""
    page.locator(GRID).first.wait_for(timeout=120_000)
    frame = next(f for f in page.frames if "cxrxai_grid" in f.url)
    frame.wait_for_function("window.gridStats && document.querySelectorAll('tr.row').length > 0",
                            timeout=120_000)
    return frame


def shown(page) -> str:
    """The case the page shows: its header, ``image_id — finding``."""
    return page.get_by_role("heading", name=re.compile(r" — ")).first.inner_text()


def wait_shown(page, case: str, timeout_s: float = 30) -> None:
    page.get_by_role("heading", name=case, exact=True).first.wait_for(timeout=timeout_s * 1000)


def column(frame, name: str) -> int:
    return frame.evaluate("(name) => [...document.querySelectorAll('#head th')].findIndex("
                          "(th) => th.textContent.replace(/ [▲▼]$/, '') === name)", name)


def test_a_row_click_opens_its_case_and_a_header_sort_is_what_next_follows(app_url):  # noqa: F811
    with _browser() as page:
        page.goto(f"{app_url}/explorer")
        page.get_by_role("heading", name="Image explorer").first.wait_for(timeout=90_000)
        frame = grid_frame(page)
        at = {name: column(frame, name) for name in ("image_id", "label", "prob")}
        case = lambda cells: f"{cells[at['image_id']]} — {cells[at['label']]}"  # noqa: E731
        assert frame.evaluate(SELECTED)["cells"] and case(frame.evaluate(SELECTED)["cells"]) == shown(page)
        rows = frame.evaluate(ROWS)
        target = next(r for r in rows[1:4] if case(r) != shown(page))
        frame.locator("tr.row", has_text=target[at["image_id"]]).filter(has_text=target[at["label"]]).first.click()
        wait_shown(page, case(target))  # the clicked row's case opens
        assert case(frame.evaluate(SELECTED)["cells"]) == case(target)
        _no_error(page)

        prob = frame.locator("#head th").nth(at["prob"])
        prob.click()  # ascending
        frame.wait_for_function(f"document.querySelectorAll('#head th')[{at['prob']}].textContent.endsWith('▲')")
        prob.click()  # again: descending
        frame.wait_for_function(f"document.querySelectorAll('#head th')[{at['prob']}].textContent.endsWith('▼')")
        listed = frame.evaluate(ROWS)
        values = [float(r[at["prob"]]) for r in listed if r[at["prob"]] != "—"]
        assert values == sorted(values, reverse=True) and len(set(values)) > 1  # numbers, highest first
        page.get_by_text("by prob, descending").first.wait_for(timeout=30_000)  # the sort reached Python
        here = [case(r) for r in listed].index(shown(page))
        assert here + 1 < len(listed)
        page.get_by_role("button", name="Next case ▶", exact=True).click()
        wait_shown(page, case(listed[here + 1]))  # Next follows the grid's order
        frame.wait_for_function(f"(() => {{ const s = ({SELECTED})(); return s && s.cells[{at['image_id']}] "
                                f"=== {listed[here + 1][at['image_id']]!r}; }})()")
        assert frame.evaluate(SELECTED)["inView"]  # highlighted, in view
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator(GRID).first.screenshot(path=str(ARTIFACTS / "explorer-case-grid.png"))

        frame.locator("#grid").focus()
        frame.locator("#grid").press("ArrowDown")  # the keyboard moves the selection in that order too
        after = frame.evaluate(ROWS)
        wait_shown(page, case(after[[case(r) for r in after].index(case(listed[here + 1])) + 1]))
        _no_error(page)

        # another finding: a new table, laid out by the grid once the page is idle; its rows and the
        # case highlighted follow (the path a browser without requestIdleCallback broke)
        finding = shown(page).split(" — ")[1]
        page.locator('[data-testid="stSelectbox"]').filter(has_text="Finding").first.click()
        options = page.get_by_role("option").all_inner_texts()
        page.keyboard.press("Escape")
        other = next(o for o in options if o != finding and "not labelled" not in o)
        choose(page, "Finding", other)
        frame.wait_for_function(f"(() => {{ const r = ({ROWS})(); return r.length > 0 && "
                                f"r.every((c) => c[{at['label']}] === {other!r}); }})()", timeout=60_000)
        page.get_by_role("heading", name=re.compile(f" — {re.escape(other)}$")).first.wait_for(timeout=60_000)
        frame.wait_for_function(f"(() => {{ const s = ({SELECTED})(); return s && "
                                f"s.cells[{at['label']}] === {other!r}; }})()", timeout=30_000)
        assert case(frame.evaluate(SELECTED)["cells"]) == shown(page)
        _no_error(page)


def test_a_step_far_down_the_list_scrolls_its_row_into_view(app_url):  # noqa: F811
    with _browser() as page:
        page.goto(f"{app_url}/explorer")
        page.get_by_role("heading", name="Image explorer").first.wait_for(timeout=90_000)
        frame = grid_frame(page)
        frame.evaluate("document.getElementById('grid').scrollTop = 0")
        frame.wait_for_timeout(200)
        first = frame.locator("tr.row").first
        name = first.evaluate("(tr) => [...document.querySelectorAll('#head th')].map((th) => th.textContent)")
        cells = frame.evaluate(ROWS)[0]
        first.click()  # the first row: then down the list
        wait_shown(page, f"{cells[name.index('image_id')]} — {cells[name.index('label')]}")
        total = int(re.search(r"case 1 of (\d+) ", page.get_by_text(re.compile(r"^case 1 of ")).first.inner_text())[1])
        steps = min(total - 1, 12)
        assert steps > 220 // 30  # past the rows the grid shows at once
        for _ in range(steps):
            before = shown(page)
            page.get_by_role("button", name="Next case ▶", exact=True).click()
            page.wait_for_function("(h) => ![...document.querySelectorAll('h3')].some((e) => e.innerText === h)",
                                   arg=before, timeout=30_000)
        page.wait_for_timeout(500)
        selected = frame.evaluate(SELECTED)
        assert selected is not None and selected["inView"]
        _no_error(page)


#: Gives the grid a render message as Streamlit does, and says when its rows are drawn (ms)
RENDER = """(args) => new Promise((done) => {
  const t0 = performance.now(), drawn = window.gridStats.drawn;
  window.postMessage({type: "streamlit:render", args}, "*");
  const wait = () => (window.gridStats.drawn > drawn ? done(performance.now() - t0) : setTimeout(wait, 1));
  wait();
})"""


def test_twenty_thousand_cases_keep_only_the_rows_in_view_in_the_page():
    """A dataset's 20,000 cases of one finding: the page holds the rows in view (and a few more),
    scrolling to the end shows the last case, and a click there selects it (the component alone,
    opened from its shipped files, given a render message as Streamlit gives it)."""
    import numpy as np
    import pandas as pd

    from pages import _case_grid

    n, rng = 20_000, np.random.default_rng(0)
    cases = pd.DataFrame({"image_id": [f"img-{k:05d}" for k in range(n)], "label": "Mass",
                          "outcome": rng.choice(["TP", "FN", "FP", "TN"], n), "prob": rng.uniform(size=n),
                          "iou": np.where(rng.uniform(size=n) < 0.3, np.nan, rng.uniform(size=n))})
    data = _case_grid.grid_data(cases)[1]
    args = {"data": data, "selected": ["img-00003", "Mass"], "sort": None, "taken": None,
            "pair_columns": ["image_id", "label"], "height": 220}
    with _browser() as page:
        page.goto((_case_grid.SOURCE / "index.html").as_uri())
        page.wait_for_function("window.gridStats !== undefined")
        opened = page.evaluate(RENDER, args)
        assert page.locator("tr.row").count() < 40 and page.locator("tr.selected").count() == 1
        page.evaluate("document.getElementById('grid').scrollTop = 1e9")
        page.wait_for_timeout(200)
        last = page.locator("tr.row").last
        assert last.locator("td").first.inner_text() == f"img-{n - 1:05d}" and page.locator("tr.row").count() < 40
        last.click()
        assert page.evaluate("window.gridStats.clicks") == 1 and "selected" in last.get_attribute("class")
        started = page.evaluate("performance.now()")
        page.locator("#head th").nth(3).click()  # prob: 20,000 rows sorted
        page.wait_for_function("document.querySelectorAll('#head th')[3].textContent.endsWith('▲')")
        sorted_ms = page.evaluate("performance.now()") - started
        print(f"20,000 rows: opened and drawn in {opened:.0f} ms, sorted in {sorted_ms:.0f} ms")
