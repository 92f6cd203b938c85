"""Every recipe of docs/extending.md, followed the way a contributor would: the toy's file(s) are
written into a scratch copy of the package (tests/_scratch.py) and nothing else is touched; then,
with that copy first on ``sys.path``, the registry's contract tests run over the toy (``-k toy``:
none would run if the toy were not found), the CLI lists it and, where it is cheap, it runs."""

from __future__ import annotations

import json

import pytest
from _scratch import ROOT, run_in, scratch_copy

pytestmark = pytest.mark.slow

EXPLAINER = '''
"""A toy explainer: the image's channel mean, scaled."""
from .params import OUTPUT
from .registry import Param, explainer


@explainer("toy-mean", "pixel", (Param("gain", 1.0, float, "scale", range=(0, 10), control=(1.0, 2.0)), OUTPUT),
           "a toy", label="Toy mean")
def run(module, spec, images, targets, *, gain, output=None):
    return images.mean(1) * gain
'''

METRIC = '''
"""A toy metric: the Dice coefficient of the Otsu segmentation."""
import numpy as np

from .registry import Metric, register


def toy_dice(segmentation: np.ndarray, truth: np.ndarray) -> float:
    """2|P ∩ T| / (|P| + |T|); NaN when both are empty."""
    total = np.count_nonzero(segmentation) + np.count_nonzero(truth)
    return 2 * np.count_nonzero(segmentation & truth) / total if total else float("nan")


register(Metric("toy_dice", "Dice (toy)", lambda s: toy_dice(s.segmentation, s.truth), "overlap",
                "a toy", "Dice 1945", views=("table1", "ranking")))
'''

STAGE = '''
"""A toy analysis with a table of its own."""
import pandas as pd

from ..store import StageTable
from .stages import stage


@stage("toy rows", reads=("predictions",), writes=("toy_rows",), help="a toy", analysis="toy-rows",
       tables=(StageTable("toy_rows", {"model_id": "VARCHAR", "n": "BIGINT"}, key=("model_id",)),))
def toy_rows(ctx) -> dict:
    rows = pd.DataFrame({"model_id": ["m"], "n": [ctx.writer.table_counts()["predictions"]]})
    return {"rows": ctx.writer.put_table("toy_rows", rows)}
'''

REPORT = '''
"""A toy report: the store's row counts."""
import pandas as pd

from ..store import Store
from ._registry import report


@report("toy-counts", "a toy: rows per table", needs_model=False)
def toy_counts(store: Store, model_id: str | None = None) -> pd.DataFrame:
    return pd.DataFrame(sorted(store.table_counts().items()), columns=["table", "rows"])
'''

ADAPTER = '''
"""A toy dataset layout: the folder layout under another name."""
from pathlib import Path

from ._base import DatasetTables
from ._registry import adapter
from .folder import load_folder

DEMOGRAPHICS_HINT = "sex, age and view columns in the toy CSV"


@adapter("toy", hint=DEMOGRAPHICS_HINT)
def load_toy(root: str | Path, csv: str | Path, *, toy_option: int = 1) -> DatasetTables:
    return load_folder(root, csv)
'''

PAGE = '''
"""A toy page: the store's row counts."""
import streamlit as st

from pages import _common as ui

store, model_id = ui.page("Toy")
st.write("toy page", store.table_counts())
'''

#: Run in the scratch copy: the CLI's help of ``argv`` (stdout).
HELP = '''
import contextlib, io, json, os, sys
os.environ["COLUMNS"] = "10000"  # argparse wraps at the terminal's width, hyphenated names too
from cxrxai.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
    main(sys.argv[1:])
print(json.dumps({"help": out.getvalue()}))
'''


