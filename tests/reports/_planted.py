"""A store with planted differences between groups and between two models, built as the store's
writer builds any dataset (images, labels, two models' predictions and thresholds): the numbers the
comparison reports and the dossier must find, or must not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from cxrxai.labels import age_bin
from cxrxai.models.spec import ModelSpec
from cxrxai.store import write_store

LABELS = ("Effusion", "Nodule")
AGES = (30, 50, 70)  # bins 20-40, 40-60, 60-80


def _logits(rng, truth: np.ndarray, tpr: np.ndarray, fpr: float) -> np.ndarray:
    """Logits whose decisions at 0 (prob 0.5) hit a TPR per case exactly, in expectation the FPR."""
    hit = np.zeros(len(truth), bool)
    for rate in np.unique(tpr):
        idx = np.flatnonzero((truth == 1) & (tpr == rate))
        hit[idx[: int(round(rate * len(idx)))]] = True
    false_alarm = (truth == 0) & (rng.random(len(truth)) < fpr)
    up = hit | false_alarm
    return np.where(
        up, rng.normal(1.5, 0.6, len(truth)).clip(0.05), -rng.normal(1.5, 0.6, len(truth)).clip(0.05)
    )


def planted_store(
    path: Path,
    *,
    positives: int = 300,
    gap: float = 0.2,
    noise: tuple | None = None,
    seed: int = 0,
    demographics: bool = True,
) -> Path:
    """``positives`` positives and as many negatives per finding, half of each female; model ``old``
    has TPR 0.8 for men and 0.8 − ``gap`` for women on Effusion (0.8 for both on Nodule), FPR ≈ 0.1;
    model ``new`` is ``old`` with N(0, sd) added to the logits of the images where ``column == value``
    (``noise = (column, value, sd)``; none: ``new`` equals ``old``)."""
    rng = np.random.default_rng(seed)
    n = 2 * positives
    ids = [f"p{i:05d}" for i in range(n)]
    sex = np.array(["F", "M"])[np.arange(n) % 2]
    age = np.array(AGES)[(np.arange(n) // 2) % len(AGES)]
    images = pd.DataFrame(
        {
            "image_id": ids,
            "dataset": "planted",
            "split": "test",
            "patient_id": ids,
            "sex": sex if demographics else None,
            "age": age if demographics else None,
            "age_bin": [age_bin(a) for a in age] if demographics else None,
        }
    )
    logits, truths = [], []
    for k, _ in enumerate(LABELS):
        truth = np.zeros(n, int)
        for s in ("F", "M"):  # exactly half of the positives (and of the negatives) of each sex
            idx = rng.permutation(np.flatnonzero(sex == s))
            truth[idx[: positives // 2]] = 1
        tpr = np.where((sex == "F") & (k == 0), 0.8 - gap, 0.8)
        logits.append(_logits(rng, truth, tpr, 0.1))
        truths.append(truth)
    old = np.stack(logits, axis=1)
    new = old.copy()
    if noise is not None:
        column, value, sd = noise
        where = images[column].to_numpy() == value
        new[where] += rng.normal(0, sd, (int(where.sum()), len(LABELS)))
    labels = pd.DataFrame(
        {
            "image_id": np.repeat(ids, len(LABELS)),
            "label": np.tile(LABELS, n),
            "value": np.stack(truths, axis=1).ravel(),
        }
    )
    with write_store(path) as w:
        w.put_dataset("planted", source="folder", labels=list(LABELS))
        w.put_images(images)
        w.put_labels(labels)
        for name, z in (("old", old), ("new", new)):
            w.put_model(ModelSpec(name=name, arch="densenet121", labels=LABELS, thresholds={}))
            w.put_predictions(name, ids, LABELS, z, 1 / (1 + np.exp(-z)))
            w.put_thresholds(
                name,
                [
                    {"label": lab, "threshold": 0.5, "method": "fixed", "criterion": None, "split": None}
                    for lab in LABELS
                ],
            )
    return path
