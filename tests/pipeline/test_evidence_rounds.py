"""The evidence in rounds over both models, on samples that share images and nest.

Pins: the per-finding sample is uniform for each finding yet shares images across findings and
nests (a round only adds cases); occlusion computes an image's findings in one unit; the sweep's
fixed set covers every finding; trust scores only new images and models; a build in rounds runs
every model's first look before any full evidence, and a build killed after the first round
resumes without recomputing it.
"""

from __future__ import annotations

import shutil
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from cxrxai.models.registry import ARCHITECTURES, build, load, save
from cxrxai.pipeline import BuildContext
from cxrxai.pipeline.demo import Evidence, Round, build_demo, demo_stages, evidence_rounds, model_evidence_stages
from cxrxai.pipeline.maps import MapConfig, MapPlan, maps_stage, positive_pairs, sample_pairs, sweep_cases
from cxrxai.pipeline.trust import TrustPlan, trust_stage
from cxrxai.store import open_store, write_store


def _pairs(rows: dict[str, list[str]]) -> pd.DataFrame:
    return pd.DataFrame([(img, lab) for lab, imgs in rows.items() for img in imgs], columns=["image_id", "label"])


# Seven images, with one finding (i2, i6) or two; "a" and "b" share three.
PAIRS = _pairs({"a": ["i1", "i2", "i3", "i4", "i5"], "b": ["i3", "i4", "i5", "i6", "i7"], "c": ["i1", "i7"]})


def test_each_findings_sample_is_uniform_over_its_positives():
    """Over many seeds every pair of a finding is drawn with probability n / (its positives), as an
    independent draw per finding would give: sharing images does not favour multi-finding images."""
    seeds = 4000
    counts = Counter()
    for seed in range(seeds):
        counts.update(map(tuple, sample_pairs(PAIRS, 2, seed)[["image_id", "label"]].to_numpy()))
    for (img, lab), k in counts.items():
        expected = 2 / 5 if lab in ("a", "b") else 1.0
        assert k / seeds == pytest.approx(expected, abs=0.03), (img, lab)
    assert counts[("i1", "c")] == counts[("i7", "c")] == seeds  # fewer positives than asked: all of them


def test_the_findings_share_images_and_a_smaller_sample_lies_inside_a_larger():
    images = []
    for seed in range(200):
        small, large = sample_pairs(PAIRS, 2, seed), sample_pairs(PAIRS, 4, seed)
        assert small.groupby("label").size().to_dict() == {"a": 2, "b": 2, "c": 2}
        assert set(map(tuple, small.to_numpy())) <= set(map(tuple, large.to_numpy()))
        images.append(small.image_id.nunique())
    # one order of the images draws an image for both findings whenever it comes early: fewer images
    # on average than independent draws of each finding
    independent = np.mean([len(set(PAIRS[PAIRS.label == "a"].sample(2, random_state=s).image_id)
                               | set(PAIRS[PAIRS.label == "b"].sample(2, random_state=s + 10_000).image_id)
                               | {"i1", "i7"}) for s in range(200)])
    assert np.mean(images) < independent - 0.5


def test_the_sweeps_cases_cover_every_finding_and_nest():
    pairs = _pairs({lab: [f"{lab}{k}" for k in range(6)] for lab in "abcdefgh"})
    twenty = sweep_cases(pairs, 20, seed=0)
    assert len(twenty) == 20
    assert sorted(twenty.groupby("label").size().tolist()) == [2, 2, 2, 2, 3, 3, 3, 3]  # no finding left out
    eight = sweep_cases(pairs, 8, seed=0)
    assert eight.groupby("label").size().tolist() == [1] * 8
    assert set(map(tuple, eight.to_numpy())) <= set(map(tuple, twenty.to_numpy()))
    assert set(map(tuple, twenty.to_numpy())) <= set(map(tuple, sample_pairs(pairs, 3, seed=0).to_numpy()))


@pytest.fixture()
def store_copy(tiny_store, tmp_path):
    path = tmp_path / "s.duckdb"
    shutil.copy(tiny_store, path)
    return path


