"""A dataset's label cells as the case schema's long label table of 1 / 0 / missing, with the
CheXpert labeler's uncertain (−1) read by a named policy."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import UnknownNameError

__all__ = ["UNCERTAIN_POLICIES", "chexpert_values", "long_labels"]

#: What a CheXpert-labeler "uncertain" (−1) becomes: missing (``ignore``), negative or positive.
UNCERTAIN_POLICIES = ("ignore", "zeros", "ones")


def chexpert_values(values: pd.DataFrame, uncertain: str) -> pd.DataFrame:
    """Labels of the CheXpert labeler (CheXpert's CSVs, MIMIC-CXR's chexpert and negbio files):
    1 positive, 0 negative, −1 uncertain, blank not mentioned. Blanks become negatives (as
    CheXpert's and the Underdiagnosis paper's code read them); −1 follows ``uncertain``, one of
    :data:`UNCERTAIN_POLICIES` (``ignore`` → missing, ``zeros`` → 0, ``ones`` → 1).

    >>> chexpert_values(pd.DataFrame({"Edema": [1.0, 0.0, -1.0, None]}), "ignore").Edema.tolist()
    [1.0, 0.0, nan, 0.0]
    """
    if uncertain not in UNCERTAIN_POLICIES:
        raise UnknownNameError("uncertain-label policy", uncertain, UNCERTAIN_POLICIES)
    out = values.astype(float).fillna(0.0)
    return out.replace(-1.0, {"ignore": np.nan, "zeros": 0.0, "ones": 1.0}[uncertain])


def long_labels(ids, matrix: np.ndarray, names) -> pd.DataFrame:
    """Long label table from an (N, K) matrix of 1 / 0 / NaN."""
    ids = np.asarray(ids, dtype=object)
    values = pd.array(np.asarray(matrix, float).ravel(), dtype="Float64")
    return pd.DataFrame({
        "image_id": np.repeat(ids, len(names)),
        "label": np.tile(np.asarray(names, dtype=object), len(ids)),
        "value": values.round().astype("Int8"),
    })
