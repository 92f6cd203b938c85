"""The planted shortcut ("model or method?"): the counterfactual cases, the fine-tuned model, the
stage's rows and the summary's verdicts."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from cxrxai.data.demo import load_demo
from cxrxai.data.phantom import render
from cxrxai.errors import MetricError, ModelError
from cxrxai.metrics.shortcut import marker_zone, mass_shares, reliance, shortcut_summary
from cxrxai.models.registry import load
from cxrxai.pipeline.shortcut import _cases, shortcut_stage
from cxrxai.store import open_store, write_store


def test_the_counterfactual_differs_only_in_the_marker(shortcut_world, shortcut_plan):
    config, _, root = shortcut_world
    data = load_demo(config, root / "data")
    label = config.shortcut.label
    train = [s for s in data.specs if s.split == "train"]
    assert any(s.shortcut for s in train) and not any(s.shortcut for s in data.specs if s.split == "test")
    # planted with the label far more often than without it
    pos = [s.shortcut for s in train if label in s.findings]
    neg = [s.shortcut for s in train if label not in s.findings]
    assert np.mean(pos) > 0.6 > 0.3 > np.mean(neg)
    i = _cases(data, label, shortcut_plan)[0]
    marked = render(replace(data.specs[i], shortcut=True), config)
    changed = marked.image != data.images[i]
    assert changed.any() and not (changed & ~marked.shortcut_mask).any()  # nothing but the marker moved


def test_fine_tuning_starts_from_the_control_weights(shortcut_world, tiny_model_path):
    import torch

    _, path, _ = shortcut_world
    tuned, control = load(path, device="cpu"), load(tiny_model_path, device="cpu")
    assert tuned.spec.card["train_config"]["init_from"].endswith(tiny_model_path.name)
    a, b = tuned.module.state_dict(), control.module.state_dict()
    # one short epoch moves the weights a little: they stay near the control's, far from a fresh init
    drift = torch.stack([(a[k] - b[k]).abs().mean() / (b[k].abs().mean() + 1e-8) for k in a if a[k].is_floating_point()
                         and b[k].abs().mean() > 0]).median()
    assert 0 < float(drift) < 0.5


def test_stage_scores_both_models_on_the_same_marked_cases_and_resumes(shortcut_world, shortcut_plan, tiny_model_path,
                                                                        tmp_path):
    config, path, root = shortcut_world
    store = tmp_path / "s.duckdb"
    models = {"shortcut": load(path, device="cpu"), "control": load(tiny_model_path, device="cpu")}
    with write_store(store) as w:
        first = shortcut_stage(w, models, config=config, data_dir=root / "data", plan=shortcut_plan)
        again = shortcut_stage(w, models, config=config, data_dir=root / "data", plan=shortcut_plan)
    assert first["cases"] == 5 and first["shortcut"]["computed"] == first["control"]["computed"] == 10
    assert again["shortcut"]["computed"] == again["control"]["computed"] == 0
    with open_store(store) as s:
        rows = s.table("shortcut")
    assert len(rows) == 20 and set(rows.role) == {"shortcut", "control"}
    per_role = rows.groupby("role").image_id.apply(lambda v: tuple(sorted(set(v))))
    assert per_role["shortcut"] == per_role["control"]
    assert rows.gt_positive.sum() == 12  # 3 positives × 2 methods × 2 models
    # the probabilities without the marker are the model's own predictions on the unmarked test images
    data = load_demo(config, root / "data")
    ids = [data.specs[i].image_id for i in _cases(data, config.shortcut.label, shortcut_plan)]
    from cxrxai.models.inference import predict_logits, sigmoid

    model = models["control"]
    t = model.spec.label_index(config.shortcut.label)
    expect = sigmoid(predict_logits(model, data.images[_cases(data, config.shortcut.label, shortcut_plan)]))[:, t]
    got = rows[(rows.role == "control") & (rows.method == "gradcam")].set_index("image_id").loc[ids, "prob_without"]
    np.testing.assert_allclose(got.to_numpy(), expect, atol=1e-6)
    shares = rows.marker_share.dropna()  # NaN: a map without positive mass (the tiny model's Grad-CAM can be)
    assert len(shares) >= 10 and shares.between(0, 1).all() and (rows.zone_area > 0).all()
    assert rows.thumb.map(len).eq(56 * 56).all()
    assert rows.params_key[rows.method == "occlusion"].str.contains('"patch":32').all()
    with pytest.raises(ModelError, match="'shortcut' and a 'control'"):
        shortcut_stage(None, {"shortcut": models["shortcut"]}, config=config, data_dir=root / "data", plan=shortcut_plan)


def test_mass_shares_by_hand():
    marker = np.zeros((20, 20), bool)
    marker[2, 2] = True
    zone = marker_zone(marker, 0.05)  # radius 1 px: the disk of radius 1 is the pixel and its 4 neighbours
    assert zone.sum() == 5 and zone[1:4, 2].all() and zone[2, 1:4].all() and not zone[1, 1]
    lesion = np.zeros_like(marker)
    lesion[10:12, 10:12] = True
    m = np.zeros((20, 20))
    m[2, 2], m[10, 10], m[15, 15] = 3.0, 1.0, -5.0  # negative values carry no mass
    s = mass_shares(m, zone, lesion)
    assert s["marker_share"] == pytest.approx(0.75) and s["lesion_share"] == pytest.approx(0.25)
    assert s["peak_on_marker"] is True and s["zone_area"] == pytest.approx(5 / 400)
    assert np.isnan(mass_shares(-m.clip(0, None), zone, lesion)["marker_share"])
    with pytest.raises(MetricError, match="carries no shortcut marker"):
        marker_zone(np.zeros((4, 4), bool), 0.1)


def _rows(shortcut_shares, control_shares, method="gradcam"):
    n = len(shortcut_shares)
    base = {"label": "Nodule", "method": method, "params_key": "{}", "zone_area": 0.02, "lesion_share": 0.1,
            "gt_positive": [True] * n}
    a = pd.DataFrame({**base, "model_id": "sc", "role": "shortcut", "image_id": [f"i{k}" for k in range(n)],
                      "marker_share": shortcut_shares, "peak_on_marker": [s > 0.5 for s in shortcut_shares],
                      "prob": 0.9, "prob_without": 0.3})
    b = pd.DataFrame({**base, "model_id": "ctl", "role": "control", "image_id": [f"i{k}" for k in range(n)],
                      "marker_share": control_shares, "peak_on_marker": False, "prob": 0.5, "prob_without": 0.5})
    return pd.concat([a, b], ignore_index=True)


def test_summary_verdicts_and_reliance_by_hand():
    shows = _rows([0.6, 0.7, 0.5, 0.8, 0.65, 0.7], [0.02, 0.03, 0.01, 0.02, 0.05, 0.02])
    misses = _rows([0.03, 0.01, 0.02, 0.04, 0.02, 0.03], [0.02, 0.03, 0.01, 0.02, 0.05, 0.02], method="ig")
    few = _rows([0.6, 0.7, 0.5], [0.0, 0.1, 0.0], method="saliency")
    faint = _rows([0.015, 0.012, 0.018, 0.016, 0.014], [0.005, 0.004, 0.006, 0.005, 0.004], method="occlusion")
    table = shortcut_summary(pd.concat([shows, misses, few, faint], ignore_index=True)).set_index("method")
    # more than the control, but not more than the zone's share of the image (0.02): not a finding
    assert table.loc["occlusion"].lower > 0
    assert table.loc["occlusion"].verdict == "more on the marker than the control, but no more than chance"
    g = table.loc["gradcam"]
    assert g.verdict == "shows the shortcut" and g.pairs == 6 and g.lower > 0
    assert g.difference == pytest.approx(np.mean([0.58, 0.67, 0.49, 0.78, 0.6, 0.68]))
    assert g.shortcut_peak == pytest.approx(5 / 6) and g.chance == pytest.approx(0.02)
    assert table.loc["ig"].verdict == "does not show it" and table.loc["ig"].lower < 0 < table.loc["ig"].upper
    assert table.loc["saliency"].verdict == "too few paired cases (3 < 5)" and np.isnan(table.loc["saliency"].lower)
    rel = reliance(shows).set_index(["role", "cases"])
    assert rel.loc[("shortcut", "all cases"), "shift"] == pytest.approx(0.6)
    assert rel.loc[("control", "all cases"), "shift"] == pytest.approx(0.0)
    assert rel.loc[("shortcut", "positives"), "n"] == 6 and rel.loc[("shortcut", "negatives"), "n"] == 0
