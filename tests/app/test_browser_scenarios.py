"""Headless Chromium walks the three users' scenarios on the tiny demo store.

* researcher: a TPR bar on Subgroups opens exactly that group's positives in the explorer;
* presenter: explainer and parameters survive a visit to another page, and the URL holds them;
* clinician / presenter: compare side by side at 1000 px wide — no element overlaps another.

Screenshots go to ``tests/artifacts/``. Cancel and the lasso are pinned with AppTest
(``test_linked_state.py``): the tiny model computes maps faster than a browser can click Cancel.
"""

from __future__ import annotations

import re
import time

import pytest
from test_browser import ARTIFACTS, _browser, _chromium, _no_error, _serve, app_url, explorer_with  # noqa: F401 — fixtures
from test_browser_film import film_frame

from cxrxai import summaries
from cxrxai.store import open_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _explorer_count(page) -> int:
    text = page.get_by_text(re.compile(r"^\d+ of \d+ ")).first.inner_text()
    return int(text.split(" ")[0])


def test_researcher_a_tpr_bar_opens_exactly_that_groups_positives(app_url, tiny_full_store):  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    with _browser() as page:
        page.goto(f"{app_url}/subgroups")
        page.get_by_role("heading", name="Subgroups").first.wait_for(timeout=90_000)
        chart = page.locator(".js-plotly-plot").first  # the rate chart
        chart.wait_for(timeout=60_000)
        selected = page.get_by_text(re.compile(r"^Selected .* positives\.$")).first
        for attempt in range(3):  # a click that lands while the page is still settling is lost: click again
            chart.scroll_into_view_if_needed()
            page.wait_for_timeout(1000)
            bars = chart.locator(".bars .point path")
            # Plotly's drag layer takes the pointer: click where the widest bar is drawn
            box = max((bars.nth(i).bounding_box() for i in range(bars.count())), key=lambda b: b["width"] * b["height"])
            page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            try:
                selected.wait_for(timeout=15_000)
                break
            except Exception:  # noqa: BLE001 — Playwright's TimeoutError
                if attempt == 2:
                    raise
        label, sex = selected.inner_text()[len("Selected "):-len(" · positives.")].split(" · ")
        page.get_by_text("Open these cases in the explorer").first.click()
        page.get_by_role("heading", name="Image explorer").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1500)
        _no_error(page)
        page.screenshot(path=str(ARTIFACTS / "scenario-bar-to-explorer.png"), full_page=True)
        with open_store(tiny_full_store) as s:
            cases = summaries.case_table(s, "tiny-densenet121")
        want = cases[(cases.label == label) & (cases.sex == sex) & cases.outcome.isin(["TP", "FN"])]
        assert _explorer_count(page) == len(want) > 0
        assert "outcome=TP" in page.url and "outcome=FN" in page.url and f"sex={sex}" in page.url


def test_presenter_settings_survive_navigation_and_live_in_the_url(app_url):  # noqa: F811
    with _browser() as page:
        explorer_with(page, app_url, "Grad-CAM++")
        page.wait_for_url(re.compile(r"explainer=gradcam(%2B%2B|\+\+)"), timeout=30_000)
        scale = page.locator('[data-testid="stRadio"]').filter(has_text="Scale").first
        scale.get_by_text("captum", exact=True).click()  # a display setting: the map's fragment reruns alone
        page.wait_for_timeout(1500)
        assert scale.get_by_role("radio", name="captum").is_checked()
        nav = page.locator('[data-testid="stSidebarNav"]')
        nav.get_by_text("Overview").click()
        page.get_by_role("heading", name="Overview").first.wait_for(timeout=60_000)
        nav.get_by_text("Image explorer").click()
        page.get_by_role("heading", name="Image explorer").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1500)
        _no_error(page)
        explainer = page.locator('[data-testid="stSelectbox"]').filter(has_text="Explainer").first
        assert explainer.locator("input").first.input_value() == "Grad-CAM++"
        scale = page.locator('[data-testid="stRadio"]').filter(has_text="Scale").first
        assert scale.get_by_role("radio", name="captum").is_checked()


def _overlap(a: dict, b: dict) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


def test_compare_side_by_side_fits_1000_px_without_overlaps(app_url):  # noqa: F811
    with _browser() as page:
        page.set_viewport_size({"width": 1000, "height": 1100})
        page.goto(f"{app_url}/explorer")
        page.get_by_role("heading", name="Image explorer").first.wait_for(timeout=90_000)
        page.get_by_text("Compare side by side").first.click()
        page.get_by_text("Every map normalised the same way").first.wait_for(timeout=120_000)
        page.wait_for_timeout(3000)
        _no_error(page)
        chart = page.locator('iframe[title*="cxrxai_film"]').first  # the film component: both films
        chart.scroll_into_view_if_needed()
        frame = film_frame(page)
        page.screenshot(path=str(ARTIFACTS / "scenario-compare-1000px.png"), full_page=True)
        row = page.locator('[data-testid="stHorizontalBlock"]').filter(
            has=page.locator('[data-testid="stSelectbox"]').filter(has_text="Case")).last
        columns = row.locator(':scope > [data-testid="stColumn"]')
        assert columns.count() == 2
        boxes = []
        for k in range(2):
            col = columns.nth(k)
            parts = col.locator('[data-testid="stSelectbox"], [data-testid="stSlider"], [data-testid="stRadio"]')
            boxes.append([parts.nth(i).bounding_box() for i in range(parts.count())])
        left, right = boxes
        assert left and right
        assert not any(_overlap(a, b) for a in left for b in right)
        assert max(b["x"] + b["width"] for b in left + right) <= 1000
        film = chart.bounding_box()
        assert 600 <= film["width"] and film["x"] + film["width"] <= 1000  # both films in one figure, inside the page
        panels = frame.locator("#stage > canvas")  # each film painted on its canvas under its subplot
        assert panels.count() == 2
        first, second = panels.nth(0).bounding_box(), panels.nth(1).bounding_box()
        assert not _overlap(first, second) and min(first["width"], second["width"]) >= 250
        titles = frame.locator(".gtitle, .annotation-text")
        texts = [titles.nth(i).text_content() for i in range(titles.count())]
        assert sum("tiny-densenet121" in t for t in texts) >= 2, texts  # each panel names its model
        assert sum(("TP" in t or "FN" in t or "FP" in t or "TN" in t) and "P 0." in t for t in texts) >= 2, texts


