"""The real user's path, per published layout: a small dataset on disk exactly as published
(images of different native sizes and formats), a checkpoint saved the torchvision way with that
dataset's labels, then ``precompute`` → every ``report`` → every page, asserting numbers.

What a wrong image size would break is checked directly: each ground-truth mask the store scores
against has the area written for *that* image (geometry ``size`` and localization ``gt_area``,
both fractions of the image), and a map equal to the ground truth scores IoU 1 at that size.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import torchvision
from streamlit.testing.v1 import AppTest

from cxrxai.cli import main
from cxrxai.data.adapters.nih import NIH_LABELS
from cxrxai.errors import StoreError
from cxrxai.metrics.registry import score_map
from cxrxai.reports import REPORTS, run_report
from cxrxai.store import open_store

from . import _layouts

pytestmark = pytest.mark.slow
APP = Path(__file__).resolve().parents[2] / "app.py"
PAGES = ["pages/overview.py", "pages/explorer.py", "pages/subgroups.py", "pages/benchmark.py", "pages/geometry.py",
         "pages/trust.py", "pages/fidelity.py"]
#: Reports every layout's store must answer with a table (the rest may say what is missing: with
#: eight images, a validation split may hold one class only, so no threshold can be chosen).
CORE_REPORTS = {"performance", "localization", "geometry", "confidence"}


def _nih_entry_rows(n: int) -> pd.DataFrame:
    """The first ``n`` real rows of NIH's Data_Entry_2017_v2020.csv (torchxrayvision ships it)."""
    import torchxrayvision

    path = Path(torchxrayvision.__file__).parent / "data" / "Data_Entry_2017_v2020.csv.gz"
    with gzip.open(path, "rt") as fh:
        return pd.read_csv(fh, nrows=n)


BUILDERS = {
    "nih": lambda root: _layouts.nih(root, _nih_entry_rows(8)),
    "chexpert": _layouts.chexpert,
    "siim": _layouts.siim,
    "rsna": _layouts.rsna,
    "vindr": _layouts.vindr,
    "mimic": _layouts.mimic,
    "padchest": _layouts.padchest,
    "folder": _layouts.folder,
}
#: Layouts that publish labels only, no boxes or masks: no map is scored against a ground truth.
LABELS_ONLY = {"mimic", "padchest"}


