"""Every chart says n: the scatter per finding and in its title, the randomization curve in its
hover (and no spread from fewer than 5 images), the similarity boxes and the sweep's points."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cxrxai.present import viz


def test_the_scatter_names_n_per_finding_and_how_many_had_no_value():
    df = pd.DataFrame({"image_id": list("abcd"), "label": ["Mass", "Mass", "Nodule", "Nodule"],
                       "size": [1.0, 2.0, 3.0, 4.0], "iou": [0.1, 0.2, np.nan, 0.4]})
    fig = viz.regression_scatter(df, "size", "iou", line=(0.0, 0.1))
    assert [t.name for t in fig.data[:2]] == ["Mass (n = 2)", "Nodule (n = 1)"]
    assert fig.layout.title.text == "iou vs size (n = 3, 1 without a value)"


def test_randomization_spread_needs_five_images_and_the_hover_says_n():
    curves = pd.DataFrame({"method": "gradcam", "step_index": [0, 1], "step": ["original", "classifier"],
                           "mean": [1.0, 0.6], "std": [0.0, 0.2], "count": [3, 6]})
    fig = viz.randomization_lines(curves, pd.Series({"gradcam": 0.4}))
    sd = list(fig.data[0].error_y.array)
    assert np.isnan(sd[0]) and sd[1] == 0.2 and list(fig.data[0].customdata) == [3, 6]
    assert "n = %{customdata} images" in fig.data[0].hovertemplate and "± 1 SD" in fig.layout.title.text
    assert fig.data[0].name == "gradcam (n = 3–6 images)"  # and in the legend
    whole = viz.randomization_lines(curves.assign(count=10), pd.Series(dtype=float))
    assert whole.data[0].name == "gradcam (n = 10 images)"


def test_similarity_boxes_and_sweep_points_carry_n():
    t = pd.DataFrame({"kind": "reproducibility", "method": ["gradcam"] * 4 + ["saliency"] * 4, "ssim": np.linspace(0, 1, 8)})
    boxes = viz.similarity_boxes(t)
    box = boxes.data[0]
    assert box.name == "reproducibility (n = 4 a method)" and list(box.customdata) == [4] * 8
    assert boxes.layout.showlegend is True  # one kind alone: Plotly hides a lone trace's legend
    sweep = pd.DataFrame({"patch": [32, 16], "stride": [16, 8], "maps": [20, 20], "cases_scored": [20, 19],
                          "timing": "cpu", "timed_maps": [20, 20], "seconds_median": [7.2, 30.2],
                          "seconds_q1": [6.0, 25.0], "seconds_q3": [8.0, 35.0], "iou": [0.11, 0.16]})
    fig = viz.sweep_lines(sweep)
    line = fig.data[0]
    assert list(line.customdata) == [20, 19] and "(n = %{customdata} cases)" in line.hovertemplate
    assert "(n = 19–20 cases a setting;" in fig.layout.title.text  # seen without hovering too


def test_explanation_bars_hatch_small_groups_and_print_n():
    df = pd.DataFrame({"label": "Mass", "sex": ["F", "M"], "n": [4, 12], "mean": [0.5, 0.6], "lower": [np.nan, 0.5],
                       "upper": [np.nan, 0.7]})
    fig = viz.group_metric_bars(df, ["sex"])
    assert [list(t.marker.pattern.shape) for t in fig.data] == [["/"], [""]]
    assert [list(t.text) for t in fig.data] == [["n=4"], ["n=12"]] and "hatched: fewer than 10" in fig.layout.title.text


def test_the_shortcut_table_names_a_missing_peak_instead_of_nan_percent():
    row = dict(method="gradcam", verdict="shows the shortcut", difference=0.04, lower=0.03, upper=0.05, pairs=30,
               shortcut_share=0.07, control_share=float("nan"), chance=0.0128, shortcut_peak=0.0,
               control_peak=float("nan"), shortcut_lesion_share=0.2, control_lesion_share=0.3)
    shown = viz.shortcut_display(pd.DataFrame([row])).iloc[0]
    assert shown["peak on marker, shortcut / control"] == "0% / no map"
    assert shown["marker share, control"] == "no map with positive mass" and "nan" not in shown.to_string().lower()


def test_an_empty_trust_summary_stays_empty_and_an_unknown_truth_is_named():
    assert viz.verdict_table(pd.DataFrame()).empty
    assert viz.decision_text(0.5, 0.4, None).endswith("no outcome: ground truth unknown")


def test_auroc_bars_say_n_and_why_a_label_has_no_auroc():
    perf = pd.DataFrame({"label": ["Mass", "Hernia"], "auroc": [0.81, np.nan], "lower": [0.7, np.nan],
                         "upper": [0.9, np.nan], "n_positive": [12, 0], "n_negative": [88, 100]})
    fig = viz.auroc_bars(perf)
    bar = fig.data[0]
    # n sits on the axis: text inside a bar that starts at 0 would be outside the visible range
    assert bar.text is None and list(fig.layout.yaxis.tickvals) == ["Hernia", "Mass"]
    assert list(fig.layout.yaxis.ticktext) == ["Hernia (n+ 0, n− 100)", "Mass (n+ 12, n− 88)"]
    assert list(bar.hovertext) == ["Hernia: no AUROC (one class only) [—, —]<br>n+ 0, n− 100",
                                   "Mass: 0.810 [0.700, 0.900]<br>n+ 12, n− 88"]
    assert [a.text for a in fig.layout.annotations] == ["no AUROC: one class only (n+ 0, n− 100)"]
    assert fig.layout.xaxis.range[0] <= fig.layout.annotations[0].x < fig.layout.xaxis.range[1]


def test_auroc_bars_keep_a_poor_models_bars_and_whiskers_in_view():
    perf = pd.DataFrame({"label": ["Mass"], "auroc": [0.31], "lower": [0.22], "upper": [0.4],
                         "n_positive": [12], "n_negative": [88]})
    assert tuple(viz.auroc_bars(perf).layout.xaxis.range) == (0.1, 1.0)


def test_rate_bars_hover_n_and_name_the_groups_without_a_case():
    rates = pd.DataFrame({"label": ["Mass", "Mass"], "sex": ["F", "M"], "tpr": [0.5, np.nan], "tpr_lower": [0.2, np.nan],
                          "tpr_upper": [0.8, np.nan], "n_pos": [8, 0], "small": [True, True]})
    fig = viz.rate_bars(rates, ["sex"])
    assert [list(t.hovertext) for t in fig.data] == [["Mass · F: TPR 0.500<br>n = 8"],
                                                     ["Mass · M: TPR not defined (no case)<br>n = 0"]]
    assert "1 group with no case: no bar" in fig.layout.title.text
    assert "nan" not in " ".join(h for t in fig.data for h in t.hovertext).lower()


def test_prevalence_hover_gives_its_denominator_and_the_unlabelled():
    labels = pd.DataFrame({"split": ["test", "test"], "label": ["Mass", "Hernia"], "positive": [3, 0],
                           "negative": [9, 0], "unknown": [4, 7], "prevalence": [0.25, np.nan]})
    bar = viz.prevalence_bars(labels).data[0]
    assert list(bar.hovertext) == ["Mass: 3 of 12 labelled images (25.0%); 4 without a label",
                                   "Hernia: 0 of 0 labelled images (no labelled image); 7 without a label"]


def test_prevalence_hover_claims_no_unlabelled_count_it_was_not_given():
    labels = pd.DataFrame({"split": ["test"], "label": ["Mass"], "positive": [3], "negative": [9], "prevalence": [0.25]})
    assert list(viz.prevalence_bars(labels).data[0].hovertext) == ["Mass: 3 of 12 labelled images (25.0%)"]
    labels["unknown"] = [np.nan]  # an outer join's missing count is no count either
    assert list(viz.prevalence_bars(labels).data[0].hovertext) == ["Mass: 3 of 12 labelled images (25.0%)"]


def test_paired_lines_draw_each_setting_of_a_method_with_its_own_n():
    rows = pd.DataFrame({"method": ["occlusion"] * 3, "explainer": ["occlusion 32/16", "occlusion 32/16", "occlusion 16/16"],
                         "image_id": ["a", "b", "a"], "label": ["Mass"] * 3, "audc_diff_black": [0.1, 0.2, 0.3],
                         "audc_diff_mean": [0.1, 0.2, 0.3], "audc_diff_mean_normalized": [0.0, np.nan, 0.5]})
    legend = sorted(t.name for t in viz.paired_lines(rows, "audc_diff_mean_normalized").data if t.showlegend)
    assert legend == ["occlusion 16/16 (n = 1)", "occlusion 32/16 (n = 1)"]  # b has no normalised value
    assert sorted(t.name for t in viz.paired_lines(rows).data if t.showlegend) == ["occlusion 16/16 (n = 1)",
                                                                                   "occlusion 32/16 (n = 2)"]


def test_paired_lines_keep_the_black_values_readable_beside_an_exploding_normalised_one():
    rows = pd.DataFrame({"method": "gradcam", "image_id": list("abcdefghijklmnopqrst"), "label": "Mass",
                         "audc_diff_black": np.linspace(0.1, 0.4, 20), "audc_diff_mean": 0.2,
                         "audc_diff_mean_normalized": [-700.0] + list(np.linspace(-0.5, 0.5, 19))})
    fig = viz.paired_lines(rows, "audc_diff_mean_normalized")
    lo, hi = fig.layout.yaxis.range
    assert -1.5 < lo < -1 and 1 < hi < 1.5 and "1 value beyond the axis" in fig.layout.title.text
    assert viz.paired_lines(rows).layout.yaxis.range is None  # raw AUDCdiff: the whole range