def _context(writer, model_path, tiny_config, **options):
    from cxrxai.data.decode import RowLoader
    from cxrxai.data.demo import load_demo

    data = load_demo(tiny_config, model_path.parent.parent / "phantoms")
    return BuildContext(writer, "demo", load(model_path), options=options,
                        load_images=RowLoader(data.images, [s.image_id for s in data.specs]))


def test_occlusion_computes_each_images_findings_in_one_unit(store_copy, tiny_model_path, tiny_config):
    from cxrxai.explain import native_map, occlusion_grid
    from cxrxai.explain._common import baseline_tensor
    from cxrxai.models.spec import preprocess

    plan = MapPlan(maps=(MapConfig("occlusion", {"patch": 32, "stride": 16, "baseline": "black", "output": "logit"},
                                   per_label=3),))
    with write_store(store_copy) as w:
        ctx = _context(w, tiny_model_path, tiny_config)
        chosen = sample_pairs(positive_pairs(w, "demo", "test", ctx.model.spec.labels), 3, 0)
        report = maps_stage(ctx, plan)["occlusion"]
        index = w.map_index(model_id=ctx.model.spec.name, method="occlusion")
        multi = chosen.groupby("image_id").label.apply(list)
        image_id, labels = next((i, labs) for i, labs in multi.items() if len(labs) > 1)
        stored = {lab: native_map(w.get_map(ctx.model.spec.name, image_id, lab, "occlusion",
                                            index.params_key.iloc[0])) for lab in labels}
        x = preprocess(np.asarray(ctx.load_images([image_id])), ctx.model.spec)
    assert report["computed"] == len(chosen) and report["units"] == chosen.image_id.nunique() < len(chosen)
    assert set(zip(index.image_id, index.label)) == set(zip(chosen.image_id, chosen.label))
    for lab in labels:  # each finding's map is that finding's own, computed alone
        alone = occlusion_grid(ctx.model.module, x, ctx.model.spec.label_index(lab),
                               baseline_tensor("black", x, ctx.model.spec), patch=32, stride=16).to_map()
        np.testing.assert_allclose(stored[lab], alone, rtol=0, atol=1e-6 * np.abs(alone).max())


def test_trust_scores_only_the_new_images_and_redraws_the_thresholds(store_copy, tmp_path, tiny_model_path,
                                                                      tiny_config):
    plan = dict(methods=(("gradcam", ()), ("saliency", (("reduce", "abs_sum"),))), pairs=5)
    fresh = tmp_path / "fresh.duckdb"
    shutil.copy(store_copy, fresh)
    with write_store(store_copy) as w:
        ctx = _context(w, tiny_model_path, tiny_config)
        first = trust_stage(ctx, TrustPlan(images=2, **plan))
        before = w.table("trust", model_id=ctx.model.spec.name)
        second = trust_stage(ctx, TrustPlan(images=4, **plan))
        third = trust_stage(ctx, TrustPlan(images=4, **plan))
        grown = w.table("trust", model_id=ctx.model.spec.name)
    with write_store(fresh) as w:
        trust_stage(_context(w, tiny_model_path, tiny_config), TrustPlan(images=4, **plan))
        at_once = w.table("trust", model_id="tiny-densenet121")
    assert (first["randomized"], second["randomized"], third) == (2, 2, {"skipped": True, "images": 4})
    key = ["method", "kind", "image_id", "label", "step", "other_model", "data_range"]
    old = before[before.kind == "randomization"].merge(grown, on=key, suffixes=("", "_after"))
    assert len(old) == len(before[before.kind == "randomization"])
    np.testing.assert_array_equal(old.ssim, old.ssim_after)  # the first images' rows stay as they were
    assert grown[grown.kind == "randomization"].image_id.nunique() == 4
    assert len(grown[grown.kind == "threshold"]) == 2 * 2  # one threshold per method and data range, redrawn
    # growing 2 → 4 gives what 4 at once gives, thresholds included
    merged = grown.merge(at_once, on=key, suffixes=("", "_once"))
    assert len(merged) == len(grown) == len(at_once)
    np.testing.assert_allclose(merged.ssim, merged.ssim_once, rtol=0, atol=1e-12)


