"""A setting of an explainer is one value: resolved parameters → the store's key, its stored JSON,
the call arguments and its name, built only through the method's declaration."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cxrxai.errors import ExplainerError, UnknownNameError
from cxrxai.explain import Setting, explain, method_names, setting_names
from cxrxai.models.spec import ModelSpec
from cxrxai.store import params_key

DEMO = ModelSpec(name="demo-densenet121", arch="densenet121", labels=("Atelectasis", "Effusion"))

#: The ``default_settings`` a demo build recorded before settings were one type (the store's
#: meta, demo-densenet121): a store built then must keep matching the keys resolved now.
STORED_KEYS = {
    "gradcam": '{"layer":"features.norm5","output":"logit","relu":false}',
    "gradcam++": '{"layer":"features.norm5","output":"logit","relu":false}',
    "gradientshap": '{"baseline":"black","n_samples":5,"output":"logit","reduce":"sum","seed":0,"stdevs":0.0}',
    "guided_backprop": '{"output":"logit","reduce":"sum"}',
    "guided_gradcam": '{"layer":"features.norm5","output":"logit","reduce":"sum"}',
    "ig": '{"baseline":"black","integration":"gausslegendre","noise_level":0.15,"nt_samples":0,'
          '"nt_type":"smoothgrad","output":"logit","reduce":"sum","seed":0,"steps":50}',
    "occlusion": '{"baseline":"black","height":224,"output":"logit","patch":32,"precision":"fp32",'
                 '"stride":16,"width":224}',
    "saliency": '{"output":"logit","reduce":"sum"}',
    "smoothgrad": '{"noise_level":0.15,"nt_samples":25,"nt_type":"smoothgrad","output":"logit","reduce":"sum",'
                  '"seed":0}',
    "xrai": '{"dilation_radius":5,"min_size":null,"output":"logit","scales":[50,100,150,250,500,1200],'
            '"sigma":0.8,"steps":50}',
}


@pytest.mark.parametrize("method", sorted(STORED_KEYS))
def test_the_key_of_a_default_setting_is_the_one_existing_stores_hold(method):
    setting = Setting.of(method, spec=DEMO)
    assert setting.key == STORED_KEYS[method] == params_key(dict(setting.params))
    assert Setting.stored(method, STORED_KEYS[method]) == setting  # and reads back as the same setting


def test_every_builtin_has_a_pinned_key():
    """The built-in methods (a frozen list: those of the stores built before settings were one type)
    are all registered; a method registered since is keyed by its own declaration."""
    assert set(STORED_KEYS) <= set(method_names())
    for method in sorted(set(method_names()) - set(STORED_KEYS)):
        setting = Setting.of(method, spec=DEMO)
        assert setting.key == params_key(dict(setting.params)) and Setting.stored(method, setting.key) == setting


def test_a_sweep_setting_keys_its_window_and_given_defaults_change_nothing():
    sweep = Setting.of("occlusion", {"patch": 16, "stride": 8}, spec=DEMO)
    assert json.loads(sweep.key) == {**json.loads(STORED_KEYS["occlusion"]), "patch": 16, "stride": 8}
    assert Setting.of("occlusion", {"patch": 32, "baseline": "black"}, spec=DEMO) == Setting.of("occlusion",
                                                                                               spec=DEMO)
    assert len({Setting.of("ig", spec=DEMO), Setting.of("ig", {"steps": 50}, spec=DEMO)}) == 1


def test_stored_json_to_setting_to_call_arguments_round_trips(tiny_net, image):
    stored = json.dumps(json.loads(STORED_KEYS["occlusion"]) | {"patch": 8, "stride": 4}, sort_keys=True)
    setting = Setting.stored("occlusion", stored)
    kwargs = setting.kwargs()
    assert "height" not in kwargs and "width" not in kwargs  # geometry is stored, never passed
    assert kwargs["patch"] == 8 and kwargs["engine"] == "auto" and kwargs["progress"] is None
    assert Setting.stored("occlusion", setting.key) == setting and json.loads(setting.key) == json.loads(stored)
    np.testing.assert_allclose(explain(tiny_net, image, 1, "occlusion", **kwargs),
                               explain(tiny_net, image, 1, "occlusion", patch=8, stride=4), atol=1e-6)
    assert setting.kwargs(batch_size=3)["batch_size"] == 3


def test_bad_parameters_are_refused_naming_what_is_allowed():
    with pytest.raises(UnknownNameError, match="'black', 'zero', 'white', 'mean'"):
        Setting.of("occlusion", {"baseline": "grey"})
    with pytest.raises(ExplainerError, match=r"ig has no parameter\(s\) \['stepz'\]; allowed: \[.*'steps'"):
        Setting.of("ig", {"stepz": 3})
    with pytest.raises(ExplainerError, match=r"ig: steps=0 is outside \[1, 10000\]"):
        Setting.stored("ig", '{"steps": 0}')
    with pytest.raises(ExplainerError, match=r"\['batch_size'\] change how a map is computed.*'patch'"):
        Setting.of("occlusion", {"batch_size": 4})
    with pytest.raises(UnknownNameError, match="explainer"):
        Setting.of("no-such-method")


def test_a_setting_is_named_by_its_controls_and_its_window():
    s = Setting.of("occlusion", {"patch": 16, "stride": 8})
    assert (s.describe(), s.slug()) == ("Occlusion patch 16 stride 8 baseline black", "-patch16-stride8-baselineblack")
    assert Setting.of("gradcam").describe() == "Grad-CAM" and Setting.of("gradcam").slug() == ""
    import pandas as pd

    pairs = pd.DataFrame({"method": ["occlusion", "occlusion", "ig"],
                          "params_key": [Setting.of("occlusion", spec=DEMO).key, s.key, STORED_KEYS["ig"]]})
    assert setting_names(pairs)[0].startswith("occlusion 32/16") and setting_names(pairs)[2] == "ig"
