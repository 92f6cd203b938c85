"""The demo's quick phase on the shipped evidence snapshot (what `make app` builds before the server
starts) renders no phantom cohort: its cases' ground truth is the snapshot's copy of the annotations,
and it draws only the films it computes on; the background build renders the cohort once."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from cxrxai.cli import main
from cxrxai.data import demo
from cxrxai.data.phantom import PhantomConfig
from cxrxai.pipeline.evidence import PHANTOMS, shipped_dir
from cxrxai.store import open_store


@pytest.mark.slow
def test_the_quick_phase_on_the_shipped_snapshot_renders_no_cohort(tmp_path, monkeypatch):
    def render_all(*args, **kwargs):
        raise AssertionError("the quick phase rendered the whole phantom cohort")

    monkeypatch.setattr(demo, "_render_all", render_all)
    store, data_dir = tmp_path / "demo.duckdb", tmp_path / "phantoms"
    assert main(["demo", "--phase", "quick", "--store", str(store), "--data-dir", str(data_dir)]) == 0
    assert not list(data_dir.glob("images-*.npy"))
    config = PhantomConfig()
    copy = demo.shipped_annotations(config, shipped_dir() / PHANTOMS)
    shipped = json.loads(gzip.decompress(copy.read_bytes()))
    with open_store(store) as s:
        assert len(s.images(dataset="demo")) == config.n_images
        truth = s.annotations(reader="gt")
    columns = ["image_id", "label", "instance", "kind", "mask_rle", "x", "y", "w", "h"]
    expected = pd.DataFrame(shipped).sort_values(["image_id", "label", "instance", "kind"])[columns]
    got = truth.sort_values(["image_id", "label", "instance", "kind"])[columns]
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True),
                                  check_dtype=False)
