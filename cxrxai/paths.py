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

from .errors import PathError, UnknownNameError

__all__ = [
    "HOME_ENV",
    "PATH_KINDS",
    "absolute",
    "app_dir",
    "check_path",
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


#: What a path a user gives must be (:func:`check_path`).
PATH_KINDS = {
    "file": "an existing file to read",
    "folder": "an existing folder to read",
    "output": "a file to write, in an existing folder you can write",
    "store to read": "an existing store, built by `python -m cxrxai precompute` or `import-predictions`, "
                     "or the demo's by `python -m cxrxai demo`",
    "store to write": "a store to write (new or existing), in an existing folder you can write: the writer "
                      "keeps a lock and a staging copy beside it and publishes by renaming",
}


def check_path(path: str | os.PathLike, kind: str, *, option: str = "path") -> Path:
    """``path`` as given, once it can serve as ``kind`` (:data:`PATH_KINDS`); else a
    :class:`~cxrxai.errors.PathError` naming ``option``, the path and what is wrong: missing, not
    readable or writable, or a file where a folder is expected (and the reverse). Nothing is
    created or written: every command checks every path it was given before any work.

    Writability is asked of the system (``os.access``), as the writer will meet it: a read-only
    folder or mount refuses an ordinary user; root is refused only by a read-only mount.
    """
    if kind not in PATH_KINDS:
        raise UnknownNameError("path kind", kind, PATH_KINDS)
    path = Path(path).expanduser()
    reading = kind in ("file", "folder", "store to read")
    problem = _read_problem(path, kind) if reading else _write_problem(path, kind)
    if problem:
        raise PathError(f"{option} {path}: {problem} ({option} must be {PATH_KINDS[kind]})")
    return path


def _read_problem(path: Path, kind: str) -> str | None:
    want_dir = kind == "folder"
    if not path.exists():
        blocker = _file_above(path)
        return (f"{blocker} is a file, not a folder" if blocker
                else f"no such {'folder' if want_dir else 'file'}")
    if path.is_dir() != want_dir:
        return "a folder, where a file is expected" if path.is_dir() else "a file, where a folder is expected"
    return None if os.access(path, os.R_OK | (os.X_OK if want_dir else 0)) else "not readable by you"


def _write_problem(path: Path, kind: str) -> str | None:
    if path.is_dir():
        return "a folder, where a file is expected"
    folder = path.parent
    if not folder.is_dir():
        blocker = _file_above(path)
        if blocker:
            return f"{blocker} is a file, where a folder is expected"
        return (f"its folder {folder} does not exist; create it first (mkdir -p {folder}) or choose a path "
                "in an existing folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"its folder {folder} is not writable by you (read-only); choose a folder you can write"
    if kind == "output" and path.exists() and not os.access(path, os.W_OK):  # a store is replaced instead
        return "the file exists and is not writable by you"
    return None


def _file_above(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` when it is a file (a file where a folder is expected)."""
    for parent in path.parents:
        if parent.exists():
            return parent if not parent.is_dir() else None
    return None
