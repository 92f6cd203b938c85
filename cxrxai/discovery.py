"""Find the modules of a package that register something, and import only those.

A registry (explainers, localization metrics, reports, dataset adapters) is filled where each
entry is defined: a module that uses the registry's decorator or ``register`` call. Reading the
registry first imports the modules of its package whose source names that idiom (``marker``), in
module-name order, so a contributor's new module is found without being listed anywhere, and a
module that only computes (torch, Captum) is not imported to read a name. A module whose source
cannot be read (an installation without sources) is imported.

>>> import cxrxai.explain as explain
>>> "cxrxai.explain.gradcam" in discover(explain, "explainer(")
True
>>> "cxrxai.explain.cam" in discover(explain, "explainer(")
False
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from pathlib import Path
from types import ModuleType

__all__ = ["discover", "registering_modules"]


def registering_modules(package: ModuleType, marker: str) -> list[str]:
    """The dotted names of ``package``'s modules (not subpackages, not ``_private`` ones) whose
    source contains ``marker``, in name order."""
    out = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.ispkg or info.name.startswith("_"):
            continue
        name = f"{package.__name__}.{info.name}"
        origin = Path(getattr(importlib.util.find_spec(name), "origin", None) or "")
        if origin.suffix != ".py" or marker in origin.read_text(encoding="utf-8"):
            out.append(name)
    return out


def discover(package: ModuleType, marker: str) -> list[str]:
    """Import every module :func:`registering_modules` names (each once: Python caches modules);
    returns their names."""
    names = registering_modules(package, marker)
    for name in names:
        importlib.import_module(name)
    return names
