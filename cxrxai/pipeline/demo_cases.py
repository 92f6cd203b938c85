"""The demo's cases in a store: the rendered phantoms registered as a dataset (images,
labels, exact masks, and the synthetic second reader on the test split), before any model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.demo import DemoData, given_or_loaded, label_matrix
from ..data.phantom import PhantomConfig
from ..data.second_reader import synthetic_reader
from ..labels import DEMO_LABELS
from ..paths import absolute
from ..store import write_store

__all__ = ["DEMO_DATASET", "demo_dataset_store", "put_demo_dataset"]

DEMO_DATASET = "demo"


def _demo_tables(data: DemoData) -> tuple[pd.DataFrame, pd.DataFrame]:
    specs = data.specs
    size = data.config.size
    images = pd.DataFrame({
        "image_id": [s.image_id for s in specs],
        "dataset": DEMO_DATASET,
        "path": None,
        "generator_key": [s.to_json() for s in specs],
        "patient_id": [s.patient_id for s in specs],
        "sex": [s.sex for s in specs],
        "age": [float(s.age) for s in specs],
        "age_bin": [s.age_bin for s in specs],
        "view": [s.view for s in specs],
        "split": [s.split for s in specs],
        "width": size,
        "height": size,
        # the phantom generator draws each case's sex, age and view (its spec), so none is read
        # from a file
        "sex_source": "derived:phantom",
        "age_source": "derived:phantom",
        "view_source": "derived:phantom",
    })
    y = label_matrix(specs)
    labels = pd.DataFrame({
        "image_id": np.repeat(images["image_id"].to_numpy(), len(DEMO_LABELS)),
        "label": np.tile(np.array(DEMO_LABELS, dtype=object), len(specs)),
        "value": y.ravel().astype(int),
    })
    return images, labels


def demo_dataset_store(store_path: str | Path, *, data_dir: str | Path, config: PhantomConfig,
                       data: DemoData | None = None) -> Path:
    """A store with the demo's cases alone, as :func:`build_demo` registers them before its model
    (a build given it as its store skips that step): the phantoms rendered where missing, or
    ``data``."""
    with write_store(store_path) as writer:
        put_demo_dataset(writer, given_or_loaded(data, config, data_dir), config, data_dir)
    return Path(store_path)


def put_demo_dataset(writer, data, config: PhantomConfig, data_dir: str | Path) -> None:
    """Register the rendered phantoms: dataset, images, labels, exact masks and, on the test split,
    the synthetic second reader; published at once, so pages have cases while the rest builds."""
    images, labels = _demo_tables(data)
    writer.put_dataset(
        DEMO_DATASET,
        source="cxrxai phantom",
        labels=list(DEMO_LABELS),
        root=str(absolute(data_dir)),
        config=json.loads(config.to_json()),
        description="Deterministic phantom chest radiographs with exact lesion masks",
    )
    writer.put_images(images)
    writer.put_labels(labels)
    writer.put_annotations(data.annotations)
    test_ids = set(images.image_id[images.split == "test"])
    test_annotations = data.annotations[data.annotations.image_id.isin(test_ids)]
    writer.put_annotations(synthetic_reader(test_annotations))
    writer.publish()
