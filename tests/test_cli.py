"""The command line on a tiny generated dataset (the session fixtures train and build it)."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from cxrxai.cli import commands, main
from cxrxai.labels import DEMO_LABELS

#: The commands the README documents.
DOCUMENTED = ["app", "audit-data", "bench", "demo", "dossier", "explain", "export", "import-predictions", "info", "phantom",
              "precompute", "report", "reroot", "score", "train", "train-shortcut"]


def test_the_documented_commands_are_the_registered_ones():
    assert sorted(commands()) == DOCUMENTED


@pytest.mark.parametrize("name", DOCUMENTED)
def test_every_command_has_help(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([name, "--help"])
    assert exit_.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_precompute_help_lists_every_adapter_option_from_its_signature(capsys):
    from cxrxai.cli._data import adapter_help
    from cxrxai.data.adapters import ADAPTERS

    def load_toy(root, *, depth: int = 3, fractions=(0.5, 0.5), strict: bool = False):
        """A toy adapter: its options appear without anyone writing them down."""

    assert adapter_help({"toy": load_toy}) == "toy: depth=3, fractions=[0.5, 0.5]"
    with pytest.raises(SystemExit):
        main(["precompute", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name in ("rsna", "siim", "vindr"):
        assert f"{name}: " in text
    options = dict(part.split(": ", 1) for part in adapter_help(ADAPTERS).split("; "))
    for name in ("rsna", "siim", "vindr", "mimic", "padchest"):  # the built-ins that split by fractions
        assert "fractions=[0.8, 0.1, 0.1]" in options[name] and f"{name}: {options[name]}" in text
    assert "seed=0" in text and "--thresholds" in text
    assert set(ADAPTERS) <= {part.split(":")[0].split()[-1] for part in adapter_help(ADAPTERS).split("; ")}


def test_info_text_and_json(tiny_store, tiny_model_path, capsys):
    from cxrxai.models.registry import sha256

    assert main(["info", "--store", str(tiny_store), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["counts"]["images"] == 64 and info["counts"]["predictions"] == 64 * len(DEMO_LABELS)
    sha = sha256(tiny_model_path)  # the model known by its weights (issue 41)
    assert info["models"] == [{"model_id": "tiny-densenet121", "arch": "densenet121", "weights_sha256": sha}]
    assert main(["info", "--store", str(tiny_store)]) == 0
    assert f"tiny-densenet121 (densenet121, weights sha256 {sha[:12]})" in capsys.readouterr().out


def test_export_predictions_csv(tiny_store, tmp_path):
    out = tmp_path / "pred.csv"
    assert main(["export", "predictions", "--store", str(tiny_store), "--out", str(out)]) == 0
    df = pd.read_csv(out)
    assert list(df.columns) == ["image_id", "split", "sex", "age", "label", "probability", "threshold", "ground_truth"]
    assert len(df) == 64 * len(DEMO_LABELS) and df["probability"].between(0, 1).all()
    assert set(df["ground_truth"].dropna().unique()) <= {0, 1}


def test_demo_resume_skips_finished_work(tiny_store, tiny_model_path, tiny_config):
    from cxrxai.pipeline import Stage, build_demo, predictions_stage

    report = build_demo(tiny_store, model_path=tiny_model_path, data_dir=tiny_model_path.parent.parent / "phantoms",
                        config=tiny_config, stages=[Stage("predictions", predictions_stage)])
    assert report["predictions"]["predicted"] == 0 and report["predictions"]["skipped"] == 64


def test_errors_exit_2_with_a_message(tmp_path, capsys):
    assert main(["info", "--store", str(tmp_path / "missing.duckdb")]) == 2
    assert "python -m cxrxai demo" in capsys.readouterr().err


def test_module_entry_point_runs(tiny_store):
    out = subprocess.run([sys.executable, "-m", "cxrxai", "info", "--store", str(tiny_store), "--json"],
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["schema_version"] >= 1
