"""The explainer ranking: ranks by mean, the paired difference from the best on shared cases
with a bootstrap CI (none from fewer than 5 pairs), and a display that never prints NaN."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cxrxai import reports, stats
from cxrxai.present import viz
from cxrxai.store import open_store

MODEL = "tiny-densenet121"


def test_ranks_and_paired_differences_match_a_hand_computation(tiny_full_store):
    plain = ("gradcam", "gradcam++", "ig", "gradientshap")
    with open_store(tiny_full_store) as s:
        ranking = reports.run_report(s, "explainer-ranking", MODEL, metric="iou", slice="positive", n_boot=200)
        tables = {m: reports.localization_cases(s, MODEL, slice_="positive", method=m).pivot_table(
            index="image_id", columns="label", values="iou", aggfunc="first") for m in plain}
    assert set(ranking.explainer) >= {*plain, "occlusion 32/16"}
    for label, g in ranking.groupby("label"):
        assert list(g["rank"]) == list(range(1, len(g) + 1))
        assert list(g["iou"]) == sorted(g["iou"], reverse=True)  # best first
        assert pd.isna(g["vs"].iloc[0]) and (g["vs"].iloc[1:] == g["explainer"].iloc[0]).all()
        for r in g.itertuples():
            if r.explainer in plain:
                scores = tables[r.explainer][label].dropna()
                assert r.n == len(scores) and np.isclose(r.iou, scores.mean())
    checked = 0
    for r in ranking[(ranking["rank"] > 1) & ranking.explainer.isin(plain) & ranking.vs.isin(plain)].itertuples():
        diff = (tables[r.vs][r.label] - tables[r.explainer][r.label]).dropna()  # best − it, on shared cases
        assert r.n_paired == len(diff) and np.isclose(r.difference, diff.mean())
        ci = stats.bootstrap_table(diff.to_frame("d"), n_boot=200).iloc[0]
        assert np.isclose(r.lower, ci["lower"], equal_nan=True) and r.behind == bool(ci["lower"] > 0)
        checked += 1
    assert checked >= 3


def test_fewer_than_five_shared_cases_give_no_interval_and_the_display_says_why(tiny_full_store):
    with open_store(tiny_full_store) as s:
        ranking = reports.run_report(s, "explainer-ranking", MODEL, metric="hit", n_boot=100)
    few = ranking[(ranking["rank"] > 1) & (ranking.n_paired < stats.MIN_CI_N)]
    assert len(few) and few.lower.isna().all() and not few.behind.any()
    shown = viz.ranking_display(ranking, "hit")
    text = shown.astype(str).to_numpy().ravel()
    assert not any("nan" in t.lower() for t in text)
    assert any("no interval from fewer than 5" in t for t in text)
    assert (shown["rank"] == 1).sum() == ranking.label.nunique()
