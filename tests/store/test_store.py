"""The store: round trips, schema versions, and the concurrency contract."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from cxrxai.errors import SchemaVersionError, StoreError, UnknownNameError
from cxrxai.models.spec import ModelSpec
from cxrxai.store import SCHEMA_VERSION, open_store, params_key, write_store


def _images(ids, split="test"):
    return pd.DataFrame({"image_id": ids, "dataset": "d", "patient_id": [f"p{i}" for i in range(len(ids))],
                         "sex": "F", "age": 61.0, "age_bin": "60-80", "view": "PA", "split": split,
                         "width": 8, "height": 8})


@pytest.fixture()
def store_path(tmp_path):
    path = tmp_path / "s.duckdb"
    with write_store(path) as w:
        w.put_dataset("d", source="unit", labels=["A", "B"])
        w.put_images(_images(["i1", "i2", "i3"]))
        w.put_labels(pd.DataFrame({"image_id": ["i1", "i1", "i2", "i2", "i3", "i3"], "label": ["A", "B"] * 3,
                                   "value": [1, 0, 0, None, 1, 1]}))
    return path


def test_round_trip_of_cases_models_predictions_thresholds_and_maps(store_path):
    spec = ModelSpec(name="m", arch="densenet121", labels=("A", "B"), thresholds={"A": 0.5})
    logits = np.array([[2.0, -1.0], [-2.0, 0.0], [0.5, 3.0]], np.float32)
    with write_store(store_path) as w:
        w.put_model(spec, weights_path="m.pt")
        w.put_predictions("m", ["i1", "i2", "i3"], spec.labels, logits, 1 / (1 + np.exp(-logits)))
        w.put_thresholds("m", [{"label": "A", "threshold": 0.5, "method": "f1", "criterion": 1.0, "split": "val"}])
        w.put_annotations(pd.DataFrame([{"image_id": "i1", "label": "A", "reader": "gt", "instance": 0, "kind": "box",
                                         "x": 1.0, "y": 2.0, "w": 3.0, "h": 4.0}]))
        w.put_maps([{"model_id": "m", "image_id": "i1", "label": "A", "method": "gradcam", "params": {"layer": "x"},
                     "target": "logit", "kind": "cam", "values": np.arange(6, dtype=np.float32).reshape(2, 3),
                     "seconds": 0.1, "device": "cpu"}])
    with open_store(store_path) as s:
        assert s.model_spec("m") == spec
        table = s.prediction_table("m")
        row = table[(table.image_id == "i1") & (table.label == "A")].iloc[0]
        assert row.ground_truth == 1 and row.predicted == 1 and row.threshold == 0.5 and row.sex == "F"
        assert table[table.label == "B"]["predicted"].isna().all()  # no threshold → no decision
        assert pd.isna(table[(table.image_id == "i2") & (table.label == "B")]["ground_truth"].iloc[0])
        m = s.get_map("m", "i1", "A", "gradcam", params_key({"layer": "x"}))
        assert m.values.shape == (2, 3) and m.values[1, 2] == 5 and m.params == {"layer": "x"}
        assert s.get_map("m", "i1", "A", "gradcam", params_key({"layer": "y"})) is None
        assert s.annotations(image_id="i1").iloc[0]["w"] == 3.0
        info = s.info()
        assert info["counts"]["predictions"] == 6 and info["explainers"] == ["gradcam"]
        assert s.labels_wide().loc["i3", "B"] == 1


def test_prediction_table_is_kept_per_published_version_and_handed_out_as_a_copy(store_path):
    spec = ModelSpec(name="m", arch="densenet121", labels=("A", "B"), thresholds={"A": 0.5})
    logits = np.zeros((3, 2), np.float32)
    with write_store(store_path) as w:
        w.put_model(spec, weights_path="m.pt")
        w.put_predictions("m", ["i1", "i2", "i3"], spec.labels, logits, np.full((3, 2), 0.5, np.float32))
    with open_store(store_path) as s:
        first = s.prediction_table("m")
        first["prob"] = -1.0  # a caller scribbling on its copy
        assert (s.prediction_table("m")["prob"] == 0.5).all()
        with write_store(store_path) as w:
            w.put_predictions("m", ["i1", "i2", "i3"], spec.labels, logits, np.full((3, 2), 0.9, np.float32))
        assert s.refresh()
        assert np.allclose(s.prediction_table("m")["prob"], 0.9)  # the new version, not the kept one


def test_table_names_meta_and_models_are_read_once_per_published_version(store_path, monkeypatch):
    from cxrxai.store._queries import Queries

    spec = ModelSpec(name="m", arch="densenet121", labels=("A",))
    with write_store(store_path) as w:
        w.put_model(spec, weights_path="m.pt")
    queries = []

    def counted(read):
        def wrapper(self, sql, params=()):
            queries.append(sql)
            return read(self, sql, params)
        return wrapper

    monkeypatch.setattr(Queries, "_rows", counted(Queries._rows))
    monkeypatch.setattr(Queries, "_df", counted(Queries._df))
    with open_store(store_path) as s:
        built, published = s.meta("built_at"), s.published
        for k in range(5):  # what a page's rerun asks again and again: read the first time only
            assert s.meta("built_at") == built and s.has_table("models") and not s.has_table("no_such_table")
            assert s.published == published
            assert s.models().model_id.tolist() == ["m"]
            assert (queries == []) == (k > 0), queries
            queries.clear()
        s.models().loc[0, "model_id"] = "scribbled"  # callers get a copy
        assert s.models().model_id.tolist() == ["m"]
        with write_store(store_path) as w:  # a new version: another model
            w.put_model(ModelSpec(name="n", arch="resnet18", labels=("A",)), weights_path="n.pt")
        assert s.refresh()
        # within the same second built_at may not change: the published key does
        assert s.published != published and s.models().model_id.tolist() == ["m", "n"]


def test_upserts_replace_instead_of_duplicating(store_path):
    with write_store(store_path) as w:
        w.put_images(_images(["i1"], split="val"))
    with open_store(store_path) as s:
        assert len(s.images()) == 3 and s.image("i1")["split"] == "val"


def test_an_image_id_of_another_dataset_is_refused_and_nothing_is_lost(store_path):
    """Two folder datasets both naming their films images/0001.png: the second must not take the
    first's rows (images are keyed by id, and so are their labels and predictions)."""
    with pytest.raises(StoreError, match=r"2 image id\(s\) of dataset 'e' already belong to dataset 'd'.*"
                                         r"first: 'i1'.*Nothing was written"):
        with write_store(store_path) as w:
            w.put_dataset("e", source="unit", labels=["A"])
            w.put_images(_images(["i1", "i2", "j9"]).assign(dataset="e"))
    with open_store(store_path) as s:
        assert s.images()[["image_id", "dataset"]].values.tolist() == [["i1", "d"], ["i2", "d"], ["i3", "d"]]
        assert s.datasets().dataset.tolist() == ["d"]
    with write_store(store_path) as w:  # its own ids, or the same dataset again: written
        w.put_images(_images(["j1"]).assign(dataset="e"))
        w.put_images(_images(["i1"]).assign(sex="M"))
    with open_store(store_path) as s:
        assert s.images().set_index("image_id").loc[["i1", "j1"], ["dataset", "sex"]].values.tolist() == \
            [["d", "M"], ["e", "F"]]


