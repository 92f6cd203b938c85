"""The audit dossier read as a reviewer reads it: every number in its tables is the matching report's,
its findings flag a planted gap and not its absence, a missing analysis says why, the same store gives
the same bytes but for one line, and with ``--vs`` the first sentence answers "worse for anyone?"."""

from __future__ import annotations

import json
import math
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reports"))
from _planted import planted_store  # noqa: E402

from cxrxai.dossier import build_dossier  # noqa: E402
from cxrxai.errors import StoreError  # noqa: E402
from cxrxai.reports import REPORTS, run_report  # noqa: E402
from cxrxai.store import open_store  # noqa: E402


class _Tables(HTMLParser):
    """Every table (its data-report, data-options, header and cell texts), every finding and missing
    paragraph, every section heading."""

    def __init__(self):
        super().__init__()
        self.tables, self.paragraphs, self.headings = [], [], []
        self._cell = self._para = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append({"report": a.get("data-report"), "options": json.loads(a.get("data-options") or "{}"),
                                "head": [], "rows": []})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th"):
            self._cell = ""
        elif tag == "p" and a.get("class") in ("finding", "missing"):
            self._para = [a["class"], ""]
        elif tag == "h2":
            self._para = ["h2", ""]

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
        if self._para is not None:
            self._para[1] += data

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            (self.tables[-1]["head"] if tag == "th" else self.tables[-1]["rows"][-1]).append(self._cell)
            self._cell = None
        elif tag in ("p", "h2") and self._para is not None:
            (self.headings if self._para[0] == "h2" else self.paragraphs).append(tuple(self._para))
            self._para = None


def _parse(html: str) -> _Tables:
    parser = _Tables()
    parser.feed(html)
    for t in parser.tables:
        t["rows"] = [r for r in t["rows"] if r]
    return parser


def _number(text: str) -> float | None:
    try:
        return float(text.replace("\u2009", ""))
    except ValueError:
        return None


def _same(cell: str, value) -> bool:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return cell == "–"
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return cell == ("yes" if value else "no")
    number = _number(cell)
    if number is not None and not isinstance(value, str):
        return math.isclose(number, float(value), rel_tol=6e-4, abs_tol=1e-12)
    return cell == str(value)


def _check_against_reports(store, model_id: str, html: str) -> int:
    """Each printed row of each report table equals a row of that report run with those options."""
    checked = 0
    for t in _parse(html).tables:
        if t["report"] not in REPORTS:
            continue
        frame = run_report(store, t["report"], model_id, **t["options"])
        for row in t["rows"]:
            assert any(all(_same(cell, rec[col]) for col, cell in zip(t["head"], row))
                       for rec in frame.to_dict("records")), (t["report"], t["options"], dict(zip(t["head"], row)))
            checked += 1
    return checked


def test_every_number_equals_its_report_and_the_planted_gap_is_the_finding(tmp_path):
    with open_store(planted_store(tmp_path / "s.duckdb", positives=300, gap=0.2)) as store:
        html = build_dossier(store, "old", generated="Generated (test)")
        assert _check_against_reports(store, "old", html) > 50
    parsed = _parse(html)
    findings = [text for kind, text in parsed.paragraphs if kind == "finding"]
    assert findings[0].startswith("The largest subgroup gap significant after Holm")
    assert "Effusion TPR for sex F, 0.600 (n = 150) against 0.800 for M (n = 150), Δ -0.200" in findings[0]
    assert [h for _, h in parsed.headings] == ["Summary", "Against the model it replaces", "Data", "Performance",
                                               "Fairness", "Explanations", "Trust and fidelity", "Limitations",
                                               "Provenance"]


def test_no_gap_is_said_with_what_was_tested_and_a_small_gap_is_too_wide(tmp_path):
    with open_store(planted_store(tmp_path / "a.duckdb", positives=300, gap=0.0)) as store:
        none = [t for k, t in _parse(build_dossier(store, "old")).paragraphs if k == "finding"][0]
    assert none.startswith("No subgroup gap is significant after Holm") and "tested comparisons" in none
    with open_store(planted_store(tmp_path / "b.duckdb", positives=20, gap=0.2)) as store:
        small = [t for k, t in _parse(build_dossier(store, "old")).paragraphs if k == "finding"][0]
    assert small.startswith("No subgroup gap is significant") and "wider than 0.2" in small


def test_missing_analyses_say_why_and_how_to_fill_them(tmp_path):
    with open_store(planted_store(tmp_path / "s.duckdb", demographics=False)) as store:
        parsed = _parse(build_dossier(store, "old"))
    missing = [t for k, t in parsed.paragraphs if k == "missing"]
    trust = next(t for t in missing if t.startswith("Trust tests"))
    assert "no trust scores yet (table trust)" in trust
    assert any(t.startswith("Faithfulness") and "fidelity" in t for t in missing)
    gaps = next(t for t in missing if t.startswith("Subgroup gaps"))
    assert "no group to compare" in gaps and "sex" in gaps


