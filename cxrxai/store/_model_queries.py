"""Reads of the models and what they predicted: specs, weights' identity, predictions, thresholds,
and the prediction table every subgroup and comparison view slices."""

from __future__ import annotations

import pandas as pd

from ..errors import UnknownNameError
from ..labels import ADMISSION_FIELDS
from ..models.spec import ModelSpec
from ..models.stored import ModelIdentity
from ..models.thresholds import decision_sql
from ._roots import with_resolved_paths
from ._sql import where as _where

__all__ = ["ModelQueries"]


class ModelQueries:
    """Mixed into :class:`~cxrxai.store._queries.Queries` (uses its ``_df``, ``_arrow_df``,
    ``_rows``, ``has_table``)."""

    def models(self) -> pd.DataFrame:
        """Rows of ``models``; ``weights_path`` absolute (as :meth:`datasets`' ``root``)."""
        if not self.has_table("models"):
            return pd.DataFrame()
        found = self._df("SELECT * FROM models ORDER BY model_id")
        return with_resolved_paths(found, "weights_path", self.path)

    def model_identity(self, model_id: str) -> ModelIdentity:
        """Who model ``model_id`` is: the sha256 of its weights (column ``weights_sha256``) and
        their file."""
        models = self.models()
        found = models[models["model_id"] == model_id] if len(models) else models
        if found.empty:
            known = models.get("model_id", pd.Series()).tolist()
            raise UnknownNameError("model", model_id, known)
        sha256 = found["weights_sha256"].iloc[0]
        return ModelIdentity.of(model_id, sha256, found["weights_path"].iloc[0])

    def model_spec(self, model_id: str) -> ModelSpec:
        rows = self._rows("SELECT spec FROM models WHERE model_id = ?", [model_id])
        if not rows:
            known = self.models().get("model_id", pd.Series()).tolist()
            raise UnknownNameError("model", model_id, known)
        return ModelSpec.from_json(rows[0][0])

    def predictions(self, model_id: str, *, split: str | None = None) -> pd.DataFrame:
        where, params = _where(prefix="i.", split=split)
        where += (" AND " if where else " WHERE ") + "p.model_id = ?"
        params.append(model_id)
        return self._df(
            "SELECT p.image_id, p.label, p.logit, p.prob "
            f"FROM predictions p JOIN images i USING (image_id){where} "
            "ORDER BY p.image_id, p.label",
            params,
        )

    def predicted_image_ids(self, model_id: str) -> set[str]:
        rows = self._rows(
            "SELECT DISTINCT image_id FROM predictions WHERE model_id = ?", [model_id]
        )
        return {r[0] for r in rows}

    def predicted_labels(self, model_id: str) -> set[str]:
        """The labels ``model_id`` has predictions under."""
        rows = self._rows("SELECT DISTINCT label FROM predictions WHERE model_id = ?", [model_id])
        return {r[0] for r in rows}

    def prediction_splits(self, model_id: str) -> dict[str, int]:
        """Images with a prediction of ``model_id``, per split (a missing split reads "none")."""
        rows = self._rows(
            "SELECT coalesce(i.split, 'none'), count(*) FROM images i "
            "SEMI JOIN (SELECT image_id FROM predictions WHERE model_id = ?) p USING (image_id) "
            "GROUP BY ALL ORDER BY ALL",
            [model_id],
        )
        return {str(split): int(n) for split, n in rows}

    def thresholds(self, model_id: str) -> pd.DataFrame:
        return self._df("SELECT * FROM thresholds WHERE model_id = ? ORDER BY label", [model_id])

    def prediction_table(self, model_id: str, *, split: str | None = None) -> pd.DataFrame:
        """One row per image × label: demographics, probability, threshold, truth, decision.

        ``ground_truth`` is 1/0 or missing (unknown label); ``predicted`` is the decision rule
        (:func:`~cxrxai.models.thresholds.decision_sql`: ``prob >= threshold``, missing when the
        label has no threshold).
        """
        where, params = _where(prefix="i.", split=split)
        where += (" AND " if where else " WHERE ") + "p.model_id = ?"
        params.append(model_id)
        # race and insurance since schema v8: a store before has no such grouping
        groups = "".join(f"i.{c}, " for c in ADMISSION_FIELDS if self.images_have([c]))
        return self._arrow_df(
            f"""SELECT p.image_id, i.dataset, i.split, i.patient_id, i.sex, i.age, i.age_bin, i.view,
                       {groups}p.label, p.prob, p.logit, t.threshold, l.value AS ground_truth,
                       {decision_sql("p.prob", "t.threshold")} AS predicted
                FROM predictions p
                JOIN images i USING (image_id)
                LEFT JOIN thresholds t ON t.model_id = p.model_id AND t.label = p.label
                LEFT JOIN labels l ON l.image_id = p.image_id AND l.label = p.label
                {where} ORDER BY p.image_id, p.label""",
            params,
        )
