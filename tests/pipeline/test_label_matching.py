"""A model meets a dataset through the label synonym table: ``precompute`` on a folder labelled
"Pleural Effusion" with a checkpoint whose outputs say "Effusion" stores predictions that meet
the ground truth, records every match (label_matches) and says loudly when nothing matched;
a missing split names the splits there are; ``--thresholds FILE`` stores the file's thresholds;
``import-predictions`` matches and reports its labels the same way."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import torchvision
from PIL import Image

from cxrxai.cli import main
from cxrxai.store import open_store

OUTPUTS = ["Effusion", "Nodule/Mass", "Pleural_Thickening", "Hernia"]  # a torchxrayvision-like spelling
SPLITS = ["train", "train", "val", "val", "val", "val", "test", "test"]
TRUTH = ["Pleural Effusion", "Nodule", "", "Pleural Effusion|Pleural thickening", "Nodule",
         "Pleural Effusion", "Pleural Effusion|Nodule", ""]


def _folder(root: Path, splits=SPLITS) -> Path:
    rng = np.random.default_rng(0)
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, (split, labels) in enumerate(zip(splits, TRUTH)):
        Image.fromarray(rng.integers(0, 256, (40, 40), dtype=np.uint8)).save(root / f"c{i}.png")
        rows.append({"path": f"c{i}.png", "sex": "MF"[i % 2], "age": 30 + i, "split": split,
                     "labels": labels})
    pd.DataFrame(rows).to_csv(root / "cases.csv", index=False)
    return root


def _checkpoint(folder: Path, outputs=OUTPUTS) -> str:
    torch.manual_seed(0)
    torch.save(torchvision.models.resnet18(num_classes=len(outputs)).state_dict(), folder / "net.pt")
    (folder / "net.labels.json").write_text(json.dumps(outputs))
    return f"resnet18:{folder / 'net.pt'}:{folder / 'net.labels.json'}"


def _precompute(root: Path, store: Path, model: str, *extra: str) -> int:
    return main(["precompute", "--dataset", "folder", "--root", str(root), "--data-option",
                 f"csv={root / 'cases.csv'}", "--model", model, "--input-size", "32", "--store", str(store),
                 "--explainers", "gradcam", *extra])


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CXRXAI_DATA_CACHE", str(tmp_path / "cache"))


def test_effusion_output_meets_pleural_effusion_ground_truth(tmp_path, capsys):
    root, store = _folder(tmp_path / "data"), tmp_path / "s.duckdb"
    thr = tmp_path / "thr.csv"
    thr.write_text("label,threshold\nEffusion,0.25\npleural thickening,0.5\nFracture,0.1\n")
    assert _precompute(root, store, _checkpoint(tmp_path), "--split", "all", "--thresholds", str(thr)) == 0
    out = capsys.readouterr()
    assert "Effusion → Pleural Effusion (alias)" in out.err and "Nodule/Mass" in out.err
    report = json.loads(out.out)
    assert report["labels"]["labels_no_output_scores"] == ["Nodule"]
    with open_store(store) as s:
        table = s.prediction_table("net")
        matches = s.label_matches(dataset="folder", model_id="net")
        thresholds = s.thresholds("net").set_index("label")
        problems = s.problems()
        spec = s.model_spec("net")
    effusion = table[table.label == "Pleural Effusion"]
    assert len(effusion) == 8 and effusion.ground_truth.tolist() == [1, 0, 0, 1, 0, 1, 1, 0]
    assert table[table.label == "Pleural thickening"].ground_truth.sum() == 1  # Pleural_Thickening, by case
    assert table[table.label == "Nodule/Mass"].ground_truth.isna().all()  # never scored as Nodule
    assert spec.labels == ("Pleural Effusion", "Nodule/Mass", "Pleural thickening", "Hernia")
    assert spec.card["model_outputs"] == OUTPUTS
    columns = matches[["model_output", "dataset_label", "how"]].fillna("-")
    rows = set(columns.itertuples(index=False, name=None))
    assert ("Effusion", "Pleural Effusion", "alias") in rows
    assert ("Pleural_Thickening", "Pleural thickening", "case") in rows
    assert ("Nodule/Mass", "-", "unmatched output") in rows and ("-", "Nodule", "unmatched label") in rows
    assert thresholds.loc["Pleural Effusion", "threshold"] == pytest.approx(0.25)
    assert thresholds.loc["Pleural Effusion", "method"] == "file:thr.csv"
    assert thresholds.loc["Pleural thickening", "threshold"] == pytest.approx(0.5)
    assert problems.stage.tolist() == ["thresholds"] and "'Fracture'" in problems.problem.iloc[0]


def test_a_model_matching_no_label_is_a_problem_row_and_a_warning(tmp_path, capsys):
    root, store = _folder(tmp_path / "data"), tmp_path / "s.duckdb"
    assert _precompute(root, store, _checkpoint(tmp_path, ["Hernia", "Fracture"]), "--split", "all") == 0
    assert "WARNING: no output of net matches a label of folder" in capsys.readouterr().err
    with open_store(store) as s:
        problems = s.problems()
        how = s.label_matches(model_id="net").how.tolist()
    assert problems.stage.tolist() == ["labels"] and "Hernia, Fracture" in problems.problem.iloc[0]
    assert sorted(how) == ["unmatched label"] * 3 + ["unmatched output"] * 2


def test_a_missing_split_names_the_splits_there_are(tmp_path, capsys):
    root = _folder(tmp_path / "data", splits=["train"] * 5 + ["val"] * 3)
    assert _precompute(root, tmp_path / "s.duckdb", _checkpoint(tmp_path)) == 2  # --split test by default
    err = capsys.readouterr().err
    assert "no 'test' split; its splits: train (5 images), val (3 images)" in err and "--split" in err
    assert not (tmp_path / "s.duckdb").exists()  # said before any work


def test_imported_predictions_match_labels_and_report_the_extra_ones(tmp_path, capsys):
    root, store = _folder(tmp_path / "data"), tmp_path / "s.duckdb"
    pd.DataFrame({"image_id": [f"c{i}.png" for i in range(8)], "prob_Effusion": np.linspace(0.1, 0.9, 8),
                  "prob_Hernia": 0.5}).to_csv(tmp_path / "preds.csv", index=False)
    assert main(["import-predictions", "--dataset", "folder", "--root", str(root), "--data-option",
                 f"csv={root / 'cases.csv'}", "--predictions", str(tmp_path / "preds.csv"),
                 "--store", str(store)]) == 0
    assert json.loads(capsys.readouterr().out)["labels"] == ["Pleural Effusion", "Hernia"]
    with open_store(store) as s:
        table = s.prediction_table("imported")
        matches = s.label_matches(model_id="imported")
        problems = s.problems()
    assert table[table.label == "Pleural Effusion"].ground_truth.notna().all()
    how = dict(zip(matches.model_output, matches.how))
    assert how["Effusion"] == "alias" and how["Hernia"] == "unmatched output"
    assert any("'Hernia', which matches no dataset label" in p for p in problems.problem)


def test_a_reloaded_model_gets_the_dataset_spelling_back(tmp_path):
    """The app reloads a stored model from its file (the model's own names) and its stored spec
    (the dataset's): a live map of "Pleural Effusion" must find its output."""
    from cxrxai.models.registry import build, save
    from cxrxai.models.spec import ModelSpec
    from cxrxai.models.stored import load_stored

    spec = ModelSpec(name="ours", arch="resnet18", labels=("Effusion", "Hernia"), input_size=32,
                     thresholds={"Effusion": 0.3})
    path = save(build("resnet18", 2), spec, tmp_path / "ours")
    stored = spec.with_label_names(("Pleural Effusion", "Hernia"))
    assert stored.thresholds == {"Pleural Effusion": 0.3}
    assert stored.card["model_outputs"] == ["Effusion", "Hernia"]
    model = load_stored(stored, path, device="cpu")
    assert model.spec.labels == ("Pleural Effusion", "Hernia")
    assert model.spec.label_index("Pleural Effusion") == 0


def test_predictions_stored_under_the_models_own_names_are_not_resumed_under_new_ones(tmp_path, capsys):
    from cxrxai.store import write_store

    root, store = _folder(tmp_path / "data"), tmp_path / "s.duckdb"
    with write_store(store) as w:  # a store built before label matching: "Effusion" on this very dataset
        w.put_predictions("net", ["c0.png"], ("Effusion",), np.zeros((1, 1)), np.full((1, 1), 0.5))
    assert _precompute(root, store, _checkpoint(tmp_path), "--split", "all") == 2
    err = capsys.readouterr().err
    assert "under its own label names (Effusion), which now score the dataset's Pleural Effusion" in err
    with open_store(store) as s:
        assert s.predicted_labels("net") == {"Effusion"} and s.label_matches().empty  # nothing was written


def test_the_pages_show_the_matches_and_open_on_a_labelled_finding_of_any_split(tmp_path):
    from streamlit.testing.v1 import AppTest

    root, store = _folder(tmp_path / "data"), tmp_path / "s.duckdb"
    outputs = ["Hernia", "Effusion", "Nodule/Mass", "Pleural_Thickening"]  # the first one labels nothing here
    assert _precompute(root, store, _checkpoint(tmp_path, outputs), "--split", "all") == 0
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120)
    at.session_state["store_path"] = str(store)
    at.run()
    at.switch_page("pages/overview.py").run()
    assert not at.exception, at.exception
    shown = [df.value for df in at.dataframe]
    table = next(t for t in shown if "how" in t.columns)  # the data audit's "Model outputs and dataset labels"
    assert ["Effusion", "Pleural Effusion", "alias"] in table[["model_output", "dataset_label", "how"]].values.tolist()
    assert any("net: outputs matched to labels 1 alias, 1 case; 2 output(s) score no dataset label" in m.value
               for m in at.markdown)
    at.switch_page("pages/explorer.py").run()
    assert not at.exception, at.exception
    split = next(r for r in at.radio if r.label == "Split")
    assert list(split.options) == ["test (2 images)", "val (4 images)", "train (2 images)", "all (8 images)"]
    assert next(s for s in at.selectbox if s.label == "Finding").value == "Pleural Effusion"
    assert any("of 2 Pleural Effusion cases (test split)" in c.value for c in at.caption)
    split.set_value("val").run()
    assert any("of 4 Pleural Effusion cases (val split)" in c.value for c in at.caption)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120)
    at.session_state["store_path"] = str(store)  # anew: AppTest resends the last case's widgets
    at.run()
    at.switch_page("pages/explorer.py").run()
    next(r for r in at.radio if r.label == "Split").set_value("all").run()
    assert any("of 8 Pleural Effusion cases (every split)" in c.value for c in at.caption)


