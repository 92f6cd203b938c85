"""The dataset adapter registry: each adapter registers where it is defined, with :func:`adapter`
on its ``load_<name>(root, **options) -> DatasetTables`` function, naming the kind users pass
(``--dataset NAME``) and how a user supplies the sex, age and view its files leave missing (the
hint a missing-demographics message prints). :mod:`cxrxai.data.adapters` imports every module of
its package that uses ``@adapter(`` (:func:`cxrxai.discovery.discover`): a new adapter is one module.
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import DataError

__all__ = ["ADAPTERS", "DEMOGRAPHICS_HINTS", "adapter", "unregister_adapter"]

#: The registered adapters: kind → its load function.
ADAPTERS: dict[str, Callable] = {}
#: Per adapter, how a user supplies sex, age and view it could not find.
DEMOGRAPHICS_HINTS: dict[str, str] = {}


def adapter(name: str, *, hint: str):
    """Register the decorated load function as dataset kind ``name``, with its demographics
    ``hint``; the function is returned unchanged. A name taken by another function is an error."""

    def register(load: Callable) -> Callable:
        taken = ADAPTERS.get(name)
        if taken is not None and taken is not load:
            raise DataError(f"a dataset adapter named {name!r} is already registered "
                            f"({taken.__module__}.{taken.__qualname__}); choose another name")
        ADAPTERS[name], DEMOGRAPHICS_HINTS[name] = load, hint
        return load

    return register


def unregister_adapter(name: str) -> None:
    """Remove adapter ``name`` (a test's toy); an unknown name is ignored."""
    ADAPTERS.pop(name, None)
    DEMOGRAPHICS_HINTS.pop(name, None)
