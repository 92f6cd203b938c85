"""Precompute orchestration: the one package that runs the compute packages against a store.

Layers (``tests/test_import_directions.py`` checks them): ``data``, ``models``, ``explain`` and
``metrics`` compute and never import this package; ``pipeline`` combines them into resumable
stages that fill a :class:`~cxrxai.store.StoreWriter`.

* :mod:`.runner` — :class:`BuildContext`, :class:`Stage`, :func:`run_stages`;
* :mod:`.predict` — predictions and thresholds;
* :mod:`.maps` — stored saliency maps (CAMs for every image × label, sampled costly explainers,
  the thesis's occlusion sweep), planned from the explainer registry;
* :mod:`.scoring` — localization, second readers, baselines and geometry against ground truth;
* :mod:`.trust` — Arun et al.'s randomization/repeatability and the thesis's fidelity curves;
* :mod:`.dataset`, :mod:`.imports`, :mod:`.demo` — the three builds (a real dataset, predictions
  made elsewhere, the phantom demo).
"""

from .dataset import ANALYSES, build_dataset, dataset_stages
from .demo import DEMO_DATASET, build_demo, demo_stages, model_evidence_stages
from .imports import import_predictions
from .predict import predictions_stage, store_thresholds, thresholds_stage
from .runner import BuildContext, ProgressFn, Stage, run_stages

__all__ = [
    "ANALYSES",
    "DEMO_DATASET",
    "BuildContext",
    "ProgressFn",
    "Stage",
    "build_dataset",
    "build_demo",
    "dataset_stages",
    "demo_stages",
    "import_predictions",
    "model_evidence_stages",
    "predictions_stage",
    "run_stages",
    "store_thresholds",
    "thresholds_stage",
]
