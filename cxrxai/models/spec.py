"""What a model is: the spec that travels with its weights (a timm-style ``PretrainedCfg``).

Every consumer — predictions, explainers, the store — reads labels, input size, normalisation
and the explained output from here, never from a global list.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ..data.io import resize_to_input
from ..errors import DataError, ModelError, UnknownNameError

if TYPE_CHECKING:
    import torch

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "OUTPUTS", "ModelSpec", "preprocess"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: Which score explainers differentiate or perturb: the raw logit (default, as Grad-CAM's
#: class score and the thesis), or the sigmoid probability.
OUTPUTS = ("logit", "probability")


@dataclass(frozen=True)
class ModelSpec:
    """Everything needed to use a classifier's outputs correctly.

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"demo-densenet121"``.
    arch : str
        Architecture key of :data:`cxrxai.models.registry.ARCHITECTURES`.
    labels : tuple of str
        Output order of the classifier head.
    input_size : int
        Square input side in pixels; images are resized to it.
    mean, std : tuple of float
        Per-channel normalisation applied after scaling grey levels to [0, 1] and
        replicating them to three channels (ImageNet statistics for torchvision models).
    explained_output : {"logit", "probability"}
        The score explainers explain (see :data:`OUTPUTS`).
    cam_layer : str
        Dotted module path of the default Grad-CAM layer.
    thresholds : dict
        Per-label decision thresholds (probability ≥ threshold is positive).
    card : dict
        Free-form model card: training data, seed, metrics, provenance.
    """

    name: str
    arch: str
    labels: tuple[str, ...]
    input_size: int = 224
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD
    explained_output: str = "logit"
    cam_layer: str = "features.norm5"
    thresholds: dict[str, float] = field(default_factory=dict)
    card: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.explained_output not in OUTPUTS:
            raise UnknownNameError("explained output", self.explained_output, OUTPUTS)
        if len(set(self.labels)) != len(self.labels) or not self.labels:
            raise ModelError(f"labels must be unique and non-empty, got {self.labels}")
        unknown = set(self.thresholds) - set(self.labels)
        if unknown:
            raise UnknownNameError("threshold label", sorted(unknown)[0], self.labels)

    def label_index(self, label: str) -> int:
        """Output index of ``label`` (raises :class:`UnknownNameError` listing the labels)."""
        try:
            return self.labels.index(label)
        except ValueError:
            raise UnknownNameError("label", label, self.labels) from None

    def with_(self, **changes) -> ModelSpec:
        return replace(self, **changes)

    def with_label_names(self, names) -> ModelSpec:
        """The same outputs, in the same order, under ``names`` (a dataset's spelling, see
        :func:`cxrxai.labels.match_labels`); thresholds follow their output, and the card keeps
        the model's own names as ``model_outputs`` (so a reload can apply ``names`` again)."""
        names = tuple(names)
        if len(names) != len(self.labels):
            raise ModelError(f"{self.name} has {len(self.labels)} outputs; got {len(names)} names: "
                             f"{list(names)}")
        if names == self.labels:
            return self
        new = dict(zip(self.labels, names))
        outputs = self.card.get("model_outputs") or list(self.labels)
        return replace(self, labels=names, thresholds={new[k]: v for k, v in self.thresholds.items()},
                       card={**self.card, "model_outputs": list(outputs)})

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ModelSpec:
        d = json.loads(text)
        for key in ("labels", "mean", "std"):
            d[key] = tuple(d[key])
        return cls(**d)


def preprocess(images: np.ndarray, spec: ModelSpec) -> torch.Tensor:
    """Grey-level images → the model's normalised input tensor.

    Parameters
    ----------
    images : (N, H, W) or (H, W) uint8 ndarray
        8-bit grey levels (0 = black). Other dtypes must already be scaled to [0, 1] floats.

    Returns
    -------
    (N, C, S, S) float32 tensor, channels_last, ``S = spec.input_size``, ``C = len(spec.mean)``.
    8-bit images of another size are resized by :func:`resize_to_input` — the very resize the
    precompute's decode cache applies, so a live map of a stored case sees the same input as the
    stored map did; float images are resized bilinearly (antialiased).
    """
    import torch  # here: the spec (read by the store, the pages, the command line) needs no torch
    import torch.nn.functional as F

    arr = np.asarray(images)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3:
        raise DataError(f"expected (N, H, W) grey images, got shape {arr.shape}")
    if arr.dtype == np.uint8:
        if arr.shape[1:] != (spec.input_size, spec.input_size):
            arr = np.stack([resize_to_input(a, spec.input_size) for a in arr])
        x = torch.from_numpy(np.ascontiguousarray(arr)).float().div_(255.0)
    elif np.issubdtype(arr.dtype, np.floating):
        if arr.size and (np.nanmin(arr) < 0 or np.nanmax(arr) > 1):
            raise DataError("float images must lie in [0, 1]; pass uint8 grey levels or scale first")
        x = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float32))
    else:
        raise DataError(f"unsupported image dtype {arr.dtype}; use uint8 or float in [0, 1]")
    x = x[:, None]
    if x.shape[-2:] != (spec.input_size, spec.input_size):
        x = F.interpolate(
            x, size=(spec.input_size,) * 2, mode="bilinear", align_corners=False, antialias=True
        )
    mean = torch.tensor(spec.mean).view(1, -1, 1, 1)
    std = torch.tensor(spec.std).view(1, -1, 1, 1)
    x = (x.expand(-1, len(spec.mean), -1, -1) - mean) / std
    return x.contiguous(memory_format=torch.channels_last)

