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
