"""cxrxai — a workbench that audits chest X-ray classifiers.

Subpackages, one line each:

* ``cxrxai.data``     — cases: the phantom demo world, masks, dataset adapters
* ``cxrxai.models``   — model specs, registry, training, inference, thresholds
* ``cxrxai.metrics``  — pure metric functions
* ``cxrxai.store``    — the DuckDB store (the only place with SQL)
* ``cxrxai.pipeline`` — resumable precompute stages that fill a store
* ``cxrxai.summaries``— store-level tables the app and reports show
* ``cxrxai.cli``      — ``python -m cxrxai``

Importing cxrxai changes nothing outside it (no seeds, no warning filters, no I/O).
"""

__version__ = "0.1.0"
