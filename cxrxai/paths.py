"""Default locations (computed on call, never at import).

Everything cxrxai writes by itself — the demo store, decoded-image caches, phantom films, trained
weights — lives under one home directory, never in the working directory:

* ``CXRXAI_HOME`` when set (``CXRXAI_DATA_CACHE``, its earlier name, is still read);
* else, run from a checkout of the repository, its ``data_cache/``;
* else (an installed package), the user cache directory that :mod:`platformdirs` names for
  ``cxrxai`` (``~/.cache/cxrxai`` on Linux).

The app itself (``app.py``, ``pages/``, the Streamlit settings) and the demo's shipped weights sit
at the repository root in a checkout and under ``cxrxai/_app/`` in an installed package
(:func:`app_dir`). A model named on the command line is read where it ships (:func:`named_model`);
the demo build copies the shipped weights into the home the first time it asks for them, so weights
trained later (the planted-shortcut model) go beside them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = [
    "HOME_ENV",
    "absolute",
    "app_dir",
    "checkout",
    "data_cache",
    "demo_data_dir",
    "demo_model_path",
    "demo_store",
    "home",
    "models_dir",
    "named_model",
    "shipped_models_dir",
]

HOME_ENV = "CXRXAI_HOME"
_OLD_HOME_ENV = "CXRXAI_DATA_CACHE"
_PACKAGE = Path(__file__).resolve().parent


def checkout() -> Path | None:
    """The repository root when cxrxai runs from a checkout (``app.py`` and ``pages/`` beside the
    package), else ``None``."""
    root = _PACKAGE.parent
    return root if (root / "app.py").is_file() and (root / "pages").is_dir() else None


def app_dir() -> Path:
    """Where ``app.py`` and ``pages/`` are: the checkout, or the installed package's ``_app``."""
    return checkout() or _PACKAGE / "_app"


def home() -> Path:
    """The directory everything cxrxai writes goes under (see the module docstring)."""
    env = os.environ.get(HOME_ENV) or os.environ.get(_OLD_HOME_ENV)
    if env:
        return Path(env).expanduser().resolve()
    root = checkout()
    if root is not None:
        return root / "data_cache"
    import platformdirs

    return Path(platformdirs.user_cache_dir("cxrxai", appauthor=False))


def data_cache() -> Path:
    """The home (the name it had when it was always the checkout's ``data_cache/``)."""
    return home()


def demo_store() -> Path:
    return home() / "demo.duckdb"


def models_dir() -> Path:
    """Where weights are written and looked up (see :func:`demo_model_path`)."""
    return home() / "models"


def shipped_models_dir() -> Path:
    """The demo weights that come with cxrxai (the checkout's or the package's)."""
    return app_dir() / "data_cache" / "models"


def demo_data_dir() -> Path:
    return home() / "demo"


def demo_model_path(name: str = "demo-densenet121") -> Path:
    """``<home>/models/<name>.pt``. Shipped demo files missing from the home are copied there
    first (weights, cards, prediction caches), so every demo model sits side by side in one
    writable directory, as the demo build expects."""
    target = models_dir()
    shipped = shipped_models_dir()
    if shipped.is_dir() and shipped.resolve() != target.resolve():
        for src in sorted(shipped.glob("*")):
            if src.is_file() and not (target / src.name).is_file():
                target.mkdir(parents=True, exist_ok=True)
                tmp = target / f".{src.name}.{os.getpid()}.tmp"
                shutil.copyfile(src, tmp)
                os.replace(tmp, target / src.name)  # atomic: another process never sees half a file
    return target / f"{name}.pt"


def named_model(name: str) -> Path:
    """``NAME.pt`` for a model named by its name alone (``--model demo-densenet121``): the home's
    (weights trained or copied there) when it holds them, else the shipped weights where cxrxai is
    installed (read in place: nothing is copied), else the home's path, which does not exist."""
    for folder in (models_dir(), shipped_models_dir()):
        if (folder / f"{name}.pt").is_file():
            return folder / f"{name}.pt"
    return models_dir() / f"{name}.pt"


def absolute(path: str | os.PathLike) -> Path:
    """``path`` as an absolute, normalised path (``~`` expanded; symlinks kept as typed).

    Everything a store records (a dataset's root, a model's weights) goes through this at the
    command-line and pipeline boundary, so the store means the same files from any working
    directory. A relative path is taken relative to the current working directory.
    """
    return Path(os.path.abspath(Path(path).expanduser()))
