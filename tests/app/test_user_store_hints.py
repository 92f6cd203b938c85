"""Every "fill it with …" of a user's own store fills it (issue 42 item 2): the command a section's
hint gives is run (the CLI in process, ``--model ...`` standing for the user's own options) on a
store of that kind, and the section has rows after it; or the hint says plainly that this store
cannot have it, and why — the planted shortcut (the demo's own experiment), the human benchmark
(no second reader's annotations) and repeatability / reproducibility (no second model to compare).

The store: a folder dataset with boxes on its test split only, precomputed with a user's
ResNet-18 (``_user_store.precomputed_user_store``)."""

from __future__ import annotations

import re
import shlex

import pytest
from _user_store import precompute_args, precomputed_user_store

from cxrxai.cli import main
from cxrxai.errors import StoreError
from cxrxai.reports import run_report
from cxrxai.store import open_store

pytestmark = pytest.mark.slow
MODEL = "net"  # the checkpoint's file name
#: The section (a report and its options) each hint stands under, and whether a command fills it here.
FILLED = {"trust": ("trust", {}), "fidelity": ("fidelity", {}), "sweep": ("occlusion-sweep", {})}
CANNOT = {"shortcut": ("shortcut", {}), "reader": ("human-benchmark", {}),
          "repeatability": ("similarity", {})}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mine")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CXRXAI_DATA_CACHE", str(folder / "cache"))
        precomputed_user_store(folder)
        yield folder


def _hint(folder, report: str, options: dict) -> str:
    with open_store(folder / "precomputed.duckdb") as s:
        with pytest.raises(StoreError) as err:
            run_report(s, report, MODEL, **options)
    return str(err.value)


def _rows(folder, report: str, options: dict) -> int:
    with open_store(folder / "precomputed.duckdb") as s:
        return len(run_report(s, report, MODEL, **options))


@pytest.mark.parametrize("what", sorted(FILLED))
def test_the_hint_of_a_section_is_a_command_that_fills_it(folder, what, monkeypatch):
    monkeypatch.setenv("CXRXAI_DATA_CACHE", str(folder / "cache"))
    hint = _hint(folder, *FILLED[what])
    (command,) = re.findall(r"fill it with `([^`]+)`", hint)
    argv = shlex.split(command)
    assert argv[:4] == ["python", "-m", "cxrxai", "precompute"] and "..." in argv, hint
    k = argv.index("...")
    assert argv[k - 1] == "--model", hint  # the user's own options stand there
    assert main([*argv[3:k - 1], *precompute_args(folder), *argv[k + 1:]]) == 0
    assert _rows(folder, *FILLED[what]) > 0, f"still empty after `{command}`"


@pytest.mark.parametrize("what", sorted(CANNOT))
def test_a_section_this_store_cannot_have_says_so_and_why(folder, what):
    hint = _hint(folder, *CANNOT[what])
    assert "this store cannot have" in hint, hint
    assert "fill it with" not in hint and "run the same command again" not in hint, hint
    assert "cxrxai demo`" not in hint and "train --seed" not in hint, hint  # the demo's, not this store's


def test_trust_says_why_each_criterion_without_scores_has_none(folder, monkeypatch):
    """Utility has the method's scores but no average-mask baseline (no box on the training split);
    repeatability and reproducibility: this store cannot have them. Not the demo's reasons."""
    from test_pages import _app

    monkeypatch.setenv("CXRXAI_DATA_CACHE", str(folder / "cache"))
    trust = ["--explainers", "gradcam", "--analyses", "trust"]
    assert main(["precompute", *precompute_args(folder), *trust]) == 0
    at = _app(folder / "precomputed.duckdb", "pages/trust.py")
    assert not at.exception, at.exception
    (caption,) = [c.value for c in at.caption if c.value.startswith("n: the images")]
    assert "needs the method's localization scores" not in caption and "second seed" not in caption, caption
    assert "utility: the method's localization scores are there, but not the average-mask baseline" in caption
    assert "this store's training split has none" in caption, caption
    assert "repeatability and reproducibility: this store cannot have it" in caption, caption
    assert "randomization:" not in caption, caption  # it has its scores