def _help(scratch, tmp_path, *argv) -> dict:
    run = run_in(scratch, HELP, *argv, home=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _contract(scratch, tmp_path, *files: str) -> None:
    """The registry's contract tests of ``files`` over the toy alone, the copy first on sys.path."""
    code = "import sys, pytest; sys.exit(pytest.main(sys.argv[1:]))"
    run = run_in(scratch, code, "-p", "no:xdist", "-q", "-k", "toy", "-o", "addopts=",
                 *[str(ROOT / f) for f in files], home=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " passed" in run.stdout


def test_an_explainer_is_its_module(tmp_path):
    scratch = scratch_copy(tmp_path, {"cxrxai/explain/toy_mean.py": EXPLAINER})
    _contract(scratch, tmp_path, "tests/explain/test_contract.py")
    assert "toy-mean" in _help(scratch, tmp_path, "precompute", "--help")["help"]
    run = run_in(scratch, '''
        import sys
        from cxrxai.explain import get
        print(get("toy-mean").title, "torch" in sys.modules)''', home=tmp_path)
    assert run.stdout.split() == ["Toy", "mean", "False"], run.stderr[-3000:]  # discovery: no torch


def test_a_metric_is_its_module(tmp_path):
    scratch = scratch_copy(tmp_path, {"cxrxai/metrics/toy_dice.py": METRIC})
    _contract(scratch, tmp_path, "tests/metrics/test_metric_registry.py")
    assert "toy_dice" in _help(scratch, tmp_path, "report", "--help")["help"]


def test_a_stage_with_a_table_is_its_module(tmp_path):
    scratch = scratch_copy(tmp_path, {"cxrxai/pipeline/toy_rows.py": STAGE})
    run = run_in(scratch, '''
        from cxrxai.pipeline.stages import analysis_stages
        from cxrxai.store import DECLARED_TABLES
        print(analysis_stages(["toy-rows"]), "toy_rows" in DECLARED_TABLES)''', home=tmp_path)
    assert run.stdout.split() == ["('toy", "rows',)", "True"], run.stderr[-3000:]
    assert "toy-rows" in _help(scratch, tmp_path, "precompute", "--help")["help"]


def test_a_report_is_its_module_and_runs_from_the_cli(tmp_path):
    scratch = scratch_copy(tmp_path, {"cxrxai/reports/toy_counts.py": REPORT})
    # argparse wraps the help, also after a hyphen ("toy-\n counts"): compared without whitespace
    assert "toy-counts:atoy" in "".join(_help(scratch, tmp_path, "report", "--help")["help"].split())
    run = run_in(scratch, '''
        import sys
        from cxrxai.cli import main
        from cxrxai.store import write_store
        with write_store(sys.argv[1]):
            pass
        sys.exit(main(["report", "toy-counts", "--store", sys.argv[1]]))''', str(tmp_path / "s.duckdb"),
                 home=tmp_path)
    assert run.returncode == 0 and "predictions" in run.stdout, run.stderr[-3000:]


def test_a_dataset_adapter_is_its_module(tmp_path):
    scratch = scratch_copy(tmp_path, {"cxrxai/data/adapters/toy.py": ADAPTER})
    run = run_in(scratch, '''
        from cxrxai.data.adapters import DEMOGRAPHICS_HINTS, adapter_options
        print(sorted(adapter_options("toy")), DEMOGRAPHICS_HINTS["toy"])''', home=tmp_path)
    assert "'toy_option'" in run.stdout and "toy CSV" in run.stdout, run.stderr[-3000:]
    assert "toy_option" in _help(scratch, tmp_path, "precompute", "--help")["help"]


def test_a_page_is_its_file_and_one_navigation_entry(tmp_path):
    scratch = scratch_copy(tmp_path, {"pages/toy.py": PAGE}, app=True)
    shell = scratch / "pages" / "_shell.py"
    entry = '"Explanations": ['
    shell.write_text(shell.read_text().replace(entry, entry + '("toy", "Toy", "toys"), ', 1))
    run = run_in(scratch, '''
        import sys
        from streamlit.testing.v1 import AppTest
        from cxrxai.store import write_store
        with write_store(sys.argv[1]):
            pass
        at = AppTest.from_file("app.py", default_timeout=60)
        at.session_state["store_path"] = sys.argv[1]
        at.run()
        at.switch_page("pages/toy.py").run()
        assert not at.exception, at.exception
        print([e.value for e in [*at.title, *at.markdown, *at.info, *at.warning]])''', str(tmp_path / "s.duckdb"),
                 home=tmp_path)
    assert run.returncode == 0 and "'Toy'" in run.stdout, run.stdout[-2000:] + run.stderr[-3000:]  # its title
