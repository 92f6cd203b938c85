"""A folder dataset with every kind of bad row, through ``precompute`` and ``import-predictions``:
each bad row or file is one problem row (file, row, image id, what was done), the good rows are
fully processed, a re-run adds nothing twice, ``--strict`` stops at the first one, and a bad
predictions file stores nothing and loses nothing already stored."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cxrxai.cli import main
from cxrxai.data.phantom import PhantomConfig, sample_cohort
from cxrxai.data.phantom_files import phantom_at, write_radiograph
from cxrxai.store import open_store

pytestmark = pytest.mark.slow
CONFIG = PhantomConfig(size=96, n_images=12, seed=3)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bad")
    specs = sample_cohort(CONFIG)
    for k, (h, w) in enumerate([(120, 100), (90, 130), (110, 110)]):
        write_radiograph(phantom_at(specs[k], CONFIG, h, w).image, root / f"good{k}.png", fmt="png8" if k else "png16")
    (root / "truncated.png").write_bytes((root / "good0.png").read_bytes()[:100])
    (root / "text.png").write_text("this is not an image\n")
    rows = [  # CSV row numbers as a spreadsheet shows them: header is row 1
        {"path": "good0.png", "Effusion": 1, "Nodule": 0, "sex": "F", "age": 54},  # row 2
        {"path": "good1.png", "Effusion": 0, "Nodule": 1, "sex": "M", "age": None},  # row 3: blank age is fine
        {"path": "good2.png", "Effusion": 0, "Nodule": 0, "sex": "X", "age": 200},  # row 4: sex X, age 200
        {"path": "truncated.png", "Effusion": 1, "Nodule": 0, "sex": "M", "age": -5},  # row 5: age −5, truncated
        {"path": "text.png", "Effusion": 0, "Nodule": 0, "sex": "F", "age": 30},  # row 6: not an image
        {"path": "missing.png", "Effusion": 0, "Nodule": 1, "sex": "F", "age": 40},  # row 7: no such file
        {"path": "../../etc/passwd", "Effusion": 0, "Nodule": 0, "sex": "M", "age": 33},  # row 8: escapes the root
    ]
    pd.DataFrame(rows).assign(split="test").to_csv(root / "cases.csv", index=False)
    pd.DataFrame([
        {"path": "good0.png", "label": "Effusion", "x": 10, "y": 60, "w": 30, "h": 20},  # row 2: fine
        {"path": "good0.png", "label": "Effusion", "x": 80, "y": 100, "w": 40, "h": 40},  # row 3: crosses 100×120 edge
        {"path": "good1.png", "label": "Nodule", "x": 500, "y": 10, "w": 10, "h": 10},  # row 4: outside 130×90
        {"path": "good1.png", "label": "Nodule", "x": 10, "y": 10, "w": 0, "h": 10},  # row 5: no area
        {"path": "good2.png", "label": "Nodule", "x": -5, "y": -5, "w": 20, "h": 20},  # row 6: crosses the top left
    ]).to_csv(root / "boxes.csv", index=False)
    return root


def _precompute(root: Path, store: Path, *extra: str, labels: str = "Effusion,Nodule", model: Path) -> int:
    return main(["precompute", "--dataset", "folder", "--root", str(root), "--data-option", f"csv={root / 'cases.csv'}",
                 "--data-option", f"labels={labels}", "--data-option", f"boxes_csv={root / 'boxes.csv'}",
                 "--model", str(model), "--store", str(store), "--split", "all", "--explainers", "gradcam", *extra])


@pytest.fixture(scope="module")
def store(corpus, tiny_model_path, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bad-store") / "s.duckdb"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CXRXAI_DATA_CACHE", str(path.parent / "cache"))
        assert _precompute(corpus, path, model=tiny_model_path) == 0
    return path


EXPECTED = [  # stage, file name, row, image id, what the problem says (start), what was done
    ("adapter", "cases.csv", 4, "good2.png", "sex 'X' is not one of M, F", "sex set to missing"),
    ("adapter", "cases.csv", 4, "good2.png", "absurd age 200", "age set to missing"),
    ("adapter", "cases.csv", 5, "truncated.png", "absurd age -5", "age set to missing"),
    ("adapter", "cases.csv", 8, "../../etc/passwd", "path '../../etc/passwd' escapes the dataset root", "image skipped"),
    ("adapter", "boxes.csv", 5, "good1.png", "box with no area (w 0, h 10)", "annotation skipped"),
    ("decode", None, None, "good2.png", "Nodule box (-5.0, -5.0, 20.0, 20.0) crosses the edge of the 110×110", "clipped"),
    ("decode", "truncated.png", None, "truncated.png", "", "image skipped"),
    ("decode", "text.png", None, "text.png", "", "image skipped"),
    ("decode", "missing.png", None, "missing.png", "no image file", "image skipped"),
    ("decode", None, None, "good0.png", "Effusion box (80.0, 100.0, 40.0, 40.0) crosses the edge of the 100×120", "clipped"),
    ("decode", None, None, "good1.png", "Nodule box (500.0, 10.0, 10.0, 10.0) lies outside the 130×90", "annotation skipped"),
]


def test_every_bad_row_is_one_problem_row_saying_what_was_done(store):
    with open_store(store) as s:
        problems = s.problems()
    assert len(problems) == len(EXPECTED), problems
    for stage, file, row, image_id, says, done in EXPECTED:
        hit = problems[(problems.stage == stage) & (problems.image_id == image_id) & problems.problem.str.contains(says, regex=False)
                       & problems.problem.str.endswith(done)]
        assert len(hit) == 1, (stage, image_id, says, problems.problem.tolist())
        r = hit.iloc[0]
        assert (Path(r.file).name if isinstance(r.file, str) else None) == file
        assert (None if pd.isna(r.row) else int(r.row)) == row


def test_the_good_rows_are_fully_processed(store):
    with open_store(store) as s:
        images = s.images().set_index("image_id")
        preds = s.predictions("tiny-densenet121")
        maps = s.map_index(model_id="tiny-densenet121", method="gradcam")
        boxes = s.annotations()
    good = {"good0.png", "good1.png", "good2.png"}
    assert set(preds.image_id) == good and len(preds) == 3 * 9  # every label of the model
    assert {(i, lab) for i, lab in zip(maps.image_id, maps.label)} >= {(i, "Effusion") for i in good}
    assert (images.at["good0.png", "height"], images.at["good0.png", "width"]) == (120, 100)
    assert pd.isna(images.at["good2.png", "sex"]) and np.isnan(images.at["good2.png", "age"])
    assert np.isnan(images.at["good1.png", "age"]) and images.at["good1.png", "sex"] == "M"
    assert "../../etc/passwd" not in images.index
    # the crossing box is clipped to the image (x 80..100, y 100..120), the outside one dropped
    eff = boxes[boxes.image_id == "good0.png"].sort_values("x")
    assert eff[["x", "y", "w", "h"]].to_numpy().tolist() == [[10, 60, 30, 20], [80, 100, 20, 20]]
    assert boxes[boxes.image_id == "good1.png"].empty
    assert boxes[boxes.image_id == "good2.png"][["x", "y", "w", "h"]].to_numpy().tolist() == [[0, 0, 15, 15]]


def test_a_rerun_adds_no_problem_twice(corpus, store, tiny_model_path):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CXRXAI_DATA_CACHE", str(store.parent / "cache"))
        assert _precompute(corpus, store, labels="[Effusion, Nodule]", model=tiny_model_path) == 0
    with open_store(store) as s:
        assert len(s.problems()) == len(EXPECTED)
        assert s.datasets().labels.iloc[0].tolist() == ["Effusion", "Nodule"]  # the list spelling reads the same


def test_strict_stops_at_the_first_bad_row_with_its_message(corpus, tiny_model_path, tmp_path, capsys):
    store = tmp_path / "strict.duckdb"
    assert _precompute(corpus, store, "--strict", model=tiny_model_path) == 2
    err = capsys.readouterr().err
    # the adapter checks paths first: row 8's escaping path is the first bad row it meets
    assert "error: cases.csv, row 8: path '../../etc/passwd' escapes the dataset root" in err and not store.exists()


def test_info_lists_the_problems(store, capsys):
    assert main(["info", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "problems   folder adapter 5, folder decode 6" in out
    assert "cases.csv, row 8, ../../etc/passwd: path '../../etc/passwd' escapes the dataset root" in out


def _import(corpus, store, preds: Path) -> int:
    return main(["import-predictions", "--dataset", "folder", "--root", str(corpus), "--data-option",
                 f"csv={corpus / 'cases.csv'}", "--data-option", "labels=Effusion,Nodule", "--predictions", str(preds),
                 "--name", "elsewhere", "--store", str(store)])


def test_import_predictions_bad_rows(corpus, tmp_path, capsys):
    store = tmp_path / "imported.duckdb"
    good = pd.DataFrame({"path": ["good0.png", "good1.png", "nowhere.png"], "prob_Effusion": [0.9, 0.2, 0.5],
                         "prob_Nodule": [0.1, 0.7, 0.5]})
    good.to_csv(tmp_path / "preds.csv", index=False)
    assert _import(corpus, store, tmp_path / "preds.csv") == 0
    with open_store(store) as s:
        problems = s.problems()
        n_preds, built = len(s.predictions("elsewhere")), s.meta("built_at")
    unknown = problems[problems.stage == "import"]
    assert unknown[["image_id", "row"]].values.tolist() == [["nowhere.png", 4]]
    assert Path(unknown.file.iloc[0]).name == "preds.csv" and n_preds == 2 * 2
    # a probability that is not a number: a typed error naming file, row and column; nothing stored or lost
    good.assign(prob_Nodule=["0.1", "high", "0.5"]).to_csv(tmp_path / "bad.csv", index=False)
    assert _import(corpus, store, tmp_path / "bad.csv") == 2
    assert "bad.csv, row 3: prob_Nodule = 'high'" in capsys.readouterr().err
    with open_store(store) as s:
        assert len(s.predictions("elsewhere")) == n_preds and s.meta("built_at") == built
    # an unreadable predictions file: a typed error too
    assert _import(corpus, store, tmp_path / "absent.csv") == 2
    assert "absent.csv: no such file (--predictions must be an existing file" in capsys.readouterr().err


def test_strict_stops_at_an_unreadable_image_with_its_message(tmp_path, tiny_model_path, capsys):
    (tmp_path / "text.png").write_text("not an image")
    pd.DataFrame([{"path": "text.png", "Effusion": 1, "Nodule": 0}]).to_csv(tmp_path / "cases.csv", index=False)
    pd.DataFrame(columns=["path", "label", "x", "y", "w", "h"]).to_csv(tmp_path / "boxes.csv", index=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CXRXAI_DATA_CACHE", str(tmp_path / "cache"))
        assert _precompute(tmp_path, tmp_path / "s.duckdb", "--strict", model=tiny_model_path) == 2
    err = capsys.readouterr().err
    assert "text.png is not a readable PNG/JPEG image" in err and not (tmp_path / "s.duckdb").exists()
