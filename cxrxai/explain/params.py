"""Parameters and choices several explainers share, declared once (each method module adds its
own). No torch here: the registry is read (the app's pages, the live worker) without the computations."""

from __future__ import annotations

from ..models.spec import OUTPUTS
from .registry import Param

__all__ = [
    "BASELINE",
    "BASELINES",
    "CHANNEL_REDUCTIONS",
    "ENGINES",
    "INTERNAL_BATCH",
    "LAYER",
    "NOISE",
    "NT_TYPES",
    "OUTPUT",
    "PARTIAL",
    "PRECISIONS",
    "REDUCE",
    "RELU",
    "SEED",
    "STEPS",
    "batches",
]

BASELINES = ("black", "zero", "white", "mean")
CHANNEL_REDUCTIONS = ("sum", "abs_sum", "mean", "max_abs")
NT_TYPES = ("smoothgrad", "smoothgrad_sq", "vargrad")
#: Occlusion's autocast precisions (bf16/fp16 approximate).
PRECISIONS = ("fp32", "bf16", "fp16")
#: "batched" re-runs the whole network per occluded copy; "incremental" recomputes only the
#: changed regions of DenseNet's first blocks (exact; CPU fp32 only); "auto" picks.
ENGINES = ("auto", "batched", "incremental")
#: The stage of a partial map yielded while a pass computes (not a pass's end).
PARTIAL = "partial"

OUTPUT = Param(
    "output", "logit", str, "explain the logit (the papers) or the sigmoid probability", choices=OUTPUTS
)
REDUCE = Param(
    "reduce", "sum", str, "how colour channels are reduced to one map", choices=CHANNEL_REDUCTIONS
)
BASELINE = Param(
    "baseline",
    "black",
    object,
    "reference image: grey level 0 (the papers'), white, zero or a tensor",
    choices=BASELINES,
)
LAYER = Param(
    "layer", None, object, "CAM layer (dotted name or module); default the model card's cam_layer"
)
RELU = Param("relu", False, bool, "apply ReLU to the CAM (Grad-CAM's original definition)")
SEED = Param("seed", 0, int, "random seed of the sampled noise or baselines", range=(0, 2**31 - 1))
NOISE = (
    Param("noise_level", 0.15, float, "noise σ as a fraction of the input's range", range=(0.0, 10.0)),
    Param("nt_type", "smoothgrad", str, "noise tunnel aggregation", choices=NT_TYPES),
)
STEPS = Param(
    "steps",
    50,
    int,
    "integration steps along the path",
    range=(1, 10_000),
    control=(8, 16, 25, 50, 100),
    label="Integration steps",
)
INTERNAL_BATCH = Param(
    "internal_batch_size", 16, int, "path points per forward", range=(1, 4096), runtime=True
)


def batches(params: dict) -> int:
    """Forward passes of one integrated-gradients path: ``steps`` points, ``internal_batch_size`` at
    a time."""
    return -(-int(params["steps"]) // int(params.get("internal_batch_size") or params["steps"]))
