"""The one case schema every dataset adapter maps onto, and shared validation.

An adapter reads a dataset's files exactly as published and returns :class:`DatasetTables`:

* ``images`` — image_id, path (relative to ``root``), patient_id, sex ("M"/"F"/missing),
  age (years, missing allowed), age_bin, view, split, width, height (missing until read), and
  where sex, age and view came from: ``sex_source``, ``age_source``, ``view_source``
  (``csv:<file name>``, ``dicom:<Tag>``, ``derived:<rule>``; missing when the value is); ``race``
  and ``insurance`` as the source writes them, with ``race_source`` and ``insurance_source`` (only
  MIMIC's, from MIMIC-IV's admissions, so far; missing elsewhere);
* ``labels`` — long: image_id, label, value (1, 0, or missing = unknown/uncertain-ignored);
* ``annotations`` — image_id, label, reader, instance, kind (mask/box/point), x, y, w, h,
  mask_rle (COCO compressed), mask_height, mask_width;
* ``problems`` — file, row, image_id, problem: each bad row, with the reason and what was done.

Adapters only rename and derive columns. Missing demographics stay missing (never invented).
A file-level fault (missing file or column) raises :class:`DataError` naming the file; a bad
row is recorded in ``problems`` and only what is wrong is left out (a path escaping the root or
an unknown label drops the image; a box outside the image drops the box; an absurd age becomes
missing), so a precompute reports it instead of aborting — ``strict=True`` raises on the first
one instead.

This module holds the schema (:class:`DatasetTables`, its columns); what adapters share to fill it
lives beside it and is importable from here too: the problem ledger (:mod:`._problems`), CSV
reading (:mod:`._csv`), demographic columns (:mod:`._demographics`), label values
(:mod:`._label_values`) and which films are kept and split how (:mod:`._selection`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ...errors import DataError
from ...paths import absolute
from ._boxes import clip_boxes
from ._csv import read_csv, require, sniff_delimiter, unit_interval
from ._demographics import (
    clean_age,
    clean_sex,
    sourced,
    study_years,
    with_age_bins,
    with_sources,
)
from ._label_values import UNCERTAIN_POLICIES, chexpert_values, long_labels
from ._problems import Problems
from ._selection import escaping, keep_views, name_list, patient_split

__all__ = [
    "ANNOTATION_COLUMNS",
    "IMAGE_COLUMNS",
    "DatasetTables",
    "Problems",
    "clean_age",
    "clip_boxes",
    "clean_sex",
    "escaping",
    "keep_views",
    "UNCERTAIN_POLICIES",
    "chexpert_values",
    "long_labels",
    "name_list",
    "patient_split",
    "read_csv",
    "require",
    "sourced",
    "study_years",
    "sniff_delimiter",
    "unit_interval",
    "with_age_bins",
    "with_sources",
]

IMAGE_COLUMNS = ["image_id", "path", "patient_id", "sex", "age", "age_bin", "view", "split", "width",
                 "height", "sex_source", "age_source", "view_source", "race", "insurance", "race_source",
                 "insurance_source"]
ANNOTATION_COLUMNS = ["image_id", "label", "reader", "instance", "kind", "x", "y", "w", "h", "mask_rle",
                      "mask_height", "mask_width"]


@dataclass
class DatasetTables:
    name: str
    source: str
    root: Path
    label_names: list[str]
    images: pd.DataFrame
    labels: pd.DataFrame
    annotations: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=ANNOTATION_COLUMNS)
    )
    problems: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["file", "row", "image_id", "problem"])
    )
    description: str = ""
    config: dict = field(default_factory=dict)

    def __post_init__(self):
        # what a store records: the same folder from any working directory
        self.root = absolute(self.root)
        self.images = self.images.reindex(columns=IMAGE_COLUMNS)
        self.annotations = self.annotations.reindex(columns=ANNOTATION_COLUMNS)
        dup = self.images["image_id"].duplicated()
        if dup.any():
            raise DataError(
                f"{self.name}: duplicate image ids, e.g. {self.images['image_id'][dup].iloc[0]!r}"
            )
