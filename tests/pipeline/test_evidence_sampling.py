"""How a shipped-evidence check draws its seeded sample: row by row, or by whole units where its
stage computes several rows at once (a fidelity case's methods share their faithfulness subsets and
random-order curves, so the build computed them together and a recomputation pays per case)."""

from __future__ import annotations

import pandas as pd
import pytest

from cxrxai.pipeline.evidence.recompute import CHECKS, sample

CASE = ["model_id", "image_id", "label"]


@pytest.fixture()
def folder(tmp_path):
    """A snapshot folder with a fidelity table of 5 cases × 2 methods and a maps table of 12 rows."""
    rows = [{"model_id": m, "image_id": f"im{i}", "label": "Mass", "method": method, "params_key": "{}",
             "faithfulness": 0.1 * i} for m in ("a", "b") for i in range(3) for method in ("gradcam", "occlusion")]
    pd.DataFrame(rows[:-2]).to_parquet(tmp_path / "fidelity.parquet", index=False)
    pd.DataFrame(rows).drop(columns="faithfulness").to_parquet(tmp_path / "maps.parquet", index=False)
    return tmp_path


@pytest.mark.parametrize("seed", range(12))
def test_a_fidelity_sample_is_whole_cases_with_every_method(folder, seed):
    drawn = sample(folder, "fidelity", 4, seed)
    assert len(drawn) == 4
    per_case = drawn.groupby(CASE).method.apply(sorted)
    assert per_case.tolist() == [["gradcam", "occlusion"]] * 2, drawn
    table = pd.read_parquet(folder / "fidelity.parquet")
    assert len(drawn.merge(table)) == 4  # the table's own rows, unchanged


def test_a_sample_that_ends_inside_a_case_takes_the_next_cases_first_rows(folder):
    drawn = sample(folder, "fidelity", 3, 1)
    assert drawn.groupby(CASE).size().sort_values().tolist() == [1, 2]
    assert len(sample(folder, "fidelity", 50, 1)) == 10  # fewer when the table has fewer


def test_the_units_order_follows_the_seed(folder):
    cases = {tuple(sample(folder, "fidelity", 2, seed)[CASE].iloc[0]) for seed in range(12)}
    assert len(cases) > 2


def test_a_check_without_a_unit_draws_row_by_row(folder):
    assert CHECKS["maps"].unit is None and CHECKS["fidelity"].unit == tuple(CASE)
    rows = pd.read_parquet(folder / "maps.parquet")
    pd.testing.assert_frame_equal(sample(folder, "maps", 4, 3),
                                  rows.sample(n=4, random_state=3).reset_index(drop=True))
