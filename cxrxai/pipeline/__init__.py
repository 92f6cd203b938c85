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
* :mod:`.stages` — the stage registry (each stage registered where it is defined);
  :mod:`.plan` — :class:`BuildPlan`, a build's ordered stage names and every choice, given once;
* :mod:`.dataset`, :mod:`.imports`, :mod:`.demo` — the three builds (a real dataset, predictions
  made elsewhere, the phantom demo); :mod:`.launch` — a precompute with its engine and status file.
"""

from .dataset import build_dataset, dataset_plan, dataset_stages
from .demo import DEMO_DATASET, build_demo, demo_stages, model_evidence_stages
from .imports import import_predictions
from .plan import BuildPlan
from .predict import predictions_stage, store_thresholds, thresholds_stage
from .runner import BuildContext, ProgressFn, Stage, run_stages
from .stages import analysis_names, get_stage, register_stage, stage, stage_names, unregister_stage

__all__ = [
    "DEMO_DATASET",
    "BuildContext",
    "BuildPlan",
    "ProgressFn",
    "Stage",
    "analysis_names",
    "build_dataset",
    "build_demo",
    "dataset_plan",
    "dataset_stages",
    "get_stage",
    "demo_stages",
    "import_predictions",
    "model_evidence_stages",
    "predictions_stage",
    "register_stage",
    "run_stages",
    "stage",
    "stage_names",
    "store_thresholds",
    "thresholds_stage",
    "unregister_stage",
]
