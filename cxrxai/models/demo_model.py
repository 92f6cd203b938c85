"""The demo model: a DenseNet-121 (or another architecture) trained from scratch on the phantoms.

:func:`train_demo_model` trains on the phantom training split, picks per-label thresholds on
the validation split (F1-maximising; Youden's J recorded as the alternative), measures test
AUROC per label with bootstrap 95 % CIs, and saves weights (fp16) plus the model card.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch

from ..data.demo import GENERATOR_VERSION, cache_key, label_matrix, load_demo
from ..data.phantom import PhantomConfig
from ..labels import DEMO_LABELS
from ..metrics.classification import auroc_ci
from .inference import predict_logits, sigmoid
from .registry import ARCHITECTURES, LoadedModel, save
from .spec import ModelSpec
from .thresholds import choose_threshold
from .train import Progress, TrainConfig, train

__all__ = ["DEMO_MODEL", "choose_thresholds", "train_demo_model"]

#: Name (and file stem under ``data_cache/models/``) of the default demo model.
DEMO_MODEL = "demo-densenet121"


def choose_thresholds(
    y: np.ndarray, probs: np.ndarray, labels, *, method: str = "f1"
) -> dict[str, tuple[float, float]]:
    """``{label: (threshold, criterion)}`` per column of a validation matrix.

    Labels whose validation column lacks positives or negatives get no threshold (left out).
    """
    out = {}
    for j, lab in enumerate(labels):
        if 0 < y[:, j].sum() < len(y):
            out[lab] = choose_threshold(y[:, j], probs[:, j], method=method)
    return out


def _test_aurocs(y: np.ndarray, p: np.ndarray) -> dict:
    """Per-label test AUROC with its 95 % bootstrap interval and number of positives (the model card's)."""
    out = {}
    for j, lab in enumerate(DEMO_LABELS):
        point, lo, hi = auroc_ci(y[:, j], p[:, j])
        out[lab] = {
            "auroc": round(point, 4),
            "ci95": [round(lo, 4), round(hi, 4)],
            "n_positive": int(y[:, j].sum()),
        }
    return out


def train_demo_model(*, name: str = DEMO_MODEL, config: PhantomConfig | None = None,
                     train_config: TrainConfig | None = None, input_size: int | None = None,
                     models_dir: str | Path, data_dir: str | Path,
                     progress: Callable[[Progress], None] | None = None,
                     render_progress: Callable[[int, int], None] | None = None) -> tuple[LoadedModel, Path]:
    """Train, threshold, evaluate and save a demo model; returns it and its weights path."""
    config = config or PhantomConfig()
    train_config = train_config or TrainConfig()
    size = input_size or config.size
    started = time.monotonic()
    data = load_demo(config, data_dir, progress=render_progress)
    y = label_matrix(data.specs)
    tr, va, te = (data.split_index(s) for s in ("train", "val", "test"))
    spec = ModelSpec(name=name, arch=train_config.arch, labels=DEMO_LABELS, input_size=size,
                     cam_layer=ARCHITECTURES[train_config.arch][1])
    model, history = train(data.images, y, tr, va, spec, train_config, progress=progress)
    # Evaluate exactly what ships: weights rounded to fp16 (see registry.save).
    state = model.module.state_dict()
    model.module.load_state_dict(
        {k: v.half().float() if v.is_floating_point() else v for k, v in state.items()}
    )
    p_val = sigmoid(predict_logits(model, data.images[va]))
    p_test = sigmoid(predict_logits(model, data.images[te]))
    f1 = choose_thresholds(y[va], p_val, DEMO_LABELS, method="f1")
    youden = choose_thresholds(y[va], p_val, DEMO_LABELS, method="youden")
    test_auroc = _test_aurocs(y[te], p_test)
    findings_mean = float(np.mean([test_auroc[lab]["auroc"] for lab in DEMO_LABELS[:8]]))
    card = {
        "description": f"{train_config.arch} trained from scratch on cxrxai phantom chest radiographs "
        "(demo only; not for clinical use)",
        "training_data": {
            "generator": "cxrxai.data.phantom",
            "generator_version": GENERATOR_VERSION,
            "phantom_config": config.to_json(),
            "cohort_key": cache_key(config),
            "n_train": len(tr),
            "n_val": len(va),
            "n_test": len(te),
        },
        "normalization": "grey levels / 255, replicated to 3 channels, ImageNet mean/std",
        "explained_output": "logit (pre-sigmoid score of the label; pass target='probability' to explain "
        "the sigmoid)",
        "seed": train_config.seed,
        "train_config": train_config.to_dict(),
        "history": history,
        "threshold_method": "f1 (max F1 on validation, prob >= threshold)",
        "labels_without_threshold": [lab for lab in DEMO_LABELS if lab not in f1],
        "thresholds_youden": {k: round(v[0], 6) for k, v in youden.items()},
        "test_auroc": test_auroc,
        "test_mean_auroc_findings": round(findings_mean, 4),
        "trained_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_minutes": round((time.monotonic() - started) / 60, 1),
        "device": f"{model.device.type} ({platform.processor() or platform.machine()}, "
        f"{torch.get_num_threads()} threads)",
        "torch": torch.__version__,
    }
    spec = spec.with_(thresholds={k: round(v[0], 6) for k, v in f1.items()}, card=card)
    model.spec = spec
    path = save(model.module, spec, Path(models_dir) / name)
    return model, path
