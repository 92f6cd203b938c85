"""Header names with spaces around them (``Consolidation ``, `` path``), as a spreadsheet or a
hand-edited CSV leaves them: read under their stripped names by every adapter (the shared
``read_csv``), said in a note row and in the data audit."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from cxrxai.audit import audit_store, to_text
from cxrxai.audit._reasons import reason
from cxrxai.cli import main
from cxrxai.data.adapters import load_dataset
from cxrxai.data.adapters._base import Problems, read_csv
from cxrxai.store import open_store

NOTE = "column name(s) ['Consolidation '] have spaces around them; read as ['Consolidation']"


def _cases(root: Path) -> Path:
    (root / "imgs").mkdir(parents=True)
    for i in range(3):
        cv2.imwrite(str(root / "imgs" / f"{i}.png"), np.full((32, 32), 60 * i, np.uint8))
    (root / "cases.csv").write_text("path,Consolidation ,Edema\nimgs/0.png,1,0\nimgs/1.png,0,1\n"
                                    "imgs/2.png,0,0\n")
    return root / "cases.csv"


def test_a_folder_csv_header_with_a_trailing_space_is_read_and_said(tmp_path):
    csv = _cases(tmp_path)
    t = load_dataset("folder", tmp_path, csv=csv, labels=["Consolidation", "Edema"])
    values = t.labels.set_index(["image_id", "label"])["value"]
    assert values[("imgs/0.png", "Consolidation")] == 1 and len(t.images) == 3
    assert NOTE in set(t.problems.problem)
    assert reason(NOTE) == "column name with spaces around it"


def test_dtypes_and_column_filters_use_the_stripped_names(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text(" dicom_id ,ViewPosition \n007,PA\n")
    problems = Problems(strict=True)  # a note, not a bad row: strict does not stop
    frame = read_csv(path, problems=problems, dtype={"dicom_id": str}, usecols=lambda c: c == "dicom_id")
    assert list(frame.columns) == ["dicom_id"] and frame["dicom_id"].iloc[0] == "007"
    assert "read as ['dicom_id', 'ViewPosition']" in problems.rows[0]["problem"]
    clean = tmp_path / "clean.csv"
    clean.write_text("a,b\n1,2\n")
    assert read_csv(clean, problems=problems).columns.tolist() == ["a", "b"] and len(problems.rows) == 1


def test_the_data_audit_says_a_header_was_stripped(tmp_path, capsys):
    csv = _cases(tmp_path / "data")
    preds = pd.DataFrame({"path": ["imgs/0.png", "imgs/1.png"], "prob_Consolidation": [0.8, 0.3]})
    preds.to_csv(tmp_path / "preds.csv", index=False)
    store = tmp_path / "s.duckdb"
    assert main(["import-predictions", "--dataset", "folder", "--root", str(tmp_path / "data"),
                 "--data-option", f"csv={csv}", "--data-option", "labels=Consolidation,Edema",
                 "--predictions", str(tmp_path / "preds.csv"), "--name", "m", "--store", str(store)]) == 0
    with open_store(store) as s:
        text = to_text(audit_store(s))
    assert "column name with spaces around it" in text and "read as ['Consolidation']" in text
