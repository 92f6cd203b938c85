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

from cxrxai import reports
from cxrxai.errors import StoreError
from cxrxai.models.registry import ARCHITECTURES, build, load, save
from cxrxai.pipeline import BuildContext, Stage
from cxrxai.pipeline.demo import Evidence, Round, build_demo, evidence_rounds
from cxrxai.pipeline.maps import (
    MapConfig,
    MapPlan,
    image_rank,
    maps_stage,
    positive_pairs,
    sample_pairs,
    sweep_cases,
)
from cxrxai.pipeline.trust import TrustPlan, trust_stage
from cxrxai.store import open_store, write_store

#: The evidence in rounds: builds run (not in `make test-quick`).
pytestmark = pytest.mark.evidence

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


def test_a_sample_is_each_findings_first_pairs_in_the_seeded_image_order():
    """The definition, by pandas (sort by finding, :func:`image_rank`, image id; keep each finding's
    first ``per_label``), on random sets with repeated pairs and findings of every size."""
    rng = np.random.default_rng(3)
    for trial in range(60):
        n, per_label, seed = int(rng.integers(1, 120)), int(rng.integers(1, 12)), int(rng.integers(0, 10**6))
        pairs = pd.DataFrame({"image_id": [f"i{k}" for k in rng.integers(0, 80, n)],
                              "label": rng.choice(list("abcde"), n)})
        ranked = pairs.assign(rank=image_rank(pairs.image_id, seed)).sort_values(["label", "rank", "image_id"])
        expected = ranked[ranked.groupby("label").cumcount() < per_label][["image_id", "label"]]
        expected = expected.sort_values(["label", "image_id"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(sample_pairs(pairs, per_label, seed), expected, obj=f"trial {trial}")


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


def test_the_sweeps_cases_cover_every_finding_on_images_of_their_own_and_nest():
    # 8 findings on 12 images, each image positive for 2–5 of them
    rng = np.random.default_rng(0)
    pairs = pd.DataFrame([(f"i{k}", lab) for k in range(12) for lab in rng.choice(list("abcdefgh"), rng.integers(2, 6),
                                                                                    replace=False)],
                         columns=["image_id", "label"])
    for seed in range(20):
        eight, ten = sweep_cases(pairs, 8, seed), sweep_cases(pairs, 10, seed)
        assert eight.groupby("label").size().tolist() == [1] * 8  # every finding before any twice
        assert ten.image_id.is_unique and len(ten) == 10  # the intervals resample cases: never one film twice
        assert set(map(tuple, eight.to_numpy())) <= set(map(tuple, ten.to_numpy()))
    assert len(sweep_cases(pairs, 50, 0)) == 12  # at most one case an image


def test_the_order_of_images_survives_a_dataset_that_grows():
    """An image's place depends on its id and the seed only: adding images keeps every case drawn
    before that still ranks first among its finding's pairs."""
    grown = pd.concat([PAIRS, _pairs({"a": ["j1", "j2"], "b": ["j3"]})])
    before, after = sample_pairs(PAIRS, 2, 3), sample_pairs(grown, 2, 3)
    kept = set(map(tuple, before.to_numpy())) - set(map(tuple, after.to_numpy()))
    rank = dict(zip(grown.image_id, image_rank(grown.image_id, 3)))
    for img, lab in kept:  # a case dropped only for a new image that ranks before it
        new = [i for i in after[after.label == lab].image_id if i.startswith("j")]
        assert new and min(rank[i] for i in new) < rank[img]


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


def test_a_first_round_computes_an_images_later_findings_too(store_copy, tiny_model_path, tiny_config):
    """Occlusion in a round that grows later (``ahead``) computes each image's findings of the later
    sample now: the later round never occludes an image a second time."""
    params = {"patch": 32, "stride": 32, "baseline": "black", "output": "logit"}
    with write_store(store_copy) as w:
        ctx = _context(w, tiny_model_path, tiny_config)
        pairs = positive_pairs(w, "demo", "test", ctx.model.spec.labels)
        first = maps_stage(ctx, MapPlan(maps=(MapConfig("occlusion", params, per_label=1, ahead=3),)))["occlusion"]
        index = w.map_index(model_id=ctx.model.spec.name, method="occlusion")
        second = maps_stage(ctx, MapPlan(maps=(MapConfig("occlusion", params, per_label=3),)))["occlusion"]
        final = w.map_index(model_id=ctx.model.spec.name, method="occlusion")
    one, three = sample_pairs(pairs, 1, 0), sample_pairs(pairs, 3, 0)
    ahead = three[three.image_id.isin(set(one.image_id))]
    assert set(zip(index.image_id, index.label)) == set(zip(ahead.image_id, ahead.label))
    assert first["units"] == one.image_id.nunique() and first["computed"] == len(ahead)
    assert set(zip(final.image_id, final.label)) == set(zip(three.image_id, three.label))
    assert second["units"] == three.image_id.nunique() - one.image_id.nunique()  # no image occluded twice


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
    both = {"gradcam": 2, "saliency": 2}
    assert (first["randomized"], second["randomized"], third) == (both, both, {"skipped": True, "images": 4})
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


def test_trust_compares_a_new_model_and_a_new_method_without_redoing_the_rest(store_copy, tiny_model_path,
                                                                               tiny_config):
    """A second seed (same architecture: repeatability) arriving after trust ran, then a method added
    to the plan: only their rows are computed; the randomization rows already stored stay as they were."""
    gradcam = (("gradcam", ()),)
    other = load(tiny_model_path)
    other.spec = other.spec.with_(name="tiny-densenet121-seed1")
    with write_store(store_copy) as w:
        ctx = _context(w, tiny_model_path, tiny_config)
        trust_stage(ctx, TrustPlan(images=3, methods=gradcam, pairs=5))
        before = w.table("trust", model_id=ctx.model.spec.name)
        ctx.options["trust_models"] = [other]
        with_model = trust_stage(ctx, TrustPlan(images=3, methods=gradcam, pairs=5))
        with_method = trust_stage(ctx, TrustPlan(images=3, methods=(*gradcam, ("saliency", (("reduce", "abs_sum"),))),
                                                 pairs=5))
        after = w.table("trust", model_id=ctx.model.spec.name)
    assert with_model == {"images": 3, "randomized": {}, "steps": 0, "compared": {"gradcam vs tiny-densenet121-seed1": 3}}
    assert with_method["randomized"] == {"saliency": 3} and with_method["compared"] == {
        "saliency vs tiny-densenet121-seed1": 3}
    rep = after[after.kind == "repeatability"]
    assert len(rep) == 2 * 3 * 2 and set(rep.method) == {"gradcam", "saliency"}  # methods × images × data ranges
    np.testing.assert_allclose(rep[rep.method == "gradcam"].ssim, 1.0, atol=1e-6)  # the same weights: the same maps
    key = ["method", "kind", "image_id", "step", "data_range"]
    kept = before.merge(after, on=key, suffixes=("", "_after"))
    assert len(kept) == len(before)
    np.testing.assert_array_equal(kept.ssim, kept.ssim_after)
    assert set(after[after.kind == "threshold"].method) == {"gradcam", "saliency"}


TINY_ROUNDS = (("first look", Evidence(per_finding=1, sweep_cases=2, fidelity_cases=1, trust_images=2)),
               ("full evidence", Evidence(per_finding=2, sweep_cases=3, fidelity_cases=2, trust_images=3)))


class Killed(Exception):
    """Stands for the build being killed (the app stopped, the machine restarted)."""


def _rounds(kill_at: tuple[int, str, str] | None = None) -> list[Round]:
    """The tiny rounds without the stages pinned elsewhere (fidelity and the shortcut are slow on a
    CPU; the second reader, baselines and geometry do not depend on the round); ``kill_at`` =
    (round, "main"/"extra", stage name) raises :class:`Killed` when that stage starts."""
    slow = {"fidelity", "shortcut", "second reader", "baselines", "geometry"}

    def kill(_ctx):
        raise Killed

    out = []
    for r, rnd in enumerate(evidence_rounds(rounds=TINY_ROUNDS), start=1):
        parts = {}
        for part in ("main", "extra"):
            parts[part] = tuple(Stage(st.name, kill) if kill_at == (r, part, st.name) else st
                                for st in getattr(rnd, part) if st.name not in slow)
        out.append(Round(rnd.name, parts["main"], parts["extra"], same_arch=rnd.same_arch))
    return out


def _counts(path, model: str) -> dict:
    with open_store(path) as s:
        index = s.map_index(model_id=model)
        trust = s.table("trust", model_id=model)
    return {"ig": int(index[index.method == "ig"].groupby("label").size().max()),
            "trust images": int(trust[trust.kind == "randomization"].image_id.nunique()),
            "pairs": set(zip(index.image_id, index.label, index.method, index.params_key))}


@pytest.mark.slow
def test_a_build_in_rounds_gives_every_model_its_first_look_and_resumes_after_a_kill(tmp_path, tiny_model_path,
                                                                                     tiny_config, few_ig_steps):
    main = load(tiny_model_path)
    spec = main.spec.with_(name="tiny-resnet18", arch="resnet18", cam_layer=ARCHITECTURES["resnet18"][1])
    second = save(build("resnet18", len(spec.labels)), spec, tmp_path / "models" / "tiny-resnet18.pt")
    seed1 = save(main.module, main.spec.with_(name="tiny-densenet121-seed1"), tmp_path / "models" / "seed1.pt")
    path, data_dir = tmp_path / "demo.duckdb", tiny_model_path.parent.parent / "phantoms"
    models = ("tiny-densenet121", "tiny-resnet18")
    kw = dict(model_path=tiny_model_path, data_dir=data_dir, config=tiny_config, extra_models=[seed1, second])
    build_demo(path, phase="quick", **kw)
    seen = []
    with pytest.raises(Killed):  # killed in the second round, as the ResNet-18 starts its sweep
        build_demo(path, phase="evidence", rounds=_rounds(kill_at=(2, "extra", "occlusion sweep")),
                   on_stage=seen.append, **kw)
    order = [(w["round"], w["model"]) for w in seen]
    firsts = [order.index(k) for k in [(1, models[0]), (1, models[1]), (2, models[0]), (2, models[1])]]
    assert firsts == sorted(firsts)  # main then second model, round by round
    assert [w["stage"] for w in seen] == list(range(1, len(seen) + 1)) and len({w["stages"] for w in seen}) == 1
    with open_store(path) as s:
        assert s.meta("evidence_built_at") is None  # a killed build is not complete
    main_done, second_part = _counts(path, models[0]), _counts(path, models[1])
    assert (main_done["ig"], main_done["trust images"]) == (2, 3)  # the main model's full evidence was stored
    assert (second_part["ig"], second_part["trust images"]) == (2, 2)  # the ResNet's maps; its trust still round 1

    report = build_demo(path, phase="evidence", rounds=_rounds(), **kw)  # the next start resumes
    with open_store(path) as s:
        assert s.meta("evidence_built_at")
    assert report["first look"]["maps"]["ig"]["computed"] == 0  # nothing stored is computed again
    assert report["full evidence"]["maps"]["ig"]["computed"] == 0
    assert report["full evidence"]["model tiny-resnet18"]["maps"]["occlusion"]["computed"] == 0
    assert report["full evidence"]["model tiny-resnet18"]["trust"]["randomized"] == {
        "gradcam": 1, "saliency": 1, "guided_backprop": 1}  # only the third image
    assert _counts(path, models[0])["pairs"] == main_done["pairs"]  # the main model's maps are as they were
    assert second_part["pairs"] < _counts(path, models[1])["pairs"]  # the sweep the kill stopped, now done
    assert _counts(path, models[1])["trust images"] == 3
    with open_store(path) as s:
        compared = {m: s.table("trust", model_id=m).query("other_model != ''").groupby("kind").other_model.unique()
                    for m in models}
    # the demo model: repeatability against its second seed, reproducibility against the ResNet-18; the
    # ResNet-18: reproducibility against the demo model alone, never pooled over the demo model's seeds
    assert {k: set(v) for k, v in compared[models[0]].items()} == {
        "repeatability": {"tiny-densenet121-seed1"}, "reproducibility": {"tiny-resnet18"}}
    assert {k: set(v) for k, v in compared[models[1]].items()} == {"reproducibility": {"tiny-densenet121"}}
    with open_store(path) as s:  # the second seed: its CAMs for every test case, nothing costly
        seed_maps, main_maps = s.map_index(model_id="tiny-densenet121-seed1"), s.map_index(model_id=models[0])
        cams = main_maps[main_maps.method.isin(["gradcam", "gradcam++"])]
        assert set(zip(seed_maps.image_id, seed_maps.label, seed_maps.method)) == set(
            zip(cams.image_id, cams.label, cams.method))
        seed_loc = s.table("localization", model_id="tiny-densenet121-seed1")
        assert set(seed_loc[seed_loc.source == "explainer"].method) == {"gradcam", "gradcam++"}
        assert set(seed_loc[seed_loc.source == "reader"].method) == {"hb-synthetic"}  # the human benchmark too
        with pytest.raises(StoreError) as err:  # its Trust page says why it is empty and what to pick
            reports.run_report(s, "trust", "tiny-densenet121-seed1")
    assert "second training of 'tiny-densenet121'" in str(err.value) and "pick 'tiny-densenet121' or 'tiny-resnet18'" in str(
        err.value)
    assert "python -m cxrxai demo" not in str(err.value)  # which would never fill it


def test_the_default_rounds_look_at_everything_first_then_complete_it():
    rounds = evidence_rounds()
    assert [r.name for r in rounds] == ["first look", "full evidence"]
    assert not any(s.name == "shortcut" for r in rounds for s in (*r.main, *r.extra))
    for r in rounds:
        assert {"maps", "occlusion sweep", "localization", "trust", "fidelity"} <= {s.name for s in r.main}
        assert {"cams", "maps", "trust", "fidelity"} <= {s.name for s in r.extra}
    assert [s.name for s in rounds[0].same_arch] == ["cams", "localization (CAMs)", "second reader"]
    assert not rounds[1].same_arch
    assert [s.name for s in evidence_rounds(phase="all")[0].main][:3] == ["predictions", "thresholds", "cams"]
    assert [s.name for s in rounds[0].after] == ["shortcut"] and not rounds[1].after  # after both first looks
    assert len(evidence_rounds(full=True)) == 1
