"""The README's evidence tables are printed by ``data_cache/readme/tables.py`` from a store's
reports: pinned on the tiny full store, so the script that regenerates the README cannot rot."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from cxrxai import reports
from cxrxai.store import open_store

SCRIPT = Path(__file__).resolve().parents[1] / "data_cache" / "readme" / "tables.py"


def test_the_readme_tables_show_n_beside_every_value_and_never_nan(tiny_full_store):
    out = subprocess.run([sys.executable, str(SCRIPT), "--store", str(tiny_full_store)], capture_output=True,
                         text=True, check=True).stdout
    with open_store(tiny_full_store) as s:
        models = list(s.models().model_id)
        explainers = reports.run_report(s, "explainers", models[0], slice_="true_positive").explainer.nunique()
    assert [m for m in re.findall(r"^### (\S+)$", out, re.M)] == models
    iou = out.split("**Explainer × finding IoU on true positives (n)**")[1].split("**")[0]
    rows = [r for r in iou.strip().splitlines() if r.startswith("|")]
    header, rule, body = rows[0], rows[1], rows[2:]
    assert header.startswith("| explainer") and set(rule) <= set("|:- ")
    assert len(body) == explainers > 3  # one row per explainer setting
    cells = [c.strip() for r in body for c in r.strip("|").split("|")[1:]]
    assert cells and all(re.fullmatch(r"(—|\d\.\d+) \(\d+\)|no case", c) for c in cells), cells
    assert "**fidelity**" in out and "**occlusion-sweep**" in out
    assert not re.search(r"\bnan\b", out, re.I)
