"""Typed errors, one per layer, each saying what was received and what is allowed.

Pages and the CLI catch :class:`CxrxaiError` (or a subclass) and show its message with a remedy;
nothing in the library raises a bare ``Exception`` or validates with ``assert``.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "Cancelled",
    "CxrxaiError",
    "DataError",
    "EvidenceSnapshotError",
    "ExplainerError",
    "MetricError",
    "ModelError",
    "ModelIdentityError",
    "PathError",
    "StageError",
    "SchemaVersionError",
    "StoreError",
    "UnknownNameError",
    "allowed",
    "shown",
]


class CxrxaiError(Exception):
    """Base class of every error the library raises on purpose."""


class DataError(CxrxaiError, ValueError):
    """Bad dataset input: a missing column, an image of the wrong size, an unknown label..."""


class ModelError(CxrxaiError, ValueError):
    """A model cannot be built or loaded (unknown architecture, missing weights file...)."""


class ModelIdentityError(ModelError):
    """A store holds a model of this name read from other weights (``stored`` and ``given``: the
    two files' sha256; ``stored`` is None where the store never recorded it)."""

    def __init__(self, message: str, *, stored: str | None, given: str):
        super().__init__(message)
        self.stored, self.given = stored, given


class PathError(CxrxaiError, ValueError):
    """A path a user gave cannot serve as asked: missing, not writable, or a file where a folder is
    expected (and the reverse). Raised before any work (:func:`cxrxai.paths.check_path`)."""


class StoreError(CxrxaiError):
    """The DuckDB store cannot be opened, read or written as asked."""


class SchemaVersionError(StoreError):
    """The store was written by a newer (or unknown) schema than this code understands."""


class EvidenceSnapshotError(StoreError):
    """A shipped evidence snapshot does not belong to these weights, schema or phantoms (or is unreadable)."""


class ExplainerError(CxrxaiError, ValueError):
    """An explainer was asked for something impossible (unknown method, bad window...)."""


class Cancelled(ExplainerError):
    """Raised when a caller's ``cancel()`` returned True mid-computation (a live map, a build)."""


class MetricError(CxrxaiError, ValueError):
    """A metric got input it cannot score (shape mismatch, non-binary mask, NaN map...)."""


class StageError(CxrxaiError, ValueError):
    """A build stage cannot be registered as asked (a name or analysis name another stage holds)."""


class UnknownNameError(CxrxaiError, KeyError, ValueError):
    """A name (label, method, dataset, model) is not one of the allowed names.

    Subclasses ``KeyError`` and ``ValueError`` so callers that look names up in a mapping
    or validate arguments can catch it the way they expect.
    """

    def __init__(self, kind: str, name: object, choices: Iterable[object]):
        self.kind, self.name, self.choices = kind, name, list(choices)
        super().__init__(f"unknown {kind} {shown(name)}; allowed: {allowed(self.choices)}")

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return str(self.args[0])


def allowed(choices: Iterable[object]) -> str:
    """Format a closed set of choices for an error message."""
    return ", ".join(shown(c) for c in choices)


def shown(value: object) -> str:
    """``repr`` of ``value`` as a user typed it: a numpy scalar prints as its plain number
    (numpy 2's repr would print ``np.float64(1.7)`` in a message)."""
    if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()
    return repr(value)
