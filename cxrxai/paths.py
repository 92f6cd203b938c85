"""Default locations (computed on call, never at import).

``CXRXAI_DATA_CACHE`` overrides the data cache directory (default: ``data_cache/`` at the
repository root).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["absolute", "data_cache", "demo_data_dir", "demo_model_path", "demo_store", "models_dir"]


def data_cache() -> Path:
    env = os.environ.get("CXRXAI_DATA_CACHE")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "data_cache"


def demo_store() -> Path:
    return data_cache() / "demo.duckdb"


def models_dir() -> Path:
    return data_cache() / "models"


def demo_data_dir() -> Path:
    return data_cache() / "demo"


def demo_model_path(name: str = "demo-densenet121") -> Path:
    return models_dir() / f"{name}.pt"


def absolute(path: str | os.PathLike) -> Path:
    """``path`` as an absolute, normalised path (``~`` expanded; symlinks kept as typed).

    Everything a store records (a dataset's root, a model's weights) goes through this at the
    command-line and pipeline boundary, so the store means the same files from any working
    directory. A relative path is taken relative to the current working directory.
    """
    return Path(os.path.abspath(Path(path).expanduser()))
