"""The commands without a test elsewhere, run as a user types them: ``phantom``, ``train`` (a
tiny schedule) and ``bench`` (a tiny grid). ``precompute``, ``import-predictions`` and
``explain`` run in ``tests/e2e`` and ``tests/data/test_bad_rows.py`` on datasets on disk."""

from __future__ import annotations

import json

import cv2
import pytest

from cxrxai.cli import main
from cxrxai.labels import DEMO_LABELS, FINDINGS

pytestmark = pytest.mark.slow


def test_phantom_renders_one_test_case_per_finding_in_a_grid(tmp_path, capsys):
    out = tmp_path / "phantoms.png"
    assert main(["phantom", "--n-images", "400", "--size", "64", "--columns", "4", "--out", str(out)]) == 0
    cases = json.loads(capsys.readouterr().out)["cases"]
    assert [f in c["findings"] for f, c in zip(FINDINGS, cases)] == [True] * 8
    assert len({c["image_id"] for c in cases}) == 8
    img = cv2.imread(str(out))
    assert img.shape == (2 * 64 + 4, 4 * 64 + 3 * 4, 3)  # 2 rows × 4 columns of 64 px, 4 px white gaps
    assert (img[64:68] == 255).all()  # the gap between the rows


def test_phantom_unknown_id_is_a_clear_error(tmp_path, capsys):
    assert main(["phantom", "--n-images", "20", "--size", "64", "--ids", "nope", "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "unknown image ids ['nope']" in err and "ids look like ph0-" in err


def test_train_a_tiny_schedule_writes_weights_and_card(tmp_path, capsys):
    argv = ["train", "--name", "cli-tiny", "--schedule", "48:1", "--n-images", "40", "--size", "64", "--batch-size", "8",
            "--models-dir", str(tmp_path / "models"), "--data-dir", str(tmp_path / "phantoms")]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    card = json.loads((tmp_path / "models" / "cli-tiny.json").read_text())
    assert (tmp_path / "models" / "cli-tiny.pt").is_file() and report["weights"].endswith("cli-tiny.pt")
    assert tuple(card["labels"]) == DEMO_LABELS and card["input_size"] == 64 and card["arch"] == "densenet121"
    assert set(report["test_auroc"]) <= set(DEMO_LABELS) and set(report["thresholds"]) <= set(DEMO_LABELS)
    assert card["card"]["weights_dtype"] == "float16"


def test_bench_a_tiny_grid(tiny_model_path, tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", "--model", str(tiny_model_path), "--size", "64", "--settings", "32/32,32/16", "--no-captum",
                 "--engines", "batched", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert json.loads(capsys.readouterr().out) == result
    occ = {(r["patch"], r["stride"]): r for r in result["occlusion"]}
    assert set(occ) == {(32, 32), (32, 16)}
    assert occ[(32, 32)]["positions"] == 4 and occ[(32, 16)]["positions"] == 9  # ((64 − 32) / stride + 1)²
    assert all(r["ours_batched_s"] > 0 for r in occ.values()) and result["size"] == 64
    assert {e["method"].split()[0] for e in result["explainers"]} >= {"gradcam"}