def test_scores_of_an_earlier_split_follow_thresholds_chosen_later(tmp_path, capsys):
    """The test split precomputed first (no validation predictions: no threshold, no decision), then
    the validation split (thresholds chosen there): the test maps' localization rows take the new
    decisions, as the prediction table does — never an explainer table of stale 'not predicted' rows."""
    root, store = _folder(tmp_path / "data"), tmp_path / "s.duckdb"
    model = _checkpoint(tmp_path)
    assert _precompute(root, store, model, "--split", "test") == 0
    with open_store(store) as s:
        assert s.thresholds("net").empty and s.table("localization").predicted.isna().all()
    capsys.readouterr()
    assert _precompute(root, store, model, "--split", "val") == 0
    report = json.loads(capsys.readouterr().out)
    with open_store(store) as s:
        decided = s.prediction_table("net").set_index(["image_id", "label"])["predicted"]
        loc = s.table("localization")
        labels = set(s.thresholds("net").label)
    assert labels and labels <= {"Pleural Effusion", "Nodule/Mass", "Pleural thickening", "Hernia"}
    assert loc.predicted.notna().all() and len(loc) == 2 * 6  # the 2 matched labels × test (2) and val (4)
    now = decided.reindex(pd.MultiIndex.from_arrays([loc.image_id, loc.label])).astype(bool).to_numpy()
    assert (loc.predicted.astype(bool).to_numpy() == now).all()
    assert report["localization"]["rescored_after_a_threshold_change"] == 4  # the test split's 2 × 2


