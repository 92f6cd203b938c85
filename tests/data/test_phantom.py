"""The phantom demo world: determinism, exact ground truth, anatomy, cohort statistics."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest

from cxrxai.data import nih_stats
from cxrxai.data.masks import bounding_box
from cxrxai.data.phantom import (
    CaseSpec,
    PhantomConfig,
    Shortcut,
    enrichment_weights,
    render,
    sample_cohort,
)
from cxrxai.errors import DataError, UnknownNameError
from cxrxai.labels import AGE_BINS, FINDINGS

SMALL = PhantomConfig(size=128, n_images=300, seed=3)


@pytest.fixture(scope="module")
def cohort():
    return sample_cohort(SMALL)


@pytest.fixture(scope="module")
def one_of_each(cohort):
    """A rendered case for every finding (the first image that has it)."""
    return {f: render(next(s for s in cohort if f in s.findings), SMALL) for f in FINDINGS}


def test_same_seed_same_pixels_and_masks(cohort):
    spec = next(s for s in cohort if len(s.findings) >= 2)
    a, b = render(spec, SMALL), render(spec, SMALL)
    assert np.array_equal(a.image, b.image)
    assert [(i.label, i.index) for i in a.instances] == [(i.label, i.index) for i in b.instances]
    assert all(np.array_equal(x.mask, y.mask) for x, y in zip(a.instances, b.instances))


def test_cohort_is_deterministic_and_seed_dependent():
    assert sample_cohort(SMALL) == sample_cohort(SMALL)
    other = sample_cohort(dataclasses.replace(SMALL, seed=4))
    assert [s.findings for s in other] != [s.findings for s in sample_cohort(SMALL)]


def test_different_images_differ(cohort):
    a, b = render(cohort[0], SMALL), render(cohort[1], SMALL)
    assert a.image.shape == (128, 128) and a.image.dtype == np.uint8
    assert not np.array_equal(a.image, b.image)


def test_every_positive_label_has_instances_and_only_those(cohort):
    for spec in cohort[:60]:
        case = render(spec, SMALL)
        assert {i.label for i in case.instances} == set(spec.findings)
        for inst in case.instances:
            assert inst.mask.dtype == bool and inst.mask.any()


def test_boxes_are_the_tight_boxes_of_the_masks(one_of_each):
    for case in one_of_each.values():
        for inst in case.instances:
            x, y, w, h = inst.box
            assert (x, y, w, h) == bounding_box(inst.mask)
            assert inst.mask[y:y + h, x:x + w].sum() == inst.mask.sum()
            assert inst.mask[y, x:x + w].any() and inst.mask[y + h - 1, x:x + w].any()


def test_findings_lie_where_anatomy_says(one_of_each):
    for label, case in one_of_each.items():
        region = {"Cardiomegaly": case.anatomy["heart"],
                  "Effusion": case.anatomy["thorax"]}.get(label, case.anatomy["lungs"])
        for inst in (i for i in case.instances if i.label == label):
            outside = inst.mask & ~region
            assert not outside.any(), f"{label} instance {inst.index} has {outside.sum()} px outside its region"


def test_cardiomegaly_enlarges_the_cardiac_silhouette(cohort):
    big = [render(s, SMALL) for s in cohort if "Cardiomegaly" in s.findings and s.view == "PA"][:5]
    normal = [render(s, SMALL) for s in cohort if not s.findings and s.view == "PA"][:5]
    width = lambda case: np.ptp(np.nonzero(case.anatomy["heart"].any(0))[0]) / np.ptp(np.nonzero(case.anatomy["thorax"].any(0))[0])
    assert min(width(c) for c in big) > max(width(c) for c in normal) - 0.05
    assert np.mean([width(c) for c in big]) > np.mean([width(c) for c in normal]) + 0.08


def test_bilateral_effusion_and_multiple_nodules_are_separate_instances(cohort):
    counts = Counter()
    for spec in cohort:
        if "Effusion" in spec.findings or "Nodule" in spec.findings:
            case = render(spec, SMALL)
            for label in ("Effusion", "Nodule"):
                counts[(label, sum(i.label == label for i in case.instances))] += 1
    assert counts[("Effusion", 2)] > 0 and counts[("Nodule", 2)] + counts[("Nodule", 3)] > 0


def test_geometric_features_span_a_range(cohort):
    sizes, elongations = [], []
    for spec in cohort[:120]:
        for inst in render(spec, SMALL).instances:
            sizes.append(inst.mask.mean())
            x, y, w, h = inst.box
            elongations.append(max(w, h) / min(w, h))
    assert np.quantile(sizes, 0.9) / np.quantile(sizes, 0.1) > 20
    assert max(elongations) > 3 and min(elongations) < 1.5


def test_splits_are_by_patient_and_big_enough_by_default():
    specs = sample_cohort(PhantomConfig())
    split_of = {}
    for s in specs:
        assert split_of.setdefault(s.patient_id, s.split) == s.split
    counts = Counter(s.split for s in specs)
    assert counts["train"] >= 3000 and counts["test"] >= 600 and counts["val"] > 0
    assert Counter(s.patient_id for s in specs).most_common(1)[0][1] > 1  # several images per patient


def test_demographics_follow_nih():
    specs = sample_cohort(PhantomConfig())
    stats = nih_stats.load()
    male_share = stats["sex_counts"]["M"] / sum(stats["sex_counts"].values())
    assert abs(np.mean([s.sex == "M" for s in specs]) - male_share) < 0.03
    assert {s.age_bin for s in specs} == set(AGE_BINS)
    assert 40 <= np.mean([s.age for s in specs]) <= 53  # NIH mean age 46.6


def test_prevalence_floor_and_nih_cooccurrence():
    specs = sample_cohort(PhantomConfig())
    for f in FINDINGS:
        assert np.mean([f in s.findings for s in specs]) > 0.08, f
    # Effusion co-occurs with Infiltration far more than independence predicts, as in NIH.
    eff = np.array([("Effusion" in s.findings) for s in specs])
    inf = np.array([("Infiltration" in s.findings) for s in specs])
    assert (eff & inf).mean() > eff.mean() * inf.mean() * 1.3


def test_enrichment_weights_lift_rare_findings_only():
    combos = {"00": 80, "10": 15, "01": 4, "11": 1}  # prevalences 16 % and 5 %
    w = enrichment_weights(combos, 0.1)
    assert w[0] == pytest.approx(1.0) and w[1] > 1.0
    p = np.array([n * w[0] ** (k[0] == "1") * w[1] ** (k[1] == "1") for k, n in combos.items()])
    p /= p.sum()
    assert p[[2, 3]].sum() == pytest.approx(0.1, abs=2e-3)


def test_shortcut_marker_only_in_training_split():
    cfg = PhantomConfig(size=96, n_images=200, shortcut=Shortcut("Pneumothorax", p_positive=1.0, p_negative=0.0))
    specs = sample_cohort(cfg)
    assert all(s.shortcut == ("Pneumothorax" in s.findings) for s in specs if s.split == "train")
    assert not any(s.shortcut for s in specs if s.split != "train")
    marked = render(next(s for s in specs if s.shortcut), cfg)
    assert marked.shortcut_mask is not None and marked.shortcut_mask.any()
    assert not (marked.shortcut_mask & marked.anatomy["lungs"]).any()


def test_specs_and_configs_round_trip_through_json(cohort):
    assert CaseSpec.from_json(cohort[5].to_json()) == cohort[5]
    cfg = PhantomConfig(shortcut=Shortcut("Mass"))
    assert PhantomConfig.from_json(cfg.to_json()) == cfg


@pytest.mark.parametrize("kwargs", [dict(size=32), dict(n_images=0), dict(split_fractions=(0.5, 0.5, 0.5))])
def test_bad_config_is_refused(kwargs):
    with pytest.raises(DataError):
        PhantomConfig(**kwargs)


def test_unknown_shortcut_label_lists_the_findings():
    with pytest.raises(UnknownNameError, match="Pneumothorax"):
        Shortcut("Fracture")