def test_counts_by_group(store_path):
    with open_store(store_path) as s:
        assert s.image_counts(["split", "sex"]).to_dict("records") == [{"split": "test", "sex": "F", "n": 3}]
        with pytest.raises(UnknownNameError):
            s.image_counts(["religion"])


def test_a_newer_schema_is_refused_with_a_clear_error(store_path):
    con = duckdb.connect(str(store_path))
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)])
    con.close()
    with pytest.raises(SchemaVersionError, match="newer"):
        open_store(store_path)
    with pytest.raises(SchemaVersionError), write_store(store_path):
        pass


def test_missing_store_says_how_to_build_one(tmp_path):
    with pytest.raises(StoreError, match="python -m cxrxai demo"):
        open_store(tmp_path / "nope.duckdb")


def test_a_second_writer_is_refused(store_path):
    with write_store(store_path), pytest.raises(StoreError, match="another process"), write_store(store_path):
        pass


def test_failed_write_leaves_the_published_store_intact(store_path):
    with pytest.raises(RuntimeError), write_store(store_path) as w:
        w.put_images(_images(["x1", "x2"]))
        raise RuntimeError("boom")
    with open_store(store_path) as s:
        assert len(s.images()) == 3
    assert sorted(p.name for p in store_path.parent.iterdir()) == ["s.duckdb", "s.duckdb.lock"]


REPO = Path(__file__).resolve().parents[2]
WRITER = textwrap.dedent("""
    import shutil, sys, time, pandas as pd
    from cxrxai.store import write_store

    def slow_copy(src, dst, **kw):
        with open(src, "rb") as a, open(dst, "wb") as b:
            while chunk := a.read(16384):
                b.write(chunk)
                b.flush()
                time.sleep(0.005)
        return dst
    path, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with write_store(path) as w:
        for k in range(n):
            w.put_images(pd.DataFrame({"image_id": [f"w{k}-{j}" for j in range(50)], "dataset": "d",
                                       "split": "train", "width": 8, "height": 8}))
            if mode == "publish":
                w.publish()
            elif mode == "kill-in-publish":
                if k == 2:  # from the third publish on, copy slowly, so the kill lands inside the copy
                    shutil.copyfile = slow_copy
                print("publishing", k, flush=True)
                w.publish()  # killed in here
            print("wrote", k, flush=True)
            time.sleep(0.05)
        if mode == "hold":
            time.sleep(60)  # killed here, before its final publish
""")


