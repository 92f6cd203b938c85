"""The demo's second architecture gets its own explanation evidence, and every Explanations page
works for it (the issue: selecting the ResNet-18 emptied every one of them).

A ResNet-18 with random weights, saved beside the tiny DenseNet-121 the way a user's checkpoint
is, joins the tiny demo; the evidence phase gives it maps, scores, the sweep and trust rows after
the main model's.

The same two phases pin that the evidence phase resumes a quick store and marks it complete (the
quick store's state is read between them): one tiny demo build for both (it was built twice, ~30 s
of CPU each).
"""

from __future__ import annotations

import pytest
from test_pages import _app  # tests/app is on sys.path (no __init__.py)

from cxrxai.models.registry import ARCHITECTURES, build, load, save
from cxrxai.pipeline.demo import Evidence, build_demo, demo_stages, model_evidence_stages
from cxrxai.store import open_store

pytestmark = pytest.mark.slow
SECOND = "tiny-resnet18"
SMALL = Evidence(per_finding=2, sweep_cases=2, fidelity_cases=2, trust_images=3)


@pytest.fixture(scope="module")
def two_model_store(tmp_path_factory, tiny_model_path, tiny_config, few_ig_steps):
    root = tmp_path_factory.mktemp("two")
    main = load(tiny_model_path)
    spec = main.spec.with_(name=SECOND, arch="resnet18", cam_layer=ARCHITECTURES["resnet18"][1])
    second = save(build("resnet18", len(spec.labels)), spec, root / "models" / f"{SECOND}.pt")
    path, data_dir = root / "demo.duckdb", tiny_model_path.parent.parent / "phantoms"
    build_demo(path, model_path=tiny_model_path, data_dir=data_dir, config=tiny_config, phase="quick",
               extra_models=[second])
    with open_store(path) as s:
        quick = {"methods": set(s.stored_methods("tiny-densenet121")), "built_at": s.meta("evidence_built_at"),
                 "scored": len(s.table("localization", model_id="tiny-densenet121"))}
    seen = []
    fast = {"trust", "fidelity", "shortcut"}  # the main model's slow stages are pinned elsewhere
    report = build_demo(path, model_path=tiny_model_path, data_dir=data_dir, config=tiny_config, phase="evidence",
                        stages=[s for s in demo_stages(phase="evidence", evidence=SMALL) if s.name not in fast],
                        extra_models=[second], extra_stages=model_evidence_stages(evidence=SMALL),
                        progress=lambda task, done, total: seen.append(task))
    return path, report, seen, quick


def test_the_second_model_gets_maps_scores_sweep_and_trust_after_the_main_models(two_model_store):
    path, report, seen, _ = two_model_store
    with open_store(path) as s:
        index = s.map_index(model_id=SECOND)
        scored = s.table("localization", model_id=SECOND)
        trust = s.table("trust", model_id=SECOND)
        fidelity = s.table("fidelity", model_id=SECOND)
        test_ids = set(s.prediction_table(SECOND, split="test").image_id)
    assert {"gradcam", "gradcam++", "ig", "gradientshap", "occlusion"} <= set(index.method)
    assert set(index[index.method == "gradcam"].image_id) == test_ids  # the CAMs of every test case
    assert index[index.method == "ig"].groupby("label").size().max() == SMALL.per_finding
    assert {"explainer", "baseline", "reader"} <= set(scored.source)
    assert {"gradcam", "ig", "occlusion"} <= set(scored[scored.source == "explainer"].method)
    sweep = index[index.method == "occlusion"].groupby("params_key")
    shared = {frozenset(zip(g.image_id, g.label)) for _, g in sweep if len(g) == SMALL.sweep_cases}
    assert len(shared) == 1  # every patch/stride setting on the same cases
    assert not trust.empty and not fidelity.empty
    assert set(trust.other_model.dropna()) >= {"tiny-densenet121"}  # reproducibility against the main model
    assert set(report[f"model {SECOND}"]) >= {"predictions", "thresholds", "cams", "maps", "trust", "fidelity"}
    # the second model's stages come after the main model's, and say whose they are
    first_second = next(i for i, t in enumerate(seen) if t.startswith(f"{SECOND}: "))
    assert all(t.startswith(f"{SECOND}: ") for t in seen[first_second:]), sorted(set(seen[first_second:]))


@pytest.mark.parametrize("page,tables", [("pages/benchmark.py", 3), ("pages/geometry.py", 2), ("pages/trust.py", 1),
                                         ("pages/fidelity.py", 1)])
def test_every_explanations_page_shows_the_second_models_numbers(two_model_store, page, tables):
    path, _, _, _ = two_model_store
    at = _app(path, page, sel_model=SECOND)
    assert not at.exception, at.exception
    assert at.selectbox(key="model_widget").value == SECOND
    missing = [i.value for i in at.info if ("fill" in i.value or "no " in i.value.lower())
               and "shortcut" not in i.value]  # the planted shortcut is left out of this store
    assert not missing, missing
    assert len(at.dataframe) >= tables
    assert all(not d.value.empty for d in at.dataframe)


def test_the_evidence_phase_resumes_a_quick_store_and_marks_it_complete(two_model_store):
    path, _, _, quick = two_model_store
    assert quick["methods"] == {"gradcam", "gradcam++"}  # the quick phase: the CAMs only
    assert quick["built_at"] is None
    assert quick["scored"] == 0  # scored in the background
    with open_store(path) as s:
        assert s.meta("evidence_built_at")
        index = s.map_index(model_id="tiny-densenet121")
        scored = s.table("localization", model_id="tiny-densenet121", source="explainer")
    assert {"gradcam", "gradcam++", "ig", "occlusion"} <= set(scored.method)
    assert {"ig", "gradientshap", "occlusion"} <= set(index.method)
    ig = index[index.method == "ig"]
    assert ig.groupby("label").size().max() == SMALL.per_finding  # positives of each finding (or all, when fewer)
    sweep = index[index.method == "occlusion"].groupby("params_key")
    swept = [s for s in (frozenset(zip(g.image_id, g.label)) for _, g in sweep) if len(s) == SMALL.sweep_cases]
    assert len(swept) >= 4 and len(set(swept)) == 1  # every patch/stride setting on the same cases