def _checkpoint(folder: Path, labels: list[str]) -> str:
    """A ResNet-18 ``state_dict`` saved as another group saves it (no card of ours), plus labels."""
    torch.manual_seed(0)
    net = torchvision.models.resnet18(num_classes=len(labels))
    torch.save(net.state_dict(), folder / "ckpt.pt")
    (folder / "labels.json").write_text(json.dumps(labels))
    return f"resnet18:{folder / 'ckpt.pt'}:{folder / 'labels.json'}"


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def built(request, tmp_path_factory):
    name = request.param
    root = tmp_path_factory.mktemp(name)
    (root / "data").mkdir()
    layout = BUILDERS[name](root / "data")
    if name == "nih":
        layout.labels = list(NIH_LABELS)
    store = root / "store.duckdb"
    argv = ["precompute", *layout.args(), "--model", _checkpoint(root, layout.labels), "--store", str(store),
            "--split", "all", "--explainers", "gradcam,occlusion", "--per-label", "1", "--input-size", "128"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CXRXAI_DATA_CACHE", str(root / "cache"))  # the decoded-image cache, not the repository's
        assert main(argv) == 0
    return name, layout, store


def test_every_image_is_predicted_at_its_own_size(built):
    name, layout, store = built
    with open_store(store) as s:
        images = s.images().set_index("image_id")
        preds = s.predictions("ckpt")
    assert set(images.index) >= set(layout.sizes)
    for image_id, (h, w) in layout.sizes.items():
        assert (images.at[image_id, "height"], images.at[image_id, "width"]) == (h, w), image_id
    assert len(preds) == len(layout.sizes) * len(layout.labels)


def test_ground_truth_is_scored_at_each_images_own_size(built):
    name, layout, store = built
    with open_store(store) as s:
        geo = s.table("geometry", reader="gt", dominant="most_points").set_index(["image_id", "label"])
        loc = s.table("localization", model_id="ckpt", method="gradcam", reader="gt")
    if name in LABELS_ONLY:  # maps are scored against empty masks: nothing positive, nothing invented
        assert not layout.truth and len(loc) and not loc.gt_positive.any() and (loc.gt_area == 0).all()
        assert geo.empty
        return
    loc = loc[loc.gt_positive].set_index(["image_id", "label"])
    assert len(layout.truth) >= 3
    for (image_id, label), (h, w, mask) in layout.truth.items():
        expected = mask.sum() / (h * w)
        assert geo.at[(image_id, label), "size"] == pytest.approx(expected, rel=1e-6), (image_id, label)
        assert loc.at[(image_id, label), "gt_area"] == pytest.approx(expected, rel=1e-6), (image_id, label)
    # every (image, label) with a ground-truth mask was scored, and nothing else is positive
    assert set(loc.index) == set(layout.truth)


@pytest.mark.parametrize("name", sorted(set(BUILDERS) - LABELS_ONLY))
def test_a_map_equal_to_the_truth_scores_one(name, tmp_path):
    layout = BUILDERS[name](tmp_path)
    (h, w, mask) = next(iter(layout.truth.values()))
    s = score_map(mask.astype(np.float32), mask)
    assert s["iou"] == 1.0 and s["hit"] == 1.0 and s["roc_auc"] == 1.0


def test_every_report_answers_or_says_what_is_missing(built):
    name, layout, store = built
    answered = set()
    with open_store(store) as s:
        for report in sorted(REPORTS):
            try:
                table = run_report(s, report, "ckpt")
            except StoreError as err:
                assert "ckpt" in str(err) or "store" in str(err), err  # names what is missing
                # and the command that fills it, or why none can (a model without a No Finding output,
                # the demo's own planted shortcut)
                assert any(w in str(err) for w in ("`python -m cxrxai", "needs a model", "cannot have it")), err
                continue
            assert isinstance(table, pd.DataFrame) and len(table), report
            answered.add(report)
        explainers = run_report(s, "explainers", "ckpt", slice="positive") if layout.truth else None
        perf = run_report(s, "performance", "ckpt").set_index("label")
        # by default a report evaluates the test split when the model has one, else every image
        labels = s.prediction_table("ckpt", split="test" if "test" in s.prediction_splits("ckpt") else None)
    core = CORE_REPORTS if name not in LABELS_ONLY else {"performance"}
    assert core <= answered, core - answered
    for label in layout.labels:  # the performance table counts exactly the dataset's positives per label
        assert perf.at[label, "n_positive"] == labels.groupby("label").ground_truth.sum()[label], label
    if name in LABELS_ONLY:
        return
    # Table 1 over the positive slice: one row per (explainer, label) with a ground truth, n cases each
    truth_labels = {lab for _, lab in layout.truth}
    gradcam = explainers[explainers.explainer == "gradcam"].set_index("label")
    assert set(gradcam.index) == truth_labels
    for label in truth_labels:
        assert gradcam.at[label, "n"] == sum(1 for _, lab in layout.truth if lab == label)


def test_the_data_audit_answers_on_every_layout(built, capsys):
    """``audit-data`` on each layout's store: the numbers a user reads there are the store's own (n of
    images, sex known and from where, splits), the checkpoint's outputs match the dataset's labels
    exactly, and no section is left empty without saying why."""
    from cxrxai.audit._sections import share

    name, layout, store = built
    assert main(["audit-data", "--store", str(store), "--format", "json"]) == 0
    audit = json.loads(capsys.readouterr().out)
    (data,) = audit["datasets"]
    with open_store(store) as s:
        images = s.images()
    n = len(images)
    assert data["n_images"] == n
    sections = data["sections"]
    sex = next(line for line in sections["demographics"]["lines"] if line.startswith("sex known for"))
    assert sex.startswith(f"sex known for {share(int(images['sex'].notna().sum()), n)}"), sex
    for source, k in images["sex_source"].value_counts().items():
        assert f"{source} {k:,}" in sex, (source, sex)
    splits = {r["split"]: r["images"] for r in sections["splits"]["rows"]}
    assert splits == images["split"].fillna("none").value_counts().to_dict()
    hows = {r["how"] for r in sections["label_matches"]["rows"]}
    assert hows == {"exact"}, sections["label_matches"]
    assert all(sec["lines"] or sec["rows"] or sec["empty"] for sec in sections.values())


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_on_the_store(built, page):
    _, _, store = built
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["store_path"] = str(store)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def test_explorer_browses_the_datasets_own_labels(built):
    _, layout, store = built
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["store_path"] = str(store)
    at.run()
    at.switch_page("pages/explorer.py").run()
    finding = next(s for s in at.selectbox if s.label == "Finding")
    with open_store(store) as s:
        present = set(s.prediction_table("ckpt").label)
    expected = [lab for lab in layout.labels if lab in present and lab not in ("No Finding", "No finding")]
    assert list(finding.options) == expected
    assert not at.exception


def test_explain_reloads_the_stores_model_and_reproduces_its_stored_map(built, tmp_path):
    """The store names another group's checkpoint; ``explain`` (and the app's live path, through
    the same loader) must rebuild that exact model: its Grad-CAM equals the stored one."""
    _, layout, store = built
    if layout.truth:
        image_id, label = sorted(layout.truth)[0]
    else:  # Grad-CAM of a finding (the build explains findings, not No Finding)
        image_id, label = sorted(layout.sizes)[0], next(lab for lab in layout.labels if lab != "No Finding")
    out = tmp_path / "map.npy"
    assert main(["explain", "--store", str(store), "--image", image_id, "--label", label, "--method", "gradcam",
                 "--out", str(out)]) == 0
    with open_store(store) as s:
        key = s.map_index(model_id="ckpt", image_id=image_id, label=label, method="gradcam").params_key.iloc[0]
        stored = s.get_map("ckpt", image_id, label, "gradcam", key).values
    assert np.load(out).shape == stored.shape
    np.testing.assert_allclose(np.load(out), stored, atol=1e-4 * max(1e-6, float(np.abs(stored).max())))


def test_the_occlusion_sweep_uses_one_case_set_for_every_setting(tmp_path):
    """``--analyses sweep --cases 3`` on RSNA (one label): three pneumonia cases, the same three for
    each of the thesis's five patch/stride settings, so the sweep's points are comparable."""
    layout = _layouts.rsna(tmp_path / "data")
    store = tmp_path / "s.duckdb"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CXRXAI_DATA_CACHE", str(tmp_path / "cache"))
        assert main(["precompute", *layout.args(), "--model", _checkpoint(tmp_path, layout.labels), "--store", str(store),
                     "--split", "all", "--explainers", "gradcam", "--input-size", "64", "--analyses", "sweep",
                     "--cases", "3"]) == 0
    with open_store(store) as s:
        idx = s.map_index(model_id="ckpt", method="occlusion")
        sweep = run_report(s, "occlusion-sweep", "ckpt")
    cases = idx.groupby("params_key").image_id.apply(frozenset)
    assert len(cases) == 5 and len(set(cases)) == 1 and len(cases.iloc[0]) == 3
    assert set(zip(sweep.patch, sweep.stride)) == {(32, 32), (32, 16), (16, 16), (16, 8), (8, 8)}
    assert (sweep.maps == 3).all() and (sweep.cases_scored == 3).all()


def test_the_dossier_of_each_layout_prints_its_reports_or_says_why(built):
    """The audit dossier on a dataset in its published layout (films of their own sizes, the dataset's
    labels, a checkpoint saved elsewhere): every report the layout can answer is printed with its
    numbers, every other analysis is a paragraph that says why and names a command, and the gallery
    draws the layout's own films where its truth has masks or boxes."""
    import re

    from cxrxai.dossier import build_dossier

    name, layout, store = built
    with open_store(store) as s:
        html = build_dossier(s, "ckpt")
    printed = set(re.findall(r'data-report="([^"]+)"', html))
    gaps = re.findall(r"<strong>Subgroup gaps[^<]*</strong> — not shown: ([^<]*)", html)
    assert "performance" in printed and ("subgroup-gaps" in printed or gaps), (printed, gaps)
    for why in re.findall(r'<p class="missing">(.*?)</p>', html, re.S):
        assert any(w in why for w in ("python -m cxrxai", "needs a model", "not stored", "cannot have it")), why
    if layout.truth and name not in LABELS_ONLY:
        assert "localization" in printed and ('<img src="data:image/png;base64,' in html or "gallery" in html)
