"""The shipped evidence's costly checks (test_evidence.py's COSTLY): a seeded sample of their rows
recomputes equal from scratch. A file of their own, so that CI's workers (one per file) run them
beside the other checks."""

from __future__ import annotations

import pytest
from test_evidence import seeded_sample_recomputes_equal, shipped_checks


@pytest.mark.evidence
@pytest.mark.parametrize("table", shipped_checks(costly=True))
def test_a_seeded_sample_of_costly_shipped_rows_recomputes_equal(table):
    seeded_sample_recomputes_equal(table)
