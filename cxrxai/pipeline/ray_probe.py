"""What a Ray worker imports cxrxai from (:meth:`~cxrxai.pipeline.ray_engine.RayEngine.probe_nodes`).

A module of its own: Ray ships a remote function by reference, so a worker imports the module that
defines it, and this one loads no model code (the engine's module imports torch: seconds per worker).
"""

from __future__ import annotations

__all__ = ["where"]


def where() -> str:
    """The file this process imports cxrxai from."""
    import cxrxai

    return cxrxai.__file__
