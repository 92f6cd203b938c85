"""The comparison reports on planted stores: a TPR gap of 0.2 on 300 positives is flagged after
Holm's correction, no gap is not, the same gap on 20 positives is not (its interval is too wide, and
that is said); a new model with noise on one group's logits is worse there and nowhere else."""

from __future__ import annotations

import numpy as np
import pytest
from _planted import planted_store

from cxrxai.errors import StoreError
from cxrxai.reports import run_report
from cxrxai.store import open_store


def _gaps(tmp_path, **kwargs):
    with open_store(planted_store(tmp_path / "s.duckdb", **kwargs)) as store:
        return run_report(store, "subgroup-gaps", "old")


def test_a_planted_gap_is_flagged_with_its_test_n_and_family(tmp_path):
    gaps = _gaps(tmp_path, positives=300, gap=0.2)
    flagged = gaps[gaps.flagged]
    assert set(zip(flagged.grouping, flagged.label, flagged.rate)) >= {("sex", "Effusion", "tpr")}
    row = gaps[(gaps.grouping == "sex") & (gaps.label == "Effusion") & (gaps.rate == "tpr")].iloc[0]
    assert (row.group, row.against, row.n_group, row.n_against) == ("F", "M", 150, 150)
    assert row["diff"] == pytest.approx(-0.2, abs=1e-9) and row.upper < 0
    assert row.p_adjusted < 0.05 and row.family == int(np.isfinite(gaps.p).sum())
    assert row.correction.startswith("Holm")
    assert not gaps[(gaps.label == "Nodule") & (gaps.grouping == "sex")].flagged.any()


def test_no_gap_is_not_flagged_and_a_small_gap_is_too_wide_not_flagged(tmp_path):
    assert not _gaps(tmp_path / "a", positives=300, gap=0.0)[lambda d: d.rate == "tpr"].flagged.any()
    small = _gaps(tmp_path / "b", positives=20, gap=0.2)
    row = small[(small.grouping == "sex") & (small.label == "Effusion") & (small.rate == "tpr")].iloc[0]
    assert row["diff"] == pytest.approx(-0.2, abs=1e-9)
    assert not row.flagged and row.too_wide and row.width > 0.4


def test_the_family_correction_is_an_option(tmp_path):
    with open_store(planted_store(tmp_path / "s.duckdb", positives=300, gap=0.1)) as store:
        holm = run_report(store, "subgroup-gaps", "old")
        bh = run_report(store, "subgroup-gaps", "old", correction="fdr_bh")
    assert (bh.p_adjusted <= holm.p_adjusted + 1e-12).all() and bh.correction.iloc[0].startswith("Benjamini")


def test_a_store_without_demographics_says_why(tmp_path):
    with open_store(planted_store(tmp_path / "s.duckdb", demographics=False)) as store:
        with pytest.raises(StoreError, match="no group to compare.*sex"):
            run_report(store, "subgroup-gaps", "old")


def test_noise_on_one_groups_logits_is_worse_there_and_nowhere_else(tmp_path):
    path = planted_store(tmp_path / "s.duckdb", positives=450, gap=0.0, noise=("age_bin", "60-80", 2.0))
    with open_store(path) as store:
        cmp = run_report(store, "model-comparison", "new", vs="old")
        worse = cmp[cmp.worse]
        # the women, the men and all images hold the noisy age bin's images: worse too, explained by it
        assert {("sex", "F"), ("all", "all"), ("age_bin", "60-80")} <= set(zip(worse.grouping, worse.group))
        unexplained = worse[worse.explained_by == ""]
        assert set(zip(unexplained.grouping, unexplained.group)) == {("age_bin", "60-80")}
        assert (worse[worse.explained_by != ""].explained_by == "age_bin 60-80").all()
        assert (worse[worse.explained_by != ""].p_without >= 0.05).all()
        assert not cmp.better.any()
        auc = cmp[(cmp.metric == "auroc") & (cmp.group == "60-80")].iloc[0]
        assert auc.test.startswith("DeLong") and auc.n == auc.n_pos + auc.n_neg == 2 * 450 // 3
        same = run_report(store, "model-comparison", "old", vs="old".replace("old", "new"))
        assert cmp.attrs["shared_images"] == 900 and len(same) == len(cmp)
        top = run_report(store, "model-disagreements", "new", vs="old", top=3)
        assert len(top) == 6 and set(top.age_bin) == {"60-80"}


def test_a_copy_is_no_different_and_the_old_model_is_required(tmp_path):
    with open_store(planted_store(tmp_path / "s.duckdb", positives=60)) as store:
        cmp = run_report(store, "model-comparison", "new", vs="old")
        assert not (cmp.worse | cmp.better).any() and (cmp["diff"] == 0).all()
        with pytest.raises(StoreError, match="vs=MODEL_ID.*other models: old.*python -m cxrxai dossier"):
            run_report(store, "model-comparison", "new")
        with pytest.raises(StoreError, match="'new' is the model itself"):
            run_report(store, "model-comparison", "new", vs="new")


def test_localization_is_compared_on_the_same_positive_cases_per_explainer(tmp_path, monkeypatch):
    """Each model's IoU of its own map of the same (image, finding), paired; an explainer only one
    model was scored with is no comparison; a lower IoU is worse (the metric registry's direction)."""
    import pandas as pd

    from cxrxai.reports import compare

    rng = np.random.default_rng(0)
    ids = [f"p{i:05d}" for i in range(80)]
    old = rng.uniform(0.2, 0.6, 80)
    scores = {"new": {"gradcam": old - 0.1 + rng.normal(0, 0.02, 80), "ig": old[:50]},
              "old": {"gradcam": old, "occlusion": old}}

    def cases(store, model_id, *, slice_, method):
        assert slice_ == "positive"
        s = scores[model_id][method]
        return pd.DataFrame({"image_id": ids[: len(s)], "label": "Effusion", "iou": s})

    def table(name, model_id):
        return pd.DataFrame({"source": "explainer", "method": list(scores[model_id])})

    monkeypatch.setattr(compare, "localization_cases", cases)
    with open_store(planted_store(tmp_path / "s.duckdb", positives=60)) as store:
        monkeypatch.setattr(store, "has_table", lambda name: True)
        monkeypatch.setattr(store, "table", table)
        cmp = run_report(store, "model-comparison", "new", vs="old")
    loc = cmp[cmp.metric.str.startswith("iou")]
    assert loc.metric.tolist() == ["iou · gradcam"]  # ig and occlusion: one model each
    row = loc.iloc[0]
    assert row.n == 80 and row["diff"] == pytest.approx(-0.1, abs=0.01) and row.worse and not row.better
    assert row.test.startswith("paired t-test") and row.family == int(np.isfinite(cmp.p).sum())