def _spawn(tmp_path, store_path, n, mode):
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    env = dict(os.environ, PYTHONPATH=str(REPO))  # importable from wherever the tests are run
    return subprocess.Popen([sys.executable, str(script), str(store_path), str(n), mode], stdout=subprocess.PIPE,
                            text=True, env=env)


def test_reader_keeps_serving_while_another_process_writes(tmp_path, store_path):
    reader = open_store(store_path)
    proc = _spawn(tmp_path, store_path, 15, "publish")
    seen = []
    while proc.poll() is None:
        reader.refresh()
        seen.append(len(reader.images()))
        time.sleep(0.01)
    assert proc.returncode == 0
    reader.refresh()
    seen.append(len(reader.images()))
    assert seen == sorted(seen) and seen[-1] == 3 + 15 * 50
    assert len(set(seen)) > 2  # it saw intermediate publishes, not just the start and the end


def test_killed_writer_leaves_the_previous_store_and_the_next_writer_works(tmp_path, store_path):
    proc = _spawn(tmp_path, store_path, 5, "hold")
    lines = [proc.stdout.readline().strip() for _ in range(5)]
    assert lines == [f"wrote {k}" for k in range(5)]  # the writer really wrote (its progress, not a crash)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL  # and died by the signal
    with open_store(store_path) as s:
        assert len(s.images()) == 3
    with write_store(store_path) as w:  # lock released by the OS; stale staging discarded
        w.put_images(_images(["after"]))
    with open_store(store_path) as s:
        assert len(s.images()) == 4


@pytest.mark.parametrize("delay", [0.0, 0.003, 0.01, 0.03])
def test_a_writer_killed_while_publishing_leaves_a_whole_store_that_resumes(tmp_path, store_path, delay):
    """Killed inside publish, while the checkpointed staging copy is being copied (slowed down in
    the writer so the kill lands there): the published store is the version before that publish,
    never a torn one; the next writer works."""
    proc = _spawn(tmp_path, store_path, 50, "kill-in-publish")
    for k in range(3):
        assert proc.stdout.readline().strip() == f"publishing {k}"
        if k < 2:
            assert proc.stdout.readline().strip() == f"wrote {k}"
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    with open_store(store_path) as s:
        n = len(s.images())
    assert n in (3 + 2 * 50, 3 + 3 * 50), n  # publish 2 either did not happen or happened whole
    with write_store(store_path) as w:
        w.put_images(_images(["after"]))
    with open_store(store_path) as s:
        assert len(s.images()) == n + 1
    assert not list(store_path.parent.glob("*.publish-*")) and not store_path.with_name("s.duckdb.staging").exists()


def _v2_store(path: Path) -> None:
    """A store as schema v2 wrote it: baselines and second readers in the method column."""
    from cxrxai.store._schema import MIGRATIONS

    con = duckdb.connect(str(path))
    for v in (1, 2):
        for ddl in MIGRATIONS[v]:
            con.execute(ddl)
    con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', '2')")
    for method, iou in (("gradcam", 0.4), ("baseline:average_mask", 0.2), ("baseline:random", 0.05),
                        ("reader:hb", 0.7)):
        con.execute("INSERT INTO localization (model_id, image_id, label, method, params_key, reader, iou) "
                    "VALUES ('m', 'i1', 'A', ?, '{}', 'gt', ?)", [method, iou])
    con.close()


def _sources(df: pd.DataFrame) -> list[tuple]:
    return sorted(zip(df.source, df.method, df.iou.round(2)))


EXPECTED_SOURCES = [("baseline", "average_mask", 0.2), ("baseline", "random", 0.05), ("explainer", "gradcam", 0.4),
                    ("reader", "hb", 0.7)]


def test_a_v2_store_is_read_with_baselines_and_readers_in_their_own_column(tmp_path):
    path = tmp_path / "v2.duckdb"
    _v2_store(path)
    with open_store(path) as s:
        assert s.schema_version() == 2
        assert _sources(s.table("localization")) == EXPECTED_SOURCES
        assert _sources(s.table("localization", source="reader")) == [("reader", "hb", 0.7)]
        assert _sources(s.table("localization", source="baseline", method="random")) == [("baseline", "random", 0.05)]


