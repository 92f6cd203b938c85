"""Exports in formats other tools read: CSV tables, CheXlocalize segmentation JSON, map archives."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.adapters.chexpert import TO_CHEXLOCALIZE
from ..data.masks import encode_rle
from ..errors import StoreError, UnknownNameError
from ..explain import native_map
from ..metrics.localization import otsu_mask
from ..postprocess import positive
from ..store import Store
from ..store._schema import METRIC_TABLES

__all__ = ["EXPORTABLE", "export_maps", "export_segmentations", "export_table"]

EXPORTABLE = ("images", "labels", "thresholds") + METRIC_TABLES


def export_table(store: Store, name: str, out: str | Path) -> int:
    if name not in EXPORTABLE:
        raise UnknownNameError("table", name, EXPORTABLE)
    if name == "images":
        df = store.images()
    elif name == "labels":
        df = store.labels_wide().reset_index()
    elif name == "thresholds":
        models = store.models()
        # every model's thresholds (each row names its model)
        df = pd.concat([store.thresholds(m) for m in models["model_id"]], ignore_index=True) if len(models) \
            else models
    else:
        df = store.table(name)
    df.to_csv(out, index=False)
    return len(df)


def export_segmentations(store: Store, model_id: str, method: str, out: str | Path) -> int:
    """Otsu segmentations (CheXlocalize pipeline, original image size) of every stored map of
    ``method`` as ``{cxr_id: {task: {"size": [h, w], "counts": RLE}}}``, the format of
    CheXlocalize's ``*_segmentations_*.json`` (its eval scripts read it). Every image of the
    store gets every label, empty masks included, as those scripts expect."""
    index = store.map_index(model_id=model_id, method=method)
    if index.empty:
        raise StoreError(f"no {method} maps of {model_id} in the store")
    # its default, not a sweep setting
    key = store.main_map_settings(model_id, method=method).params_key.iloc[0]
    sizes = store.images(image_ids=index.image_id.unique()).set_index("image_id")[["height", "width"]]
    labels = sorted(index.label.unique())
    out_json: dict = {}
    for stored in store.iter_maps(model_id, method, key):
        h, w = (int(v) for v in sizes.loc[stored.image_id])
        # the positive part, as scoring and the explorer's contour segment it (metrics.registry.Scored)
        mask = otsu_mask(positive(native_map(stored)), (h, w))
        task = TO_CHEXLOCALIZE.get(stored.label, stored.label)
        out_json.setdefault(stored.image_id, {})[task] = {"size": [h, w], "counts": encode_rle(mask)}
    empty = {}
    for tasks in out_json.values():
        h, w = tasks[next(iter(tasks))]["size"]
        rle = empty.setdefault((h, w), encode_rle(np.zeros((h, w), bool)))
        for lab in labels:
            tasks.setdefault(TO_CHEXLOCALIZE.get(lab, lab), {"size": [h, w], "counts": rle})
    Path(out).write_text(json.dumps(out_json))
    return len(out_json)


def export_maps(store: Store, model_id: str, method: str, out: str | Path) -> int:
    """Native maps of ``method`` as an ``.npz`` (keys ``image_id|label|params``)."""
    index = store.map_index(model_id=model_id, method=method)
    if index.empty:
        raise StoreError(f"no {method} maps of {model_id} in the store")
    arrays = {}
    for key in index["params_key"].unique():
        for stored in store.iter_maps(model_id, method, key):
            arrays[f"{stored.image_id}|{stored.label}|{key}"] = native_map(stored).astype(np.float32)
    np.savez_compressed(out, **arrays)
    return len(arrays)