def test_presenter_cancel_keeps_the_partial_map_and_never_recomputes(tiny_full_store):
    # Its own server, its live maps paced (0.3 s after each window batch): the tiny model's finest
    # map otherwise finished on a warm worker before any click landed (two full runs failed so).
    with _serve(tiny_full_store, CXRXAI_LIVE_PACE="0.3") as url, _browser() as page:
        # the finest setting: 8/4, the slowest map
        explorer_with(page, url, "Occlusion", {"Patch (px)": "Home", "Stride (px)": "Home"}, pause_ms=600)
        started = time.monotonic()
        cancel = page.get_by_role("button", name="Cancel")
        notice = page.get_by_text("Cancelled: the partial map is shown").first
        before = ""
        # A warm worker finishes the tiny model's finest map in a few seconds; if it wins the race
        # against the clicks, another baseline starts a new (uncached) 8/4 map to cancel.
        for baseline in ("black", "zero", "white"):
            if baseline != "black":
                page.locator('[data-testid="stRadio"]').filter(has_text="Baseline").first.get_by_text(
                    baseline, exact=True).click()
            cancel.wait_for(timeout=60_000)
            bar = page.locator('[data-testid="stProgress"]').first
            before = bar.inner_text() if bar.count() else ""
            for _ in range(8):  # the progress fragment redraws every 0.5 s: a click landing on a redraw is lost
                try:
                    cancel.first.click(timeout=2000)
                    notice.wait_for(timeout=3000)
                    break
                except Exception:  # noqa: BLE001 — Playwright's TimeoutError: click again while the map computes
                    if cancel.count() == 0 and notice.count() == 0:
                        break  # this map finished first
            if notice.count():
                break
        notice.wait_for(timeout=30_000)
        caption = page.get_by_text(re.compile(r"Occlusion patch 8 stride 4 .*cancelled \(partial\)")).first
        try:
            caption.wait_for(timeout=30_000)  # drawn in the notice's run, after the map's scores (under load)
        except Exception as err:  # noqa: BLE001 — say what the page shows instead (one CI run failed here)
            shown = page.locator('[data-testid="stCaptionContainer"]').all_inner_texts()
            raise AssertionError(f"no cancelled 8/4 caption; the page's captions: {shown}") from err
        page.wait_for_timeout(6000)  # longer than the map takes: a restarted job would have finished by now
        _no_error(page)
        page.screenshot(path=str(ARTIFACTS / "scenario-cancelled.png"))
        assert caption.is_visible()
        assert page.get_by_text("recomputed live").count() == 0  # nothing was computed again after Cancel
        assert page.locator('[data-testid="stProgress"]').count() == 0  # and nothing is running
        assert page.get_by_role("button", name="Cancel").count() == 0
        print(f"cancelled at '{before}' after {time.monotonic() - started:.1f} s")


def test_researcher_a_box_selection_opens_exactly_the_selected_pairs(app_url):  # noqa: F811
    with _browser() as page:
        page.goto(f"{app_url}/geometry")
        page.get_by_role("heading", name="Geometry & confidence").first.wait_for(timeout=90_000)
        chart = page.locator('[data-testid="stPlotlyChart"]').first  # localization ~ geometry scatter
        chart.wait_for(timeout=60_000)
        chart.scroll_into_view_if_needed()
        page.wait_for_timeout(1000)
        chart.hover()
        chart.locator('[data-title="Box Select"]').first.click()
        area = chart.locator(".nsewdrag").first.bounding_box()
        page.mouse.move(area["x"] + 2, area["y"] + 2)
        page.mouse.down()
        page.mouse.move(area["x"] + area["width"] * 0.6, area["y"] + area["height"] - 2, steps=12)
        page.mouse.up()
        # what the browser selected: the customdata (image, finding) of every selected point
        picked = chart.locator(".js-plotly-plot").first.evaluate(
            "gd => gd.data.flatMap(t => (t.selectedpoints || []).map(i => t.customdata[i].slice(0, 2).join('|')))")
        pairs = sorted(set(picked))
        assert len({p.split("|")[1] for p in pairs}) >= 2, pairs  # a selection over several findings
        page.get_by_text(re.compile(r"^\d+ \(image, finding\) pairs selected\.$")).first.wait_for(timeout=30_000)
        page.get_by_text("Open them in the explorer").first.click()
        page.get_by_role("heading", name="Image explorer").first.wait_for(timeout=60_000)
        page.get_by_text(f"Showing exactly the {len(pairs)} (image, finding) pairs").first.wait_for(timeout=30_000)
        _no_error(page)
        page.screenshot(path=str(ARTIFACTS / "scenario-box-to-explorer.png"))
        assert _explorer_count(page) == len(pairs)
        heading = page.get_by_role("heading", name=re.compile(r" — ")).first.inner_text()
        assert "|".join(heading.split(" — ")) in pairs  # the case opened is one of them, under its own finding
