"""Predictions made elsewhere, stored beside a dataset's cases so every fairness analysis runs on them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..data.adapters._base import unit_interval
from ..errors import DataError
from ..labels import LabelMatch, match_labels
from ..models.spec import ModelSpec
from ..store import write_store
from .dataset import label_report, put_cases, refuse_another_root
from .predict import store_thresholds

__all__ = ["import_predictions"]


def import_predictions(store_path: str | Path, tables, predictions: pd.DataFrame, *, model_name: str,
                       id_column: str, thresholds: dict[str, float] | None = None, fresh: bool = False,
                       source: str = "predictions", thresholds_source: str = "thresholds") -> dict:
    """Store a dataset's cases with predictions made elsewhere (``prob_<label>`` columns joined
    to the dataset by image id), so every fairness analysis runs without re-running a model.

    Thresholds come from ``thresholds`` (e.g. a ``Threshold.csv``) or are chosen on the
    validation split when it has predictions and labels. A bad probability stops the import
    before anything is written (:class:`DataError` naming ``source`` and the row); predictions of
    unknown images and labels without a threshold are problem rows (file, row, image id), never
    silently dropped. Predicted labels are matched to the dataset's
    (:func:`~cxrxai.labels.match_labels`: name, case, synonym) and stored under its spelling; the
    matches go to ``label_matches``, and a label matching none is a problem row (stored, never
    compared with ground truth).
    """
    if id_column not in predictions:
        raise DataError(f"{source}: no id column {id_column!r}; columns: {list(predictions.columns)}")
    probs = [c for c in predictions.columns if c.startswith("prob_")]
    if not probs:
        raise DataError(f"{source}: the predictions need prob_<label> columns (e.g. prob_Effusion)")
    match = match_labels([c[len("prob_"):] for c in probs], tables.label_names)
    labels = match.names  # the dataset's spelling of each matched label, the file's of the others
    if thresholds:
        thresholds = {match_labels(list(thresholds), labels).rename(k): v for k, v in thresholds.items()}
    values = unit_interval(predictions, probs, source)
    ids = predictions[id_column].astype(str)
    _refuse_second_rows(ids, source)
    known = ids.isin(set(tables.images["image_id"]))
    p = values[known.to_numpy()]
    spec = ModelSpec(name=model_name, arch="imported", labels=match.outputs, thresholds={},
                     card={"source": "imported predictions", "file": source,
                           "labels_not_in_dataset": list(match.unmatched_outputs)}).with_label_names(labels)
    with np.errstate(divide="ignore"):
        logits = np.log(p) - np.log1p(-p)
    problems = [
        tables.problems.assign(stage="adapter"),
        pd.DataFrame(
            {
                "file": source,
                "row": np.flatnonzero(~known.to_numpy()) + 2,
                "image_id": ids[~known],
                "problem": "prediction for an image not in the dataset; prediction skipped",
                "stage": "import",
            }
        ),
        _unmatched_problems(match, source),
    ]
    if thresholds:
        problems.append(_threshold_problems(labels, thresholds, thresholds_source))
    with write_store(store_path, fresh=fresh) as writer:
        refuse_another_root(writer, tables)
        n_problems = put_cases(writer, tables, tables.images, tables.annotations,
                               pd.concat(problems, ignore_index=True).assign(dataset=tables.name))
        writer.put_model(spec)
        writer.put_label_matches(tables.name, model_name, match.rows())
        writer.put_predictions(
            model_name, ids[known].tolist(), labels, np.clip(logits, -50, 50).astype(np.float32), p
        )
        if thresholds:
            rows = [
                {"label": k, "threshold": float(v), "method": "imported", "criterion": None, "split": None}
                for k, v in thresholds.items()
                if k in labels
            ]
            writer.put_thresholds(model_name, rows)
            report = {"thresholds": len(rows)}
        else:
            report = {"thresholds": store_thresholds(writer, model_name, fallback={})}
    return {"images": int(known.sum()), "unknown_ids": int((~known).sum()), "labels": list(labels),
            "label_matches": label_report(match), "new_problems": n_problems, **report}


def _refuse_second_rows(ids: pd.Series, source: str) -> None:
    """An image with two rows of predictions is a :class:`DataError` naming the second row."""
    if ids.duplicated().any():
        i = int(np.flatnonzero(ids.duplicated().to_numpy())[0])
        raise DataError(f"{source}, row {i + 2}: image {ids.iloc[i]!r} has a second row of predictions "
                        "(nothing was stored)")


def _threshold_problems(labels, thresholds: dict, source: str) -> pd.DataFrame:
    """Labels without a threshold, and thresholds of labels the predictions do not have."""
    return pd.DataFrame([{"file": source, "image_id": None, "stage": "import",
                          "problem": f"no threshold for label {lab!r}; its decisions (TPR/FPR) stay missing"}
                         for lab in labels if lab not in thresholds]
                        + [{"file": source, "image_id": None, "stage": "import",
                            "problem": f"threshold for {lab!r}, which the predictions do not have; ignored"}
                           for lab in thresholds if lab not in labels])


def _unmatched_problems(match: LabelMatch, source: str) -> pd.DataFrame:
    """One problem row per predicted label that matches no dataset label (stored, never scored)."""
    return pd.DataFrame([{"file": source, "image_id": None, "stage": "import", "problem": (
        f"predictions for {lab!r}, which matches no dataset label by name, case or synonym "
        f"(labels: {', '.join(match.labels)}); stored, but never compared with ground truth")}
        for lab in match.unmatched_outputs], columns=["file", "image_id", "stage", "problem"])
