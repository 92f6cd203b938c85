"""The data audit: what cxrxai did to each dataset of a store, the one place a user learns it.

Per dataset, in reading order (:attr:`DatasetAudit.sections`, each a :class:`Section` with
sentences, a table and, when there is nothing to show, why and how to fill it):

``films``          films read and skipped, the adapter's and reader's problem rows by reason
``film_notes``     bit depth and rescaling: images per film-reader note (none: read as is)
``orientation``    films turned by their EXIF orientation
``demographics``   % of images with sex, age, view (race, insurance: schema v8 on), and where each
                   value came from; the race and insurance values the paper's groups put in Other
``label_matches``  which model output scores which dataset label (exact, alias, case, unmatched)
``splits``         images per split, not decoded, and predicted per model
``problem_kinds``  problem rows per stage, reason and action
``problems``       every problem row, with its reason and action

Usage::

    from cxrxai.audit import audit_store, to_text
    text = to_text(audit_store(open_store("data_cache/nih.duckdb")))   # what `audit-data` prints

Stores older than schema v5 are read as they are: the sections that need the v5 columns say so.
"""

from ._assemble import DatasetAudit, StoreAudit, audit_store, list_command
from ._reasons import KNOWN_REASONS, action, reason
from ._render import to_frame, to_records, to_text
from ._sections import AS_IS, Section, share

__all__ = ["AS_IS", "KNOWN_REASONS", "DatasetAudit", "Section", "StoreAudit", "action", "audit_store",
           "list_command", "reason", "share", "to_frame", "to_records", "to_text"]