def test_writing_migrates_a_v2_store_to_source_and_method_columns(tmp_path):
    path = tmp_path / "v2.duckdb"
    _v2_store(path)
    with write_store(path) as w:
        assert w.schema_version() == SCHEMA_VERSION  # migrated to this version, through v3's source column
        assert _sources(w.table("localization")) == EXPECTED_SOURCES
        assert w.has_table("shortcut") and w.table("shortcut").empty  # v4: the planted-shortcut table, empty
        # the same name from two sources is two rows, not an overwrite
        w.put_table("localization", pd.DataFrame([{"model_id": "m", "image_id": "i1", "label": "A", "source": "reader",
                                                   "method": "gradcam", "params_key": "{}", "reader": "gt", "iou": 0.9}]))
        assert len(w.table("localization", method="gradcam")) == 2
    with open_store(path) as s:
        assert _sources(s.table("localization", source="explainer")) == [("explainer", "gradcam", 0.4)]


def test_stored_methods_lists_each_explainer_with_maps_once(store_path):
    with write_store(store_path) as w:
        w.put_model(ModelSpec(name="m", arch="densenet121", labels=("A", "B")))
        rows = [{"model_id": "m", "image_id": i, "label": "A", "method": meth, "params": {"k": k}, "target": "logit",
                 "kind": "cam", "values": np.zeros((2, 2), np.float32), "seconds": 0.1, "device": "cpu"}
                for i in ("i1", "i2") for meth in ("gradcam", "occlusion") for k in (1, 2)]
        w.put_maps(rows)
        assert w.stored_methods("m") == ["gradcam", "occlusion"] and w.stored_methods("other") == []


def test_setting_names_tell_every_stored_setting_apart():
    from cxrxai.explain import setting_names

    pairs = pd.DataFrame({"method": ["ig", "ig", "ig", "ig", "occlusion", "occlusion", "gradcam"],
                          "params_key": ['{"n":20}', '{"n":20.0}', '{"n":null}', "{}", '{"patch":32,"stride":16}',
                                         '{"patch":32,"stride":16}', '{"layer":"x"}']})
    names = setting_names(pairs)
    assert names[4] == names[5] == "occlusion 32/16" and names[6] == "gradcam"  # repeated pairs: one name
    assert len(set(names[:4])) == 4, names[:4]  # 20 vs 20.0, null vs unset: four settings, four names
    assert names[:4] == ["ig (n=20)", "ig (n=20.0)", "ig (n=None)", "ig (n=unset)"]


def test_label_matches_of_a_dataset_and_model_are_replaced_not_appended(store_path):
    from cxrxai.labels import match_labels

    with write_store(store_path) as w:
        w.put_label_matches("d", "m", match_labels(["Effusion", "X"], ["Pleural Effusion", "B"]).rows())
        w.put_label_matches("d", "other", match_labels(["B"], ["B"]).rows())
        w.put_label_matches("d", "m", match_labels(["Effusion"], ["Pleural Effusion"]).rows())  # a rerun
        with pytest.raises(StoreError, match="'fuzzy' is not one of exact, case, alias"):
            w.put_label_matches("d", "m", [{"model_output": "a", "dataset_label": "b", "how": "fuzzy"}])
    with open_store(store_path) as s:
        mine = s.label_matches(dataset="d", model_id="m")
        assert mine[["model_output", "dataset_label", "how"]].values.tolist() == [
            ["Effusion", "Pleural Effusion", "alias"]]
        assert s.label_matches(model_id="other").how.tolist() == ["exact"]
        assert len(s.label_matches()) == 2


def test_the_explorer_opens_on_a_finding_the_dataset_labels_and_offers_every_split(store_path):
    from cxrxai import summaries

    cases = pd.DataFrame({"label": ["Atelectasis", "Atelectasis", "Pneumonia", "Pneumonia", "Mass"],
                          "ground_truth": [np.nan, np.nan, 0, 1, 0]})
    choice = summaries.finding_choices(cases, ["Atelectasis", "Mass", "Pneumonia", "Effusion"])
    assert choice.finding.tolist() == ["Atelectasis", "Mass", "Pneumonia"]  # model order, present only
    assert choice.labelled.tolist() == [0, 1, 2] and choice.finding[choice.default].tolist() == ["Pneumonia"]
    no_positive = summaries.finding_choices(cases[cases.label != "Pneumonia"], ["Atelectasis", "Mass"])
    assert no_positive.finding[no_positive.default].tolist() == ["Mass"]  # labelled, though no positive
    with write_store(store_path) as w:
        w.put_images(pd.concat([_images(["v1", "v2"], split="val")]))
        w.put_predictions("m", ["i1", "v1", "v2"], ("A",), np.zeros((3, 1)), np.full((3, 1), 0.5))
    with open_store(store_path) as s:
        assert summaries.split_choices(s, "m") == {"test": 1, "val": 2, "all": 3}
