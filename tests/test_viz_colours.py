"""Subgroup charts give every group its own colour, the same in every chart (issue 26: F · 0-20 and
M · 80+ were the same blue): a hue per sex, a lightness per age bin, grey for a sex not recorded."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from cxrxai.labels import AGE_BINS, SEXES
from cxrxai.present import viz


def _rates(groups: list[tuple[str, str]]) -> pd.DataFrame:
    n = len(groups)
    return pd.DataFrame({"label": "Mass", "sex": [s for s, _ in groups], "age_bin": [a for _, a in groups],
                         "tpr": np.linspace(0.2, 0.9, n), "tpr_lower": 0.1, "tpr_upper": 0.95, "n_pos": 12,
                         "small": False})


def _colours(fig) -> dict[str, str]:
    return {t.name: t.marker.color for t in fig.data}


def test_every_sex_by_age_group_has_its_own_colour_and_keeps_it_in_every_chart():
    groups = [*itertools.product(SEXES, AGE_BINS), ("F", "missing"), ("nan", "40-60"), ("nan", "missing")]
    colours = _colours(viz.rate_bars(_rates(groups), ["sex", "age_bin"]))
    assert len(colours) == len(groups) == len(set(colours.values())), colours  # 13 groups, 13 colours
    assert colours["F · 0-20"] != colours["M · 80+"]
    # the same group, the same colour: in a chart with fewer groups and in the explanation bars
    few = _colours(viz.rate_bars(_rates([("M", "80+"), ("F", "0-20")]), ["sex", "age_bin"]))
    assert few == {k: colours[k] for k in few}
    expl = _rates(groups[:4]).rename(columns={"tpr": "mean", "tpr_lower": "lower", "tpr_upper": "upper"})
    assert _colours(viz.group_metric_bars(expl.assign(n=12), ["sex", "age_bin"])) == {
        k: colours[k] for k in ("M · 0-20", "M · 20-40", "M · 40-60", "M · 60-80")}


def test_a_sex_keeps_its_hue_and_an_age_bin_its_lightness_across_groupings():
    by_sex = _colours(viz.rate_bars(_rates([("F", "x"), ("M", "x")]).drop(columns="age_bin"), ["sex"]))
    assert by_sex["F"].startswith("hsl(15,") and by_sex["M"].startswith("hsl(212,")
    by_age = _colours(viz.rate_bars(_rates([("x", a) for a in AGE_BINS]).drop(columns="sex"), ["age_bin"]))
    assert len(set(by_age.values())) == len(AGE_BINS)
    lightness = [int(by_age[a].split(",")[2].strip(" %)")) for a in AGE_BINS]
    assert lightness == sorted(lightness, reverse=True)  # young light, old dark
    counts = pd.DataFrame({"split": "test", "sex": ["F", "M"], "age_bin": "0-20", "n": [3, 4]})
    cohort = viz.cohort_bars(counts)
    assert [t.marker.color for t in cohort.data] == [by_sex["F"], by_sex["M"]]
