"""The decision rule ``predicted = prob >= threshold``: one definition, applied by Python
(:func:`decide`) and by the store's SQL (:func:`decision_sql`), agreeing on every edge case."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

from cxrxai.models.thresholds import decide, decision_sql

NAN = float("nan")
#: (prob, threshold, decision): the threshold reached exactly, the ends of [0, 1], a missing (NULL or
#: NaN) threshold or probability — DuckDB alone would call a NaN probability positive.
CASES = [
    (0.5, 0.5, 1.0), (0.4999999, 0.5, 0.0), (0.5000001, 0.5, 1.0),
    (0.0, 0.0, 1.0), (1.0, 1.0, 1.0), (0.0, 1e-9, 0.0), (1.0, 0.0, 1.0), (0.0, 1.0, 0.0),
    (0.7, None, NAN), (0.7, NAN, NAN), (NAN, 0.5, NAN), (None, 0.5, NAN), (NAN, NAN, NAN), (None, None, NAN),
]


def _sql(cases) -> list[float]:
    values = ", ".join(f"({i}, {_literal(p)}, {_literal(t)})" for i, (p, t, _) in enumerate(cases))
    rows = duckdb.sql(f"SELECT {decision_sql('p', 't')} FROM (VALUES {values}) v(i, p, t) ORDER BY i").fetchall()
    return [NAN if r[0] is None else float(r[0]) for r in rows]


def _literal(x) -> str:
    return "NULL::DOUBLE" if x is None else f"'{x!r}'::DOUBLE"


def test_python_and_sql_decide_alike_on_every_edge_case():
    expected = [d for _, _, d in CASES]
    python = decide([p for p, _, _ in CASES], [t for _, t, _ in CASES]).tolist()
    np.testing.assert_array_equal(python, expected)
    np.testing.assert_array_equal(_sql(CASES), expected)


@pytest.mark.parametrize("prob, threshold, decision", CASES)
def test_a_scalar_is_decided_like_an_array(prob, threshold, decision):
    np.testing.assert_array_equal(decide(prob, threshold), decision)


def test_one_threshold_broadcasts_over_probabilities_and_inputs_are_untouched():
    prob = np.array([0.1, 0.5, 0.9])
    out = decide(prob, 0.5)
    assert out.dtype == float and out.tolist() == [0.0, 1.0, 1.0]
    assert prob.tolist() == [0.1, 0.5, 0.9]


def test_the_store_calls_as_the_rule_does(tmp_path):
    """``prediction_table``'s ``predicted`` is the rule applied to the prob and threshold beside it:
    label A has a threshold of 0.5 (reached, missed, the ends), B has none; a NaN probability
    is never stored (the column is NOT NULL and pandas writes NaN as NULL)."""
    from cxrxai.store import Store, write_store

    ids = ["i1", "i2", "i3", "i4", "i5"]
    probs = np.array([[0.5, 0.9], [0.49, 0.1], [0.0, 0.0], [1.0, 1.0], [0.7, 0.5]], np.float32)
    with write_store(tmp_path / "s.duckdb") as w:
        w.put_dataset("d", source="unit", labels=["A", "B"])
        w.put_images(pd.DataFrame({"image_id": ids, "dataset": "d", "patient_id": ids, "split": "test"}))
        w.put_predictions("m", ids, ("A", "B"), np.zeros_like(probs), probs)
        w.put_thresholds("m", [{"label": "A", "threshold": 0.5, "method": "f1", "criterion": 1.0, "split": "val"}])
    table = Store(tmp_path / "s.duckdb").prediction_table("m")
    assert table.predicted.astype(float).tolist()[::2] == [1.0, 0.0, 0.0, 1.0, 1.0]
    assert table.predicted.isna().sum() == 5
    np.testing.assert_array_equal(table.predicted.astype(float), decide(table.prob, table.threshold))


@pytest.mark.parametrize("prob, threshold, decision", [c for c in CASES if not np.isnan(c[2])])
def test_the_probability_gate_keeps_a_mask_exactly_where_the_rule_calls_positive(prob, threshold, decision):
    """Saporta et al.'s gate (``metrics.localization.probability_gate``) sits below the models layer and
    cannot call :func:`decide`; it must agree with it wherever a decision exists."""
    from cxrxai.metrics.localization import probability_gate

    kept = probability_gate(np.ones((2, 2), bool), prob, threshold).all()
    assert kept == (decide(prob, threshold) == 1.0)
