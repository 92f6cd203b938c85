"""A demo store records which output of each of its models scores which phantom label, as a
precompute does (``label_matches``): the data audit and the dossier never say a store built
today was "built before cxrxai recorded them". The shipped evidence snapshot still goes into a
store whose build recorded them (the matches are a record of the models, like ``models``)."""

from __future__ import annotations

import json

from test_evidence import SNAPSHOT, _new_store

from cxrxai.audit import audit_store
from cxrxai.labels import DEMO_LABELS
from cxrxai.pipeline.evidence import PROVENANCE, import_snapshot
from cxrxai.store import open_store, write_store


def test_a_demo_build_records_its_models_label_matches(tiny_store):
    with open_store(tiny_store) as s:
        rows = s.label_matches(dataset="demo")
        model_ids = set(s.models().model_id)
        section = audit_store(s, dataset="demo").datasets[0].section("label_matches")
    assert set(rows.model_id) == model_ids
    assert set(rows.dataset_label) == set(DEMO_LABELS) and set(rows.how) == {"exact"}
    assert section.empty is None and "built before" not in " ".join(section.lines), section


def test_the_snapshot_goes_into_a_store_whose_build_recorded_label_matches(tmp_path):
    prov = json.loads((SNAPSHOT / PROVENANCE).read_text())
    store = _new_store(tmp_path, prov)
    with write_store(store) as w:
        w.put_label_matches("demo", "demo-densenet121", [{"model_output": lab, "dataset_label": lab,
                                                           "how": "exact"} for lab in DEMO_LABELS])
        got = import_snapshot(w, SNAPSHOT, models_dir=tmp_path, phantom_config=prov["phantom_config"])
    assert "skipped" not in got and got.get("rows"), got
