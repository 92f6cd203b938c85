"""The pages' cached store reads are kept per published version: a store republished by a running
precompute is seen on the next rerun (the caches run bare here, outside a Streamlit runtime)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cxrxai.models.spec import ModelSpec
from cxrxai.store import write_store
from pages import _cache


def _predict(path, name: str, prob: float = 0.5, labels: tuple[str, ...] = ("A",)) -> None:
    spec = ModelSpec(name=name, arch="densenet121", labels=labels)
    with write_store(path) as w:
        w.put_model(spec, weights_path=f"{name}-{len(labels)}.pt")
        w.put_predictions(name, ["i1"], spec.labels, np.zeros((1, len(labels)), np.float32),
                          np.full((1, len(labels)), prob, np.float32))


def _one_image(path) -> None:
    """A store of one dataset ("d", label A) holding one 8 × 8 test image, i1."""
    with write_store(path) as w:
        w.put_dataset("d", source="unit", labels=["A"])
        w.put_images(pd.DataFrame({"image_id": ["i1"], "dataset": "d", "patient_id": ["p1"], "sex": "F",
                                   "age": 61.0, "age_bin": "60-80", "view": "PA", "split": "test",
                                   "width": 8, "height": 8}))


def test_the_model_pickers_choices_are_read_again_when_the_store_republishes(tmp_path):
    path = tmp_path / "s.duckdb"
    _one_image(path)
    _cache._open.clear()
    store = _cache._open(str(path))
    assert _cache.predicted_models(str(path), _cache.version(store)) == []
    _predict(path, "m")
    assert store.refresh()
    assert _cache.predicted_models(str(path), _cache.version(store)) == ["m"]
    _predict(path, "n")
    assert store.refresh()
    assert _cache.predicted_models(str(path), _cache.version(store)) == ["m", "n"]
    store.close()
    _cache._open.clear()


def test_the_explorers_findings_are_counted_again_when_the_store_republishes(tmp_path):
    path = tmp_path / "s.duckdb"
    _one_image(path)
    with write_store(path) as w:
        w.put_labels(pd.DataFrame({"image_id": ["i1"], "label": ["A"], "value": [0]}))
    _predict(path, "m")
    _cache._open.clear()
    store = _cache._open(str(path))
    choices = _cache.finding_choices(str(path), _cache.version(store), "m", "gradcam", "all")
    assert choices.positives.tolist() == [0]
    with write_store(path) as w:
        w.put_labels(pd.DataFrame({"image_id": ["i1"], "label": ["A"], "value": [1]}))
    assert store.refresh()
    choices = _cache.finding_choices(str(path), _cache.version(store), "m", "gradcam", "all")
    assert choices.positives.tolist() == [1]
    store.close()
    _cache._open.clear()


def test_a_panels_probability_is_read_again_when_the_store_republishes(tmp_path):
    path = tmp_path / "s.duckdb"
    _one_image(path)
    _predict(path, "m", prob=0.25)
    _cache._open.clear()
    store = _cache._open(str(path))
    assert _cache.panel_state(str(path), _cache.version(store), "m", "i1", "A").prob == 0.25
    _predict(path, "m", prob=0.75)
    assert store.refresh()
    assert _cache.panel_state(str(path), _cache.version(store), "m", "i1", "A").prob == 0.75
    store.close()
    _cache._open.clear()


def test_a_models_spec_and_row_are_read_again_when_the_store_republishes(tmp_path):
    path = tmp_path / "s.duckdb"
    _one_image(path)
    _predict(path, "m")
    _cache._open.clear()
    store = _cache._open(str(path))
    assert _cache.model_spec(str(path), _cache.version(store), "m").labels == ("A",)
    assert _cache.models(str(path), _cache.version(store)).weights_path.str.endswith("m-1.pt").all()
    _predict(path, "m", labels=("A", "B"))  # registered again with another output
    assert store.refresh()
    assert _cache.model_spec(str(path), _cache.version(store), "m").labels == ("A", "B")
    assert _cache.models(str(path), _cache.version(store)).weights_path.str.endswith("m-2.pt").all()
    store.close()
    _cache._open.clear()


def test_a_read_keyed_by_a_version_the_shared_store_has_left_reruns_the_page(tmp_path):
    """Another session moved the shared store to a newer published version during this run: a read
    keyed by this run's version would file the new rows under the old key and mix both versions on
    one page; the run starts over instead, at the new version."""
    from streamlit.testing.v1 import AppTest

    path = tmp_path / "s.duckdb"
    _one_image(path)
    _predict(path, "m")
    _cache._open.clear()

    def script(path: str) -> None:
        import numpy as np
        import streamlit as st

        from cxrxai.models.spec import ModelSpec
        from cxrxai.store import write_store
        from pages import _cache

        store = _cache._open(path)
        built = _cache.version(store)
        st.session_state["runs"] = st.session_state.get("runs", 0) + 1
        if st.session_state["runs"] == 1:  # another session publishes and refreshes the shared store
            spec = ModelSpec(name="n", arch="densenet121", labels=("A",))
            with write_store(path) as w:
                w.put_model(spec, weights_path="n.pt")
                w.put_predictions("n", ["i1"], spec.labels, np.zeros((1, 1), np.float32),
                                  np.full((1, 1), 0.5, np.float32))
            store.refresh()
        st.session_state["shown"] = (built, _cache.models(path, built).model_id.tolist())

    at = AppTest.from_function(script, args=(str(path),), default_timeout=60).run()
    assert not at.exception, at.exception
    built, shown = at.session_state["shown"]
    assert at.session_state["runs"] == 2 and shown == ["m", "n"]
    assert built == _cache.version(_cache._open(str(path)))  # the rows shown are of the version named
    _cache._open.clear()
