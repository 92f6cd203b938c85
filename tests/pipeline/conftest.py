"""Fixtures shared by the Ray engine's tests (one local-engine store for both modules)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

from cxrxai.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from e2e import _layouts  # noqa: E402


@pytest.fixture(scope="package")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("ray")
    (root / "data").mkdir()
    layout = _layouts.folder(root / "data", n=12)
    env = {**os.environ, "CXRXAI_DATA_CACHE": str(root / "cache")}
    local = root / "local.duckdb"
    # Ray runs each 1-CPU unit on one thread; float sums are equal bit for bit only at equal thread
    # counts, so the local engine computes the reference on one thread too (CI's xdist gives it one)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("CXRXAI_DATA_CACHE", str(root / "cache"))
            assert main(_ray_argv(layout, root, local)) == 0
    finally:
        torch.set_num_threads(threads)
    return layout, root, env, local



def _ray_argv(layout, root, store):
    from pipeline.test_ray_engine import _argv

    return _argv(layout, root, store)
