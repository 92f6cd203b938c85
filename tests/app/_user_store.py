"""A user's own store, not the demo: a folder dataset of 12 films (600 × 520 px) with boxes, one
model's predictions and thresholds, Grad-CAM maps, IG and GradientSHAP scored without stored maps,
and an occlusion sweep interrupted after its first settings — written through the store's writer
as a build writes any dataset (issue 42).

Planted: every Nodule positive of the women (2) is missed (TPR 0, a group with cases), the men's
are found; the sweep planned 5 cases at 32/16, 16/8 and 8/8 and stored 5, 1 and none.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from cxrxai.explain.settings import Setting
from cxrxai.models.spec import ModelSpec
from cxrxai.store import params_key, write_store

MODEL, LABELS = "user-densenet121", ("Effusion", "Nodule")
IDS = [f"film{i:02d}" for i in range(12)]
SEX = ["F", "M"] * 6
#: (image, label) positives; the women's Nodule positives (film00, film02) are missed.
POSITIVE = {(i, "Nodule") for i in IDS[:4]} | {(i, "Effusion") for i in IDS[4:10]}
MISSED = {("film00", "Nodule"), ("film02", "Nodule"), ("film04", "Effusion")}
SWEEP_PLAN = {"cases": 5, "settings": [[32, 16], [16, 8], [8, 8]]}
SWEEP_STORED = {(32, 16): 5, (16, 8): 1, (8, 8): 0}
SCORED_ONLY = ("ig", "gradientshap")  # localization rows, maps not stored


def _spec() -> ModelSpec:
    return ModelSpec(name=MODEL, arch="densenet121", labels=LABELS, thresholds={})


def _cases(w, root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for k, i in enumerate(IDS):  # the films themselves: the explorer opens them
        Image.fromarray(np.full((520, 600), 40 + 10 * k, np.uint8)).save(root / f"{i}.png")
    w.put_dataset("myfilms", source="folder", labels=list(LABELS), root=str(root))
    w.put_images(pd.DataFrame({"image_id": IDS, "dataset": "myfilms", "path": [f"{i}.png" for i in IDS],
                               "patient_id": IDS, "sex": SEX, "age": [35.0, 55.0, 75.0] * 4,
                               "age_bin": ["20-40", "40-60", "60-80"] * 4, "split": "test",
                               "width": 600, "height": 520}))
    w.put_labels(pd.DataFrame([{"image_id": i, "label": lab, "value": int((i, lab) in POSITIVE)}
                               for i in IDS for lab in LABELS]))
    w.put_annotations(pd.DataFrame([{"image_id": i, "label": lab, "reader": "gt", "instance": 0,
                                     "kind": "box", "x": 120.0, "y": 100.0, "w": 200.0, "h": 160.0}
                                    for i, lab in POSITIVE]))


def _predictions(w, missed) -> None:
    w.put_model(_spec())
    probs = np.array([[0.8 if (i, lab) in POSITIVE and (i, lab) not in missed else 0.2 for lab in LABELS]
                      for i in IDS], np.float32)
    w.put_predictions(MODEL, IDS, LABELS, np.log(probs / (1 - probs)), probs)
    w.put_thresholds(MODEL, [{"label": lab, "threshold": 0.5, "method": "fixed", "criterion": None,
                              "split": None} for lab in LABELS])


def _scored(method: str, key: str, pairs: list[tuple[str, str]], missed=MISSED) -> pd.DataFrame:
    return pd.DataFrame({"model_id": MODEL, "image_id": [i for i, _ in pairs],
                         "label": [lab for _, lab in pairs],
                         "source": "explainer", "method": method, "params_key": key, "reader": "gt",
                         "gt_positive": True, "predicted": [(i, lab) not in missed for i, lab in pairs],
                         "iou": 0.4, "hit": 1.0, "pla": 1.0, "roc_auc": 0.8})


def _maps(w, missed) -> None:
    pairs = sorted(POSITIVE)
    w.put_maps([{"model_id": MODEL, "image_id": i, "label": lab, "method": "gradcam", "params": {},
                 "target": lab, "kind": "cam", "values": np.ones((7, 7)), "seconds": 0.1, "device": "cpu"}
                for i, lab in pairs])
    w.put_table("localization", _scored("gradcam", params_key({}), pairs, missed))
    for method in SCORED_ONLY:
        w.put_table("localization", _scored(method, params_key({"steps": 8}), pairs, missed))
    w.set_meta(f"sweep_plan:{MODEL}", json.dumps(SWEEP_PLAN))
    for (patch, stride), n in SWEEP_STORED.items():
        setting = Setting.of("occlusion", {"patch": patch, "stride": stride}, spec=_spec())
        done = pairs[:n]
        w.put_maps([{"model_id": MODEL, "image_id": i, "label": lab, "method": "occlusion",
                     "params": json.loads(setting.key), "target": lab, "kind": "occlusion",
                     "values": np.ones((4, 4)), "seconds": 2.0, "device": "cpu"} for i, lab in done])
        if done:
            w.put_table("localization", _scored("occlusion", params_key(json.loads(setting.key)), done,
                                                missed))


def user_store(path: Path, *, missed=MISSED) -> Path:
    """The store described above, written at ``path`` (its films in ``myfilms/`` beside it);
    ``missed``: the positives the model misses."""
    with write_store(path) as w:
        _cases(w, path.parent / "myfilms")
        _predictions(w, missed)
        _maps(w, missed)
    return path


def _checkpoint(folder: Path) -> str:
    """A ResNet-18 saved the torchvision way with this dataset's labels (a user's own checkpoint)."""
    import torch
    import torchvision

    torch.manual_seed(0)
    torch.save(torchvision.models.resnet18(num_classes=len(LABELS)).state_dict(), folder / "net.pt")
    (folder / "net.labels.json").write_text(json.dumps(list(LABELS)))
    return f"resnet18:{folder / 'net.pt'}:{folder / 'net.labels.json'}"


def precompute_args(folder: Path) -> list[str]:
    """What a user gives ``precompute`` for this dataset (``--model ...`` in a hint stands for it):
    the folder of films with its cases and boxes CSVs, the checkpoint, 2 cases per analysis."""
    films = folder / "myfilms"
    return ["--dataset", "folder", "--root", str(films), "--data-option", f"csv={films / 'cases.csv'}",
            "--data-option", f"labels={','.join(LABELS)}", "--data-option",
            f"boxes_csv={films / 'boxes.csv'}", "--model", _checkpoint(folder), "--input-size", "64",
            "--store", str(folder / "precomputed.duckdb"), "--cases", "2"]


def precomputed_user_store(folder: Path) -> Path:
    """The same films and boxes read by ``precompute`` from a folder + CSV (test split only: no
    training-split box, no second reader), Grad-CAM maps of a user's ResNet-18, and nothing else."""
    from cxrxai.cli import main

    films = folder / "myfilms"
    films.mkdir(parents=True, exist_ok=True)
    for k, i in enumerate(IDS):
        Image.fromarray(np.full((52, 60), 40 + 10 * k, np.uint8)).save(films / f"{i}.png")
    pd.DataFrame({"path": [f"{i}.png" for i in IDS], "sex": SEX, "age": [35, 55, 75] * 4, "split": "test",
                  **{lab: [int((i, lab) in POSITIVE) for i in IDS] for lab in LABELS}}
                 ).to_csv(films / "cases.csv", index=False)
    pd.DataFrame([{"path": f"{i}.png", "label": lab, "x": 12, "y": 10, "w": 20, "h": 16}
                  for i, lab in sorted(POSITIVE)]).to_csv(films / "boxes.csv", index=False)
    if main(["precompute", *precompute_args(folder), "--explainers", "gradcam"]) != 0:
        raise RuntimeError("precompute failed on the user's folder")
    return folder / "precomputed.duckdb"