def test_the_same_store_gives_the_same_bytes_but_the_generated_line(tmp_path):
    with open_store(planted_store(tmp_path / "s.duckdb", positives=60)) as store:
        one, two = build_dossier(store, "new", vs="old"), build_dossier(store, "new", vs="old")
    diff = [(a, b) for a, b in zip(one.splitlines(), two.splitlines()) if a != b]
    assert len(one.splitlines()) == len(two.splitlines()) and len(diff) <= 1
    stripped = [re.sub(r"Generated [^<]*", "", s) for s in (one, two)]
    assert stripped[0] == stripped[1]


def test_the_first_sentence_answers_worse_for_anyone(tmp_path):
    path = planted_store(tmp_path / "s.duckdb", positives=450, gap=0.0, noise=("age_bin", "60-80", 2.0))
    with open_store(path) as store:
        html = build_dossier(store, "new", vs="old")
        same = build_dossier(store, "old", vs="new".replace("new", "old") if False else "new")
        assert _check_against_reports(store, "new", html) > 30
    first = [t for k, t in _parse(html).paragraphs if k == "finding"][0]
    assert first.startswith("Is new worse than old, for anyone?") and "yes — " in first
    answer = first.split("yes — ")[1].split(" further worse")[0]
    named = [part.split(":")[0] for part in answer.split(" | ")]
    assert named == ["for age_bin 60-80"], first
    assert "for sex F" in first.split(" further worse")[1]  # the women hold the noisy images: said, explained
    assert "Is old worse than new" in same


def test_a_copy_is_not_worse_and_unknown_models_are_refused(tmp_path):
    with open_store(planted_store(tmp_path / "s.duckdb", positives=60)) as store:
        first = [t for k, t in _parse(build_dossier(store, "new", vs="old")).paragraphs if k == "finding"][0]
        assert "no — worse in none of them" in first
        with pytest.raises(StoreError, match="no model 'nope'"):
            build_dossier(store, "new", vs="nope")


@pytest.mark.slow
def test_on_a_full_store_every_section_has_data_and_the_gallery_is_the_explorers(tiny_full_store):
    """The whole tiny build (maps, sweep, trust, fidelity): every report table equals its report, the
    trust and explanation sections are filled, and the gallery's pictures are the explorer's PNG of
    the best and worst localized true positives (the same function, the same segmentation)."""
    import base64

    import cv2
    import numpy as np

    from cxrxai.present import gallery
    from cxrxai.reports import localization_cases

    model = "tiny-densenet121"
    with open_store(tiny_full_store) as store:
        html = build_dossier(store, model)
        assert _check_against_reports(store, model, html) > 100
        cases = localization_cases(store, model, slice_="true_positive", method="gradcam")
        shown = gallery.best_and_worst(cases, "iou")
        first = shown.iloc[0]
        thresholds = store.thresholds(model).set_index("label")["threshold"]
        expected = gallery.gallery_picture(store, model, first.image_id, first.label, "gradcam", first.params_key,
                                           prob=first.prob, threshold=thresholds[first.label])
    parsed = _parse(html)
    missing = " ".join(t for k, t in parsed.paragraphs if k == "missing")
    for what in ("Trust tests", "Faithfulness", "Localization per explainer", "the gallery"):
        assert what not in missing, missing
    uris = re.findall(r'<img src="(data:image/png;base64,[^"]+)"', html)
    assert len(uris) == len(shown) and shown.label.nunique() == cases.dropna(subset=["iou"]).label.nunique()
    png = cv2.imdecode(np.frombuffer(base64.b64decode(uris[0].split(",", 1)[1]), np.uint8), cv2.IMREAD_COLOR)
    assert np.array_equal(png[..., ::-1], expected)


def test_a_registered_section_is_read_in_its_order_and_reads_its_report(tmp_path):
    """A contributor's section: one decorated function over a report view; it appears where its order
    puts it, its table is that report's, and a duplicate name is refused."""
    from cxrxai.dossier import SECTIONS, section
    from cxrxai.dossier._views import View

    @section("toy", "Toy section", order=35)
    def toy(ctx):
        return [ctx.table(View("performance", "AUROC again"))]

    try:
        with open_store(planted_store(tmp_path / "s.duckdb", positives=60)) as store:
            html = build_dossier(store, "old")
            assert _check_against_reports(store, "old", html) > 0
        headings = [h for _, h in _parse(html).headings]
        assert headings.index("Toy section") == headings.index("Performance") + 1
        with pytest.raises(StoreError, match="already registered"):
            section("toy", "Again", order=1)(toy)
    finally:
        SECTIONS.pop("toy", None)
