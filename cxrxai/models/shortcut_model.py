"""The planted shortcut's model: a model fine-tuned where a marker goes with one finding.

The shortcut cohort is its own phantom cohort (:func:`shortcut_config`): in its training and
validation splits, images positive for :data:`SHORTCUT_LABEL` carry the marker 90 % of the time
and negatives 5 %; its test split never does, so every test case can be rendered twice, with and
without the marker, and nothing else changes (the marker draws no random numbers). The shortcut
model starts from the control (the demo's ResNet-18) and is fine-tuned on that cohort
(:func:`train_shortcut_model`); the stage that scores both is :mod:`cxrxai.pipeline.shortcut`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..data.phantom import PhantomConfig, Shortcut
from .registry import load
from .train import TrainConfig

__all__ = ["SHORTCUT_LABEL", "SHORTCUT_MODEL", "SHORTCUT_TRAIN", "shortcut_config", "train_shortcut_model"]

SHORTCUT_LABEL = "Nodule"
#: Name (weights file stem) of the demo's shortcut model.
SHORTCUT_MODEL = "demo-resnet18-shortcut"
#: Fine-tuning from the control: two epochs at the input size, a lower learning rate (about 6 min
#: on 2 CPU cores for a ResNet-18 on the 1,500-image cohort).
SHORTCUT_TRAIN = TrainConfig(arch="resnet18", schedule=((224, 2),), lr=3e-4, warmup_steps=10)


def shortcut_config(base: PhantomConfig | None = None, *, n_images: int = 1500, label: str = SHORTCUT_LABEL
                    ) -> PhantomConfig:
    """The shortcut cohort: ``base``'s look with its own seed, the marker planted with ``label``
    in the training and validation splits only."""
    base = base or PhantomConfig()
    return replace(base, n_images=n_images, seed=base.seed + 101,
                   shortcut=Shortcut(label, p_positive=0.9, p_negative=0.05, splits=("train", "val")))


def train_shortcut_model(
    control: str | Path,
    *,
    config: PhantomConfig,
    models_dir: str | Path,
    data_dir: str | Path,
    name: str = SHORTCUT_MODEL,
    train_config: TrainConfig = SHORTCUT_TRAIN,
    input_size: int | None = None,
    progress: Callable | None = None,
) -> Path:
    """Fine-tune the control model's weights on the shortcut cohort; returns the weights path."""
    from .demo_model import train_demo_model

    control_model = load(control, device="cpu")
    tc = replace(train_config, arch=control_model.spec.arch, init_from=str(Path(control).with_suffix(".pt")))
    _, path = train_demo_model(
        name=name,
        config=config,
        train_config=tc,
        models_dir=models_dir,
        data_dir=data_dir,
        input_size=input_size or control_model.spec.input_size,
        progress=progress,
    )
    return path
