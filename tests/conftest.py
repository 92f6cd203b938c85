"""Shared fixtures: tiny phantom worlds, a tiny trained model and a tiny demo store.

Everything is generated here, offline and seeded; nothing reads ../shared or the network.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from cxrxai.data.phantom import PhantomConfig

# Tests use the CPU threads CI gives them and never a GPU, whatever the machine has; under
# pytest-xdist the cores are shared out between the worker processes, and a worker's share between
# it and the processes its tests start (a command, a server, a build, Ray's workers): torch's
# threads in a child waited for a core the other workers held (4 % more CPU, measured alone).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
_THREADS = max(1, min(2, os.cpu_count() or 1) // _WORKERS)
torch.set_num_threads(_THREADS)
if _WORKERS > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(_THREADS))

#: Seconds each test file took in a CI run (refreshed by tests/durations.py)
DURATIONS = json.loads((Path(__file__).with_name("durations.json")).read_text())


def _scan_components_once() -> None:
    """Streamlit scans every installed distribution's metadata for its v2 components when a server
    starts, and AppTest does so for each new AppTest (~0.1 s of CPU here; 64 AppTests in the
    published layouts' file alone): the packages installed do not change during a test run, so each
    process scans once and every AppTest gets that result, as every page of one server does."""
    from streamlit.components.v2 import manifest_scanner

    scan = functools.cache(manifest_scanner.scan_component_manifests)
    manifest_scanner.scan_component_manifests = lambda max_workers=None: list(scan(max_workers))


_scan_components_once()


def pytest_collection_modifyitems(config, items):
    """The longest test files first, each file's tests in their own order. CI's workers take whole
    files (``--dist loadfile``) in this order (``--no-loadscope-reorder``; xdist's own order, the
    files with most tests first, started the longest files last, one worker running them alone while
    the other had finished); files not yet timed come last."""
    items.sort(key=lambda item: -DURATIONS.get(item.nodeid.split("::")[0], 0.0))


TINY = PhantomConfig(size=96, n_images=64, split_fractions=(0.5, 0.25, 0.25), seed=7, min_prevalence=0.2)


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder ``build(folder)`` filled, built once for the whole run; this process's own copy.

    Under pytest-xdist each worker process would build every session fixture itself (the full tiny
    store takes two minutes at one thread): the first worker that needs one builds it under a file
    lock in the run's shared temporary folder, a worker asking meanwhile waits for it, and each
    worker works on a copy of its own (tests write to their stores, as the app's live maps do). A
    store built so names the builder's copy of the model it was built with: read it, never write there."""
    own = tmp_path_factory.mktemp(name)
    if "PYTEST_XDIST_WORKER" not in os.environ:
        build(own)
        return own
    shared = tmp_path_factory.getbasetemp().parent / f"built-{name}"
    with open(f"{shared}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (shared / ".built").exists():
            shutil.rmtree(shared, ignore_errors=True)  # a worker that failed building left a part
            shared.mkdir()
            build(shared)
            (shared / ".built").touch()
    shutil.copytree(shared, own, dirs_exist_ok=True)
    return own


@pytest.fixture(scope="session")
def tiny_config() -> PhantomConfig:
    return TINY


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory) -> Path:
    """A DenseNet-121 trained for one short epoch on the tiny cohort (weights + card)."""
    from cxrxai.models.demo_model import train_demo_model
    from cxrxai.models.train import TrainConfig

    def build(root: Path) -> None:
        train_demo_model(
            name="tiny-densenet121", config=TINY, train_config=TrainConfig(schedule=((64, 1),), batch_size=16,
                                                                          warmup_steps=2),
            input_size=64, models_dir=root / "models", data_dir=root / "phantoms",
        )

    return built_once(tmp_path_factory, "models", build) / "models" / "tiny-densenet121.pt"


@pytest.fixture(scope="session")
def tiny_full_store(tmp_path_factory, tiny_model_path) -> Path:
    """The whole demo build (maps, sweep, metrics, trust, fidelity) on the tiny cohort and model."""
    from cxrxai.pipeline import Stage, build_demo, predictions_stage, thresholds_stage
    from cxrxai.pipeline.fidelity import FidelityPlan, fidelity_stage
    from cxrxai.pipeline.lesion_geometry import geometry_stage
    from cxrxai.pipeline.maps import MapConfig, MapPlan, cam_stage, maps_stage, sweep_stage
    from cxrxai.pipeline.references import baseline_stage, reader_stage
    from cxrxai.pipeline.scoring import localization_stage
    from cxrxai.pipeline.trust import TrustPlan, trust_stage

    plan = MapPlan(maps=(MapConfig("gradientshap", {"baseline": "black", "n_samples": 2, "stdevs": 0.0, "seed": 0,
                                                    "output": "logit", "reduce": "sum"}, per_label=1),
                         MapConfig("ig", {"baseline": "black", "steps": 4, "integration": "gausslegendre",
                                          "output": "logit", "reduce": "sum"}, per_label=1),
                         MapConfig("occlusion", {"patch": 32, "stride": 16, "baseline": "black", "output": "logit"},
                                   per_label=2)),
                   sweep=((32, 32), (32, 16), (16, 16)), sweep_cases=2)
    trust_plan = TrustPlan(images=3, methods=(("gradcam", ()), ("saliency", (("reduce", "abs_sum"),))), pairs=5)
    stages = [Stage("predictions", predictions_stage), Stage("thresholds", thresholds_stage),
              Stage("cams", lambda c: cam_stage(c, plan)), Stage("maps", lambda c: maps_stage(c, plan)),
              Stage("sweep", lambda c: sweep_stage(c, plan)), Stage("localization", localization_stage),
              Stage("second reader", reader_stage), Stage("baselines", baseline_stage), Stage("geometry", geometry_stage),
              Stage("trust", lambda c: trust_stage(c, trust_plan)),
              Stage("fidelity", lambda c: fidelity_stage(c, FidelityPlan(cases=2, iterations=20, subset=64)))]
    def build(root: Path) -> None:
        build_demo(root / "full.duckdb", model_path=tiny_model_path, data_dir=tiny_model_path.parent.parent / "phantoms",
                   config=TINY, stages=stages, extra_models=[tiny_model_path])

    return built_once(tmp_path_factory, "full", build) / "full.duckdb"


@pytest.fixture(scope="session")
def tiny_store(tmp_path_factory, tiny_model_path) -> Path:
    """A complete tiny demo store (cases, model, predictions, thresholds)."""
    from cxrxai.pipeline import Stage, build_demo, predictions_stage, thresholds_stage

    def build(root: Path) -> None:
        build_demo(root / "tiny.duckdb", model_path=tiny_model_path, data_dir=tiny_model_path.parent.parent / "phantoms",
                   config=TINY, stages=[Stage("predictions", predictions_stage), Stage("thresholds", thresholds_stage)])

    return built_once(tmp_path_factory, "store", build) / "tiny.duckdb"


@pytest.fixture(scope="module")
def few_ig_steps():
    """The demo plan's Integrated Gradients at 4 steps instead of 50, for a tiny demo build whose
    tests count maps, rounds and pages, never an attribution's value (at 50 steps IG was 40 % of such
    a build's CPU). Every other setting of the demo plan stays as it is."""
    from dataclasses import replace

    from cxrxai.pipeline import demo_plan
    from cxrxai.pipeline.maps import MapPlan

    def plan() -> MapPlan:
        base = MapPlan()
        return replace(base, maps=tuple(replace(m, params={**m.params, "steps": 4}) if m.method == "ig" else m
                                        for m in base.maps))

    assert demo_plan.MapPlan is MapPlan  # the name demo_plan sizes the demo's maps from
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(demo_plan, "MapPlan", plan)
        yield


@pytest.fixture(scope="session")
def shortcut_world(tiny_config, tiny_model_path, tmp_path_factory):
    """The planted shortcut on the tiny cohort: its config, a model fine-tuned from the tiny model
    for one short epoch, and the folder holding both (``data`` for the phantoms)."""
    from cxrxai.models.train import TrainConfig
    from cxrxai.pipeline.shortcut import shortcut_config, train_shortcut_model

    config = shortcut_config(tiny_config, n_images=80)

    def build(root: Path) -> None:
        train_shortcut_model(tiny_model_path, config=config, models_dir=root / "models", data_dir=root / "data",
                             name="tiny-shortcut", input_size=64,
                             train_config=TrainConfig(schedule=((64, 1),), batch_size=16, warmup_steps=2, lr=3e-4))

    root = built_once(tmp_path_factory, "shortcut", build)
    return config, root / "models" / "tiny-shortcut.pt", root


@pytest.fixture(scope="session")
def shortcut_plan():
    """Five marked cases (3 positives, 2 negatives), Grad-CAM and a coarse occlusion."""
    from cxrxai.pipeline.shortcut import ShortcutPlan

    return ShortcutPlan(positives=3, negatives=2, methods=(("gradcam", ()), ("occlusion", (("patch", 32), ("stride", 32)))))


@pytest.fixture(scope="session")
def shortcut_store(shortcut_world, shortcut_plan, tiny_full_store, tiny_model_path, tmp_path_factory) -> Path:
    """The tiny full store with the planted-shortcut rows added (a copy)."""
    from cxrxai.models.registry import load
    from cxrxai.pipeline.shortcut import shortcut_stage
    from cxrxai.store import write_store

    config, path, root = shortcut_world

    def build(folder: Path) -> None:
        shutil.copy(tiny_full_store, folder / "store.duckdb")
        with write_store(folder / "store.duckdb") as w:
            shortcut_stage(w, {"shortcut": load(path, device="cpu"), "control": load(tiny_model_path, device="cpu")},
                           config=config, data_dir=root / "data", plan=shortcut_plan)

    return built_once(tmp_path_factory, "shortcut-store", build) / "store.duckdb"
