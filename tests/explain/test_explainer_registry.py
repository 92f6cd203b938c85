"""The explainer registry is the single source: a method registered in one call is explained,
checked, listed by the CLI, planned by the precompute, stored by a build and given controls by the
viewer — the README's "Add an explainer" recipe, run end to end."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from cxrxai.cli import main
from cxrxai.errors import ExplainerError, UnknownNameError
from cxrxai.explain import METHODS, Method, Param, explain, get, method_names, register, unregister


def _toy_run(module, spec, images, targets, *, gain=1.0, mode="mean"):
    grey = images.mean(1) if mode == "mean" else images.amax(1)
    return grey * gain * (targets.view(-1, 1, 1) + 1)


TOY = Method("toy", "pixel", (Param("gain", 1.0, float, "multiplies the map", range=(0.0, 10.0),
                                    control=(0.5, 1.0, 2.0), label="Gain"),
                              Param("mode", "mean", str, "channel reduction", choices=("mean", "max"),
                                    control=("mean", "max"))),
             "a test method", run=_toy_run, label="Toy")
TOY_COSTLY = Method("toy_costly", "pixel", (Param("gain", 1.0, float),), "a costly test method", run=_toy_run,
                    cost="costly", plan_per_label=3)


@pytest.fixture()
def toys():
    register(TOY)
    register(TOY_COSTLY)
    yield
    unregister("toy")
    unregister("toy_costly")


def test_a_registered_method_is_explained_with_checked_parameters(toys, tiny_net, image):
    m = explain(tiny_net, image, 2, "toy", gain=2.0)
    np.testing.assert_allclose(m, (image.mean(1)[0] * 2.0 * 3).numpy(), rtol=1e-6)
    with pytest.raises(ExplainerError, match=r"toy: gain=20.0 is outside \[0, 10\]"):
        explain(tiny_net, image, 0, "toy", gain=20.0)
    with pytest.raises(ExplainerError, match="toy has no parameter"):
        explain(tiny_net, image, 0, "toy", patch=3)
    with pytest.raises(UnknownNameError, match="'mean', 'max'"):
        explain(tiny_net, image, 0, "toy", mode="median")
    with pytest.raises(ExplainerError, match="already registered"):
        register(TOY)


def test_the_cli_lists_it(toys, capsys):
    for command in ("precompute", "explain"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "toy_costly" in out and "toy (gain, mode)" in out


def test_the_precompute_plans_it(toys):
    from cxrxai.pipeline.maps import MapPlan

    plan = MapPlan()
    assert plan.cams == ("gradcam", "gradcam++", "toy")
    toy_cfg = next(c for c in plan.maps if c.method == "toy_costly")
    assert (toy_cfg.params, toy_cfg.per_label) == ({"gain": 1.0}, 3)


def test_a_build_stores_it_for_every_test_image_and_finding(toys, tiny_store, tiny_model_path, tiny_config, tmp_path):
    from cxrxai.pipeline import Stage, build_demo
    from cxrxai.pipeline.maps import MapPlan, cam_stage
    from cxrxai.store import open_store

    path = tmp_path / "toy.duckdb"
    shutil.copy(tiny_store, path)
    plan = MapPlan(cams=("toy",))
    report = build_demo(path, model_path=tiny_model_path, data_dir=tiny_model_path.parent.parent / "phantoms",
                        config=tiny_config, stages=[Stage("cams", lambda c: cam_stage(c, plan))])
    with open_store(path) as store:
        idx = store.map_index(method="toy")
        n_test = len(store.images(split="test"))
        findings = [lab for lab in store.model_spec("tiny-densenet121").labels if lab != "No Finding"]
        assert len(idx) == n_test * len(findings) == report["cams"]["pairs"]
        row = idx.iloc[0]
        stored = store.get_map(row.model_id, row.image_id, row.label, "toy", row.params_key)
    assert report["cams"]["closed_form"] is False
    assert stored.params == {"gain": 1.0, "mode": "mean"} and stored.values.shape == (64, 64)


def test_the_viewer_draws_its_controls(toys):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    # a file guarded by __name__ (not AppTest.from_function): AppTest leaves __main__ pointing at its
    # script, and the live worker's spawned child (later tests) re-imports __main__
    at = AppTest.from_file(str(Path(__file__).with_name("_controls_app.py")))
    at.session_state["method"] = "toy"
    at.run()
    assert not at.exception
    assert at.select_slider(key="gain_0").value == 1.0
    assert at.select_slider(key="gain_0").options == ["0.5", "1.0", "2.0"]
    assert at.radio(key="mode_0").options == ["mean", "max"]


def test_the_explorer_offers_it_in_its_explainer_picker(toys):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).with_name("_controls_app.py")))
    at.session_state["picker"] = True
    at.run()
    assert not at.exception
    assert {"Toy", "toy_costly"} <= set(at.selectbox(key="method_0").options)
    at.selectbox(key="method_0").set_value("toy").run()
    assert not at.exception and at.select_slider(key="gain_0").value == 1.0


def test_precompute_stores_it_into_a_store_under_its_setting_key(toys, tmp_path, monkeypatch):
    import json

    import torchvision
    from PIL import Image

    from cxrxai.explain import Setting
    from cxrxai.store import open_store

    films = tmp_path / "films"
    films.mkdir()
    rows = ["path,sex,age,split,Effusion,Nodule"]
    for i in range(4):
        Image.fromarray((np.random.default_rng(i).random((48, 48)) * 255).astype(np.uint8)).save(films / f"f{i}.png")
        rows.append(f"f{i}.png,{'MF'[i % 2]},{40 + i},test,{i % 2},{(i + 1) % 2}")
    (films / "meta.csv").write_text("\n".join(rows) + "\n")
    torch.manual_seed(0)
    torch.save(torchvision.models.resnet18(num_classes=2).state_dict(), tmp_path / "w.pth")
    (tmp_path / "labels.json").write_text(json.dumps(["Effusion", "Nodule"]))
    monkeypatch.setenv("CXRXAI_DATA_CACHE", str(tmp_path / "cache"))
    assert main(["precompute", "--dataset", "folder", "--root", str(films), "--data-option",
                 f"csv={films / 'meta.csv'}", "--data-option", "labels=Effusion,Nodule", "--model",
                 f"resnet18:{tmp_path / 'w.pth'}:{tmp_path / 'labels.json'}", "--input-size", "64",
                 "--store", str(tmp_path / "s.duckdb"), "--explainers", "toy,toy_costly"]) == 0
    with open_store(tmp_path / "s.duckdb") as store:
        spec = store.model_spec(store.models().model_id.iloc[0])
        toy, costly = store.map_index(method="toy"), store.map_index(method="toy_costly")
    assert len(toy) == 4 * 2 and len(costly) == 4  # every image × finding; the positives
    assert set(toy.params_key) == {Setting.of("toy", spec=spec).key}
    assert set(costly.params_key) == {Setting.of("toy_costly", spec=spec).key}


def test_occlusion_strides_offered_never_exceed_the_patch():
    from pages._viewer import _offered

    stride = get("occlusion").param("stride")
    assert _offered(stride, {"patch": 8}) == ([4, 8], 8)
    assert _offered(stride, {"patch": 32}) == ([4, 8, 12, 16, 24, 32], 16)


@pytest.mark.parametrize("name", list(METHODS))
def test_every_builtin_declares_what_the_tool_needs(name):
    m = get(name)
    assert m.reference and m.title and callable(m.run)
    assert set(m.stored_defaults) <= set(m.defaults)
    assert not {"progress", "cancel", "batch_size", "internal_batch_size"} & set(m.stored_defaults)
    for p in m.params:
        assert p.check(p.default, name) == p.default or isinstance(p.default, tuple)


def test_parameters_typed_on_the_command_line_are_parsed_and_checked():
    steps = get("ig").param("steps")
    assert steps.parse("16") == 16
    with pytest.raises(ExplainerError, match="int"):
        steps.parse("sixteen")
    with pytest.raises(ExplainerError, match="outside"):
        steps.parse("0")
    assert get("gradcam").param("relu").parse("true") is True
    assert method_names(cost="cheap") == ["gradcam", "gradcam++"]
    assert torch.is_tensor(torch.zeros(1))  # keeps the import honest for the toy run