def test_geometry_on_boxes_carries_its_caveat(folder):
    from test_pages import _app

    at = _app(folder / "precomputed.duckdb", "pages/geometry.py")
    assert not at.exception, at.exception
    texts = " ".join(c.value for c in at.caption)
    assert "10 of 10 reference lesions are boxes only: a box's irrectangularity is 0" in texts, texts


def test_the_dossier_prints_the_pages_captions(folder):
    """The same functions as the pages: the ranking's reference regions, the boxes' caveat, the trust
    table's gaps (after the trust test above filled randomization)."""
    from cxrxai.dossier import build_dossier
    from cxrxai.summaries import box_geometry_caveat, ranking_caption, trust_gaps

    with open_store(folder / "precomputed.duckdb") as s:
        html = build_dossier(s, MODEL)
        expected = [box_geometry_caveat(s), ranking_caption(s)]
        try:
            expected.append(trust_gaps(s, MODEL, run_report(s, "trust", MODEL)))
        except StoreError:
            pass
    text = " ".join(re.sub(r"<[^>]+>", " ", html).replace("&quot;", '"').replace("&#x27;", "'").split())
    for caption in expected:
        assert " ".join(caption.split()) in text, caption


def test_no_finding_without_ground_truth_says_how_to_give_the_dataset_one(tmp_path):
    """A model with a No Finding output over a folder dataset that labels none: the thresholds are
    there (the model's own), so the hint names the dataset's missing label, not thresholds."""
    import numpy as np
    from _user_store import IDS, LABELS, user_store

    from cxrxai.models.spec import ModelSpec
    from cxrxai.store import write_store

    path = user_store(tmp_path / "mine.duckdb")
    labels = (*LABELS, "No Finding")
    with write_store(path) as w:
        w.put_model(ModelSpec(name="nf", arch="densenet121", labels=labels, thresholds={}))
        probs = np.full((len(IDS), len(labels)), 0.6, np.float32)
        w.put_predictions("nf", IDS, labels, np.log(probs / (1 - probs)), probs)
        w.put_thresholds("nf", [{"label": lab, "threshold": 0.5, "method": "model spec", "criterion": None,
                                 "split": None} for lab in labels])
    with open_store(path) as s, pytest.raises(StoreError) as err:
        run_report(s, "underdiagnosis", "nf")
    hint = str(err.value)
    assert "Thresholds:" not in hint and "--thresholds" not in hint, hint
    assert "Dataset myfilms (folder) labels Effusion, Nodule and no 'No Finding'" in hint, hint
    assert "a 'No Finding' column in its CSV" in hint and "labels=...,No Finding" in hint, hint


def test_occlusion_maps_without_a_sweep_are_not_called_a_sweep_with_no_plan(tmp_path, monkeypatch):
    """``--explainers occlusion`` stores one setting's maps and plans no sweep: the sweep section says
    so and how the sweep's settings come, not "plan not recorded" (a sweep's plan is always recorded)."""
    from test_pages import _app

    monkeypatch.setenv("CXRXAI_DATA_CACHE", str(tmp_path / "cache"))
    precomputed_user_store(tmp_path)
    occlusion = ["--explainers", "occlusion", "--per-label", "1"]
    assert main(["precompute", *precompute_args(tmp_path), *occlusion]) == 0
    at = _app(tmp_path / "precomputed.duckdb", "pages/benchmark.py")
    assert not at.exception, at.exception
    (caption,) = [c.value for c in at.caption if c.value.startswith("Maps stored per setting")]
    assert "plan not recorded" not in caption, caption
    assert "no sweep was planned in this store" in caption, caption
    assert "`python -m cxrxai precompute --model ... --analyses sweep`" in caption, caption
