"""The fidelity stage on the tiny full store: every method is scored on the same cases (a paired
comparison), occlusion at its analysis setting and not the sweep's, and a killed stage keeps the
cases it scored and resumes after them."""

from __future__ import annotations

import json
import shutil

import pytest

from cxrxai.data.decode import RowLoader
from cxrxai.data.demo import load_demo
from cxrxai.models.registry import load
from cxrxai.pipeline.fidelity import FidelityPlan, fidelity_stage
from cxrxai.pipeline.runner import BuildContext
from cxrxai.store import open_store, write_store

MODEL = "tiny-densenet121"
PLAN = FidelityPlan(cases=40, methods=("gradcam", "occlusion"), iterations=8, subset=32, seed=1)


class Killed(Exception):
    pass


def _run(path, model, loader, progress):
    with write_store(path) as w:
        ctx = BuildContext(w, "demo", model, load_images=loader, progress=progress, publish_every=0.0)
        return fidelity_stage(ctx, PLAN)


def test_fidelity_pairs_the_methods_and_resumes_after_the_last_scored_case(tiny_full_store, tiny_model_path,
                                                                           tiny_config, tmp_path):
    path = tmp_path / "store.duckdb"
    shutil.copy(tiny_full_store, path)
    data = load_demo(tiny_config, tiny_model_path.parent.parent / "phantoms")
    loader = RowLoader(data.images, [s.image_id for s in data.specs])
    model = load(tiny_model_path, device="cpu")

    def kill_after_first(task, done, total):
        if done == 1:
            raise Killed

    with pytest.raises(Killed):
        _run(path, model, loader, kill_after_first)
    with open_store(path) as s:
        first = s.table("fidelity", model_id=MODEL)
        occ_index = s.map_index(model_id=MODEL, method="occlusion")
    occ = first[first.method == "occlusion"]
    assert len(occ) == 1  # the scored case was kept

    seen = []
    report = _run(path, model, loader, lambda task, done, total: seen.append((done, total)))
    with open_store(path) as s:
        rows = s.table("fidelity", model_id=MODEL)
    occ = rows[rows.method == "occlusion"]
    cases = set(zip(occ.image_id, occ.label))
    n = occ_index.image_id.nunique()  # fewer than 40: one case per image with an occlusion map
    assert len(cases) == n == len(set(occ.image_id)) > 3
    left = report["cases"]
    assert seen == [(k, left) for k in range(1, left + 1)]
    assert report["computed"] == len(rows) - len(first)  # the killed run's case was not scored again
    grad = rows[rows.method == "gradcam"]
    assert cases <= set(zip(grad.image_id, grad.label))  # the same cases: paired
    main = occ_index.params_key.value_counts().index[0]
    assert set(occ.params_key) == {main} and json.loads(main)["patch"] == 32 and json.loads(main)["stride"] == 16
    assert occ_index.params_key.nunique() > 1  # the sweep's settings were there to pick from
    assert occ.faithfulness.dropna().between(-1, 1).all() and occ.faithfulness.notna().sum() > n // 2
    assert (occ.deletion_black.map(len) == occ.insertion_mean.map(len)).all()


def test_main_setting_is_the_stored_default_even_when_the_sweep_has_as_many_maps(tiny_model_path):
    import pandas as pd

    from cxrxai.explain import Setting
    from cxrxai.pipeline.fidelity import _main_setting

    model = load(tiny_model_path, device="cpu")
    keys = {(p, s): Setting.of("occlusion", {"patch": p, "stride": s}, spec=model.spec).key
            for p, s in [(32, 16), (16, 16), (8, 8)]}
    rows = [("a", "Mass", "occlusion", k) for k in keys.values()]  # a full build: every setting on every case
    rows += [("a", "Mass", "gradcam", "{}"), ("b", "Mass", "gradcam", "{}"), ("b", "Mass", "gradcam", '{"x":1}')]
    index = pd.DataFrame(rows, columns=["image_id", "label", "method", "params_key"])
    main = _main_setting(index, model)
    assert set(main[main.method == "occlusion"].params_key) == {keys[32, 16]}  # not the tie's smallest key, 16/16
    assert set(main[main.method == "gradcam"].params_key) == {"{}"}  # no default stored here: the most stored


def test_fidelity_cases_keep_the_scored_cases_when_more_maps_arrive(tiny_full_store, tiny_model_path, tiny_config):
    from cxrxai.pipeline.fidelity import fidelity_cases

    data = load_demo(tiny_config, tiny_model_path.parent.parent / "phantoms")
    loader = RowLoader(data.images, [s.image_id for s in data.specs])
    plan = FidelityPlan(cases=3, methods=("gradcam", "occlusion"), seed=1)
    with write_store(tiny_full_store) as w:  # read only; nothing is written
        ctx = BuildContext(w, "demo", load(tiny_model_path, device="cpu"), load_images=loader)
        index = w.map_index(model_id=MODEL)
        index = index[index.method.isin(plan.methods)]
        occluded = sorted(set(index[index.method == "occlusion"].image_id))
        partial = index[(index.method == "gradcam") | index.image_id.isin(occluded[::2])]  # occlusion on half so far
        before = fidelity_cases(ctx, partial, plan)
        after = fidelity_cases(ctx, index, plan)
        kept = fidelity_cases(ctx, index, plan, scored=before)
    assert len(before) == 3 and not before.equals(after)  # more maps would have moved the draw ...
    assert kept.equals(before)  # ... the cases already scored stay


def test_a_methods_fidelity_row_is_the_same_scored_alone_or_beside_the_others(tiny_full_store, tiny_model_path,
                                                                              tiny_config):
    """The evidence check recomputes a sampled fidelity row with its own method only: a case's
    faithfulness subsets and random-order curves rest on the seed and the image, never on which
    other maps were scored beside it."""
    import pandas as pd

    from cxrxai.pipeline.fidelity import _fidelity_rows, _main_setting, _mean_image

    data = load_demo(tiny_config, tiny_model_path.parent.parent / "phantoms")
    loader = RowLoader(data.images, [s.image_id for s in data.specs])
    with write_store(tiny_full_store) as w:  # read only; nothing is written
        ctx = BuildContext(w, "demo", load(tiny_model_path, device="cpu"), load_images=loader)
        index = _main_setting(w.map_index(model_id=MODEL), ctx.model)
        index = index[index.method.isin(PLAN.methods)]
        both = index.groupby(["image_id", "label"]).filter(lambda g: g.method.nunique() == 2)
        case = both[both.image_id == both.image_id.min()].sort_values("method")
        fill = _mean_image(ctx, ctx.model.spec)
        together = pd.DataFrame(_fidelity_rows(ctx, PLAN, case, fill))
        alone = pd.concat([pd.DataFrame(_fidelity_rows(ctx, PLAN, case.iloc[[i]], fill)) for i in (1, 0)])
    assert len(together) == 2 and list(together.method) == ["gradcam", "occlusion"]
    pd.testing.assert_frame_equal(together, alone.sort_values("method").reset_index(drop=True))
