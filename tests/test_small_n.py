"""n is shown next to every benchmark number; small n is greyed; no interval from fewer than 5 cases."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cxrxai import stats
from cxrxai.present import viz


def test_heatmap_cells_show_n_and_grey_out_small_or_missing_ones():
    t = pd.DataFrame({"explainer": ["a", "a", "b", "b"], "label": ["X", "Y", "X", "Y"], "n": [12, 3, 0, 20],
                      "roc_auc": [0.7, 0.6, np.nan, np.nan]})
    fig = viz.explainer_heatmap(t, "roc_auc")
    main, grey = fig.data
    assert main.text.tolist() == [["0.7<br>n=12", "0.6<br>n=3"], ["no case", "not defined<br>for its n=20"]]
    assert np.isnan(np.asarray(main.z, float)).tolist() == [[False, True], [True, True]]
    assert (~np.isnan(np.asarray(grey.z, float))).tolist() == [[False, True], [True, True]]
    assert "nan" not in " ".join(main.text.ravel()).lower()


def test_heatmap_n_counts_the_cases_with_that_metric():
    t = pd.DataFrame({"explainer": ["a", "a"], "label": ["X", "Y"], "n": [12, 12], "n_roc_auc": [4, 11],
                      "roc_auc": [0.7, 0.6], "iou": [0.2, 0.3]})
    auc, iou = viz.explainer_heatmap(t, "roc_auc").data[0], viz.explainer_heatmap(t, "iou").data[0]
    assert auc.text.tolist() == [["0.7<br>n=4", "0.6<br>n=11"]]  # 8 of X's 12 maps have no AUC: greyed
    assert np.isnan(np.asarray(auc.z, float)).tolist() == [[True, False]]
    assert iou.text.tolist() == [["0.2<br>n=12", "0.3<br>n=12"]]


def test_no_bootstrap_interval_from_fewer_than_five_cases():
    df = pd.DataFrame({"four": [0.1, 0.5, 0.9, 0.4, np.nan, np.nan], "six": [0.1, 0.5, 0.9, 0.4, 0.3, 0.7]})
    out = stats.bootstrap_table(df, n_boot=200).set_index("name")
    assert out.loc["four", "n"] == 4 and np.isnan(out.loc["four", ["lower", "upper"]].astype(float)).all()
    assert out.loc["six", "n"] == 6 and out.loc["six", "lower"] < out.loc["six", "upper"]
    assert stats.MIN_CI_N == 5
