"""Precompute orchestration: the one package that runs the compute packages against a store.

Layers (``tests/test_import_directions.py`` checks them): ``data``, ``models``, ``explain`` and
``metrics`` compute and never import this package; ``pipeline`` combines them into resumable
stages that fill a :class:`~cxrxai.store.StoreWriter`.

* :mod:`.runner` — :class:`BuildContext`, :class:`Stage`, :func:`run_stages`;
* :mod:`.predict` — predictions and thresholds;
* :mod:`.maps` — stored saliency maps (CAMs for every image × label, sampled costly explainers,
  the thesis's occlusion sweep), planned from the explainer registry;
* :mod:`.truth` — each case's ground-truth masks at its image's size, read by the stages below;
* :mod:`.scoring` — every stored map scored against ground truth (the localization table);
* :mod:`.references` — what the maps are measured against: baselines and second readers;
* :mod:`.lesion_geometry` — instances, size and shape of every ground-truth mask;
* :mod:`.trust` — Arun et al.'s randomization/repeatability; :mod:`.fidelity` — the thesis's fidelity curves;
* :mod:`.stages` — the stage registry (each stage registered where it is defined);
  :mod:`.plan` — :class:`BuildPlan`, a build's ordered stage names and every choice, given once;
* :mod:`.dataset`, :mod:`.imports`, :mod:`.demo` — the three builds (a real dataset, predictions
  made elsewhere, the phantom demo; its cases in :mod:`.demo_cases`, its rounds and stage lists in
  :mod:`.demo_plan`); :mod:`.launch` — a precompute with its engine and status file.
"""

from importlib import import_module

#: Each name this package exports → the module that defines it, imported at first use: a process
#: that needs one module (the background build's supervisor, a status read) does not import the
#: models, the explainers and every stage with it (``stages`` imports every module before a
#: registry lookup, so a stage is never missed).
_EXPORTS = {
    "build_dataset": "dataset", "dataset_plan": "dataset", "dataset_stages": "dataset",
    "DEMO_DATASET": "demo", "build_demo": "demo", "demo_stages": "demo", "model_evidence_stages": "demo",
    "import_predictions": "imports",
    "BuildPlan": "plan",
    "predictions_stage": "predict", "store_thresholds": "predict", "thresholds_stage": "predict",
    "BuildContext": "runner", "ProgressFn": "runner", "Stage": "runner", "run_stages": "runner",
    "analysis_names": "stages", "get_stage": "stages", "register_stage": "stages", "stage": "stages",
    "stage_names": "stages", "unregister_stage": "stages",
}

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


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(import_module(f".{module}", __name__), name)
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
