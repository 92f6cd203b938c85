"""Every number in an explorer panel is that panel's model's, and its contour is what it scored
(issue 26): one Model picker per panel (the page's for the single view and the left panel, its own
for the compare layout's right panel), the probability, threshold and outcome read with that
model; a cancelled partial map draws no contour and says why.

A store of the tiny phantom cohort and two models' predictions and thresholds (other
probabilities, other thresholds), written through the store's writer.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_live_viewer import StandIn, stand_in  # noqa: F401  (tests/app is on sys.path; the fixture)
from test_pages import _app

from cxrxai import summaries
from cxrxai.data.demo import load_demo
from cxrxai.labels import DEMO_LABELS
from cxrxai.live import JobState
from cxrxai.models.spec import ModelSpec
from cxrxai.pipeline.demo_cases import put_demo_dataset
from cxrxai.present.film import SEGMENTATION_NAME
from cxrxai.store import open_store, write_store

pytestmark = pytest.mark.slow
MODEL, SECOND = "tiny-densenet121", "second-model"


@pytest.fixture(scope="module")
def two_models(tiny_config, tmp_path_factory):
    """The tiny phantom cohort and two models' predictions and thresholds (no training, no maps:
    the first model's maps are live ones, which the stand-in worker holds)."""
    root = tmp_path_factory.mktemp("two_models")
    data = load_demo(tiny_config, root / "phantoms")
    path = root / "two.duckdb"
    rng = np.random.default_rng(0)
    with write_store(path) as w:
        put_demo_dataset(w, data, tiny_config, root / "phantoms")
        ids = sorted(w.images().image_id)
        for k, (name, arch) in enumerate(((MODEL, "densenet121"), (SECOND, "imported"))):
            probs = rng.uniform(0.05, 0.95, (len(ids), len(DEMO_LABELS))).astype(np.float32)
            w.put_model(ModelSpec(name=name, arch=arch, labels=tuple(DEMO_LABELS), thresholds={}))
            w.put_predictions(name, ids, tuple(DEMO_LABELS), np.log(probs / (1 - probs)), probs)
            w.put_thresholds(name, [{"label": lab, "threshold": 0.1 + 0.2 * k + 0.01 * j, "method": "test",
                                     "criterion": None, "split": None} for j, lab in enumerate(DEMO_LABELS)])
    return path


def _decision(path, model_id: str, case: str, label: str = "Effusion") -> str:
    """The model's probability, threshold and outcome on the case, read from the store."""
    with open_store(path) as s:
        t = summaries.case_table(s, model_id)
    r = t[(t.image_id == case) & (t.label == label)].iloc[0]
    return f"P {r.prob:.3f} (threshold {r.threshold:.3f}) · {r.outcome}"


def _case(path) -> str:
    with open_store(path) as s:
        t = summaries.case_table(s, MODEL)
    return t[(t.label == "Effusion") & (t.outcome == "TP")].image_id.iloc[0]


def _texts(at) -> list[str]:
    return [m.value for m in at.markdown] + [c.value for c in at.caption]


def test_the_single_panel_shows_the_chosen_models_probability_and_only_one_model_picker(
        two_models, stand_in):  # noqa: F811
    case = _case(two_models)
    first, second = _decision(two_models, MODEL, case), _decision(two_models, SECOND, case)
    assert first.split(" ·")[0] != second.split(" ·")[0]
    at = _app(two_models, "pages/explorer.py", sel_model=MODEL, f_finding="Effusion", sel_case=case)
    assert not at.exception, at.exception
    assert [s.label for s in at.selectbox if "model" in s.label.lower()] == ["Model"]  # one picker
    assert f"**{MODEL}** · {first}" in _texts(at)
    at.selectbox(key="model_widget").set_value(SECOND).run()
    assert not at.exception, at.exception
    assert case in at.subheader[0].value
    texts = _texts(at)
    assert f"**{SECOND}** · {second}" in texts, texts
    assert not any(first.split(" ·")[0] in t for t in texts), texts  # no number of the other model is left


def test_the_compare_layouts_second_panel_shows_its_own_models_numbers(two_models, stand_in):  # noqa: F811
    case = _case(two_models)
    at = _app(two_models, "pages/explorer.py", sel_model=MODEL, f_finding="Effusion", sel_case=case,
              layout="compare", method_1="gradcam")
    assert not at.exception, at.exception
    at.selectbox(key="model_1").set_value(SECOND).run()
    assert not at.exception, at.exception
    captions = [c.value for c in at.caption if c.value.startswith("**")]
    assert len(captions) == 2, captions
    assert _decision(two_models, MODEL, case) in captions[0] and MODEL in captions[0]
    assert _decision(two_models, SECOND, case) in captions[1] and SECOND in captions[1]
    (films,) = [e for e in at.get("component_instance") if "cxrxai_film" in e.proto.component_name]
    figure = json.loads(json.loads(films.proto.json_args)["figure"])  # compare's film component
    titles = [a["text"] for a in figure["layout"]["annotations"]]
    assert SECOND in titles[1] and f"P {_decision(two_models, SECOND, case)[2:7]}" in titles[1], titles


def test_a_cancelled_partial_map_draws_no_contour_and_is_not_scored(two_models, stand_in):  # noqa: F811
    at = _app(two_models, "pages/explorer.py", sel_model=MODEL, f_finding="Effusion",
              sel_case=_case(two_models), method_0="occlusion", patch_0=8, stride_0=4)
    (job,) = stand_in.live()
    job.partial = np.outer(np.arange(8.0), np.arange(8.0)).astype(np.float32)
    job.state = JobState.CANCELLED
    at.run()
    assert not at.exception, at.exception
    (film,) = [e for e in at.get("component_instance") if "cxrxai_film" in e.proto.component_name]
    spec = json.loads(film.proto.json_args)["figure"]  # the film component's figure (pages/_film_view.py)
    assert '"type":"image"' in spec.replace(" ", "") and SEGMENTATION_NAME not in spec  # the map, no contour
    why = "No segmentation contour: the map is partial (cancelled)"
    assert any(c.value.startswith(why) for c in at.caption), [c.value for c in at.caption]
    assert not at.metric  # and no scores of a partial map