TINY_ROUNDS = (("first look", Evidence(per_finding=1, sweep_cases=2, fidelity_cases=1, trust_images=2)),
               ("full evidence", Evidence(per_finding=2, sweep_cases=3, fidelity_cases=2, trust_images=3)))


def _fast(rounds: list[Round]) -> list[Round]:
    """The rounds without the stages pinned elsewhere (trust, fidelity, shortcut, the second reader)."""
    slow = {"trust", "fidelity", "shortcut", "second reader", "baselines", "geometry"}
    return [Round(r.name, tuple(s for s in r.main if s.name not in slow), tuple(s for s in r.extra if s.name not in slow))
            for r in rounds]


@pytest.mark.slow
def test_a_build_in_rounds_gives_every_model_its_first_look_before_any_full_evidence(tmp_path, tiny_model_path,
                                                                                      tiny_config):
    main = load(tiny_model_path)
    spec = main.spec.with_(name="tiny-resnet18", arch="resnet18", cam_layer=ARCHITECTURES["resnet18"][1])
    second = save(build("resnet18", len(spec.labels)), spec, tmp_path / "models" / "tiny-resnet18.pt")
    path, data_dir = tmp_path / "demo.duckdb", tiny_model_path.parent.parent / "phantoms"
    build_demo(path, model_path=tiny_model_path, data_dir=data_dir, config=tiny_config, phase="quick",
               extra_models=[second])
    rounds = _fast(evidence_rounds(rounds=TINY_ROUNDS))
    # Killed after the first round (only it ran), then resumed with both.
    build_demo(path, model_path=tiny_model_path, data_dir=data_dir, config=tiny_config, phase="evidence",
               extra_models=[second], rounds=rounds[:1])
    with open_store(path) as s:
        first = {m: s.map_index(model_id=m) for m in ("tiny-densenet121", "tiny-resnet18")}
        assert s.meta("evidence_built_at")  # (a one-round build is complete; the resumed one adds to it)
    for m, index in first.items():
        assert index[index.method == "ig"].groupby("label").size().max() == 1, m
    seen = []
    report = build_demo(path, model_path=tiny_model_path, data_dir=data_dir, config=tiny_config, phase="evidence",
                        extra_models=[second], rounds=rounds, on_stage=seen.append)
    order = [(w["round"], w["model"]) for w in seen]
    firsts = [order.index(k) for k in [(1, "tiny-densenet121"), (1, "tiny-resnet18"), (2, "tiny-densenet121"),
                                        (2, "tiny-resnet18")]]
    assert firsts == sorted(firsts)  # main then second model, round by round
    assert [w["stage"] for w in seen] == list(range(1, len(seen) + 1)) and {w["stages"] for w in seen} == {len(seen)}
    assert report["first look"]["maps"]["ig"]["computed"] == 0  # the first round is not recomputed
    assert report["first look"]["model tiny-resnet18"]["maps"]["occlusion"]["computed"] == 0
    with open_store(path) as s:
        for m in ("tiny-densenet121", "tiny-resnet18"):
            index = s.map_index(model_id=m)
            ig = index[index.method == "ig"]
            assert ig.groupby("label").size().max() == 2, m
            old = first[m][first[m].method == "ig"]
            assert set(zip(old.image_id, old.label)) <= set(zip(ig.image_id, ig.label))  # the round added cases


def test_the_default_rounds_look_at_everything_first_then_complete_it():
    rounds = evidence_rounds()
    assert [r.name for r in rounds] == ["first look", "full evidence"]
    stages = [[s.name for s in r.main] for r in rounds]
    assert "shortcut" not in stages[0] and "shortcut" in stages[1]  # after both models' first look
    for r in rounds:
        assert {"maps", "occlusion sweep", "localization", "trust", "fidelity"} <= {s.name for s in r.main}
        assert {"cams", "maps", "trust", "fidelity"} <= {s.name for s in r.extra}
    assert [s.name for s in evidence_rounds(phase="all")[0].main][:3] == ["predictions", "thresholds", "cams"]
    assert len(evidence_rounds(full=True)) == 1
    assert [s.name for s in demo_stages(phase="evidence")] and [s.name for s in model_evidence_stages()]