def test_a_second_dataset_never_takes_over_the_first(tmp_path, capsys):
    """Two sites' folders, both read with the folder adapter (default name "folder") and naming their
    films c0.png…: the second is refused until it has a name and image ids of its own; the first's
    root, labels and predictions stay as they were."""
    first, second, store = _folder(tmp_path / "a"), _folder(tmp_path / "b"), tmp_path / "s.duckdb"
    model = _checkpoint(tmp_path)
    assert _precompute(first, store, model, "--split", "all") == 0
    before = store.read_bytes()
    assert _precompute(second, store, model, "--split", "all") == 2
    assert f"already holds a dataset 'folder' read from {first}" in capsys.readouterr().err
    assert _precompute(second, store, model, "--split", "all", "--data-option", "name=b") == 2
    assert "8 image id(s) of dataset 'b' already belong to dataset 'folder'" in capsys.readouterr().err
    assert store.read_bytes() == before  # nothing written by either
    cases = pd.read_csv(second / "cases.csv")
    cases.assign(image_id="b/" + cases["path"]).to_csv(second / "cases.csv", index=False)
    assert _precompute(second, store, model, "--split", "all", "--data-option", "name=b") == 0
    with open_store(store) as s:
        roots = s.datasets().set_index("dataset")["root"].to_dict()
        per_dataset = s.images().groupby("dataset").size().to_dict()
        ids = s.prediction_table("net")[["image_id"]]
        predicted = ids.merge(s.images()[["image_id", "dataset"]], on="image_id").groupby("dataset").size()
    assert roots == {"folder": str(first), "b": str(second)} and per_dataset == {"folder": 8, "b": 8}
    assert predicted.to_dict() == {"folder": 32, "b": 32}
