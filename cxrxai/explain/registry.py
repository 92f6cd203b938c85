"""The explainer registry: the one place that says what an explainer is, takes and can do.

Everything else is generated from it: :func:`cxrxai.explain.explain` checks parameters against
it, the CLI lists its names, the precompute plans its stored maps from it (cheap methods for
every image × finding, costly ones on a sample), the viewer draws one control per ``control``
parameter and the live worker streams partial maps of methods that have a ``progressive`` runner.

Adding an explainer is its module (a function ``run(module, spec, images, targets, **params) ->
(N, h, w) tensor`` registered where it is defined, with :func:`explainer`), nothing else: importing
:mod:`cxrxai.explain` imports every module of the package that calls ``explainer(``
(:func:`cxrxai.discovery.discover`); see docs/extending.md. The built-in methods' modules
declare what a method is without importing torch or Captum: their computations are named by
:func:`deferred` and load when a map is computed, so reading the registry (the app's pages, the
live worker) costs no model code. What a setting of an explainer is (its resolved parameters, key,
stored JSON, call arguments, name) is :class:`~cxrxai.explain.settings.Setting`.

>>> toy = Method("toy", "pixel", (Param("gain", 1.0, float, range=(0, 10)),), "a doc example",
...              run=lambda module, spec, images, targets, gain: images.mean(1) * gain)
>>> toy.defaults
{'gain': 1.0}
>>> toy.check({"gain": 20.0})
Traceback (most recent call last):
...
cxrxai.errors.ExplainerError: toy: gain=20.0 is outside [0, 10]
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import ExplainerError, UnknownNameError, shown

__all__ = [
    "COSTS",
    "KINDS",
    "METHODS",
    "Method",
    "Param",
    "deferred",
    "explainer",
    "get",
    "method_names",
    "register",
    "unregister",
]

#: Native map kinds: the CAM layer's grid, the input grid, or occlusion's window-score grid.
KINDS = ("cam", "pixel", "occlusion_grid")
#: ``cheap``: stored for every image × finding; ``costly``: stored for a sample of positives per finding.
COSTS = ("cheap", "costly")


@dataclass(frozen=True)
class Param:
    """One typed parameter of an explainer.

    ``type`` is ``int``, ``float``, ``str``, ``bool`` or ``object`` (not checked, not settable
    from text: a layer module, a baseline tensor, a callback). ``choices`` and ``range`` bound
    the value; ``control`` lists the values the viewer offers (``None``: not shown); ``at_most``
    names another parameter whose value bounds this one's offered values (stride ≤ patch); ``runtime``
    parameters change how a map is computed, not what it is (batch size, engine, callbacks): they
    are never stored with a map nor part of its cache key.
    """

    name: str
    default: Any
    type: type = object
    help: str = ""
    choices: tuple | None = None
    range: tuple[float, float] | None = None
    control: tuple | None = None
    at_most: str | None = None
    runtime: bool = False
    label: str = ""

    def check(self, value, method: str = "") -> Any:
        """``value`` if allowed (ints accepted where floats are), else an :class:`ExplainerError`."""
        if value is None or self.type is object and not isinstance(value, str):
            return value
        where = f"{method}: {self.name}={shown(value)}"
        if self.type in (int, float) and (isinstance(value, bool) or not isinstance(value, (int, float))
                                          or self.type is int and float(value) != int(value)):
            raise ExplainerError(f"{where} must be {'an integer' if self.type is int else 'a number'}")
        if self.choices is not None and value not in self.choices:
            raise UnknownNameError(f"{method} {self.name}".strip(), value, self.choices)
        if self.range is not None and not self.range[0] <= value <= self.range[1]:
            lo, hi = (f"{v:g}" for v in self.range)
            raise ExplainerError(f"{where} is outside [{lo}, {hi}]")
        return self.type(value) if self.type in (int, float) else value

    @property
    def from_text(self) -> bool:
        """Whether a value can be typed on the command line (not a module, tensor or callback)."""
        return self.type is not object or self.choices is not None

    def parse(self, text: str) -> Any:
        """A value typed on the command line (``--param steps=16``), checked."""
        if not self.from_text:
            raise ExplainerError(f"{self.name} cannot be set from text")
        if self.type is bool:
            if text.lower() not in ("true", "false", "1", "0"):
                raise ExplainerError(f"{self.name}={text!r}: use true or false")
            return text.lower() in ("true", "1")
        try:
            value = self.type(text) if self.type in (int, float) else text
        except ValueError:
            raise ExplainerError(f"{self.name}={text!r} must be {self.type.__name__}") from None
        return self.check(value)


@dataclass(frozen=True)
class Method:
    """A registered explainer: native map kind, typed parameters, reference and capabilities.

    ``run(module, spec, images, targets, **params)`` maps a batch to (N, h, w). Capabilities:
    ``cost`` (see :data:`COSTS`), ``stochastic`` (a ``seed`` parameter fixes it), ``layer``
    (explains a CAM layer), ``named_by`` (the parameters a reader names a setting by: occlusion's
    window, "occlusion 32/16"), ``all_labels(model, x, params, memo)`` (every label's map from one
    pass, ``None`` when the model does not allow it; ``memo`` is a dict shared by the methods run on
    one batch), ``store(model, x, targets, params)`` (for each target, the native values to store
    and their kind; default ``run``'s maps), ``per_image`` (one computation serves every target of an
    image, as occlusion's forward passes score every output: a build computes an image's labels
    together) and ``progressive(model, x, target, params, progress, cancel)`` (yields
    ``(stage, partial)`` for the live viewer, default one final map); ``passes(params)`` how many
    forward passes of the model one map takes (counted in ``unit`` s by the live worker's progress
    bar, which also cancels between them).
    """

    name: str
    kind: str
    params: tuple[Param, ...]
    reference: str
    run: Callable = field(repr=False, default=None)
    label: str = ""
    cost: str = "cheap"
    stochastic: bool = False
    layer: bool = False
    named_by: tuple[str, ...] = ()
    plan_per_label: int | None = None
    all_labels: Callable | None = field(repr=False, default=None)
    store: Callable | None = field(repr=False, default=None)
    per_image: bool = False
    progressive: Callable[..., Iterator] | None = field(repr=False, default=None)
    passes: Callable[[dict], int] | None = field(repr=False, default=None)
    unit: str = "forward passes"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise UnknownNameError("map kind", self.kind, KINDS)
        if self.cost not in COSTS:
            raise UnknownNameError("cost", self.cost, COSTS)

    @property
    def title(self) -> str:
        return self.label or self.name

    @property
    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params}

    @property
    def stored_defaults(self) -> dict:
        """The parameters a stored map records (everything but runtime ones), at their defaults."""
        return {p.name: p.default for p in self.params if not p.runtime}

    @property
    def controls(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.control is not None)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise ExplainerError(f"{self.name} has no parameter(s) {[name]}; allowed: {sorted(self.defaults)}")

    def check(self, params: dict) -> dict:
        """``params`` checked against the declared ones (unknown names, types, choices, ranges); what
        depends on the image (a window that does not fit) is the method's own check."""
        unknown = set(params) - set(self.defaults)
        if unknown:
            raise ExplainerError(
                f"{self.name} has no parameter(s) {sorted(unknown)}; allowed: {sorted(self.defaults)}"
            )
        return {k: self.param(k).check(v, self.name) for k, v in params.items()}


class deferred:  # noqa: N801 — used as a function: deferred("cxrxai.explain.cam", "gradcam_run")
    """The callable ``name`` of ``module``, imported at its first call: a built-in method's
    computation (torch, Captum) is loaded when a map is computed, not when the registry is read.

    >>> join = deferred("os.path", "join")
    >>> join("a", "b"), join
    ('a/b', deferred('os.path', 'join'))
    """

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name
        self._target: Callable | None = None

    def __call__(self, *args, **kwargs):
        if self._target is None:
            self._target = getattr(importlib.import_module(self.module), self.name)
        return self._target(*args, **kwargs)

    def __repr__(self) -> str:
        return f"deferred({self.module!r}, {self.name!r})"


METHODS: dict[str, Method] = {}


def register(method: Method, *, replace: bool = False) -> Method:
    """Add ``method`` to the registry (``replace=True`` to redefine a name)."""
    if method.name in METHODS and not replace:
        raise ExplainerError(f"an explainer named {method.name!r} is already registered")
    METHODS[method.name] = method
    return method


def explainer(name: str, kind: str, params: tuple[Param, ...], reference: str, **capabilities):
    """Register the decorated ``run`` function as explainer ``name`` where it is defined (see
    :class:`Method` for ``capabilities``); the function itself is returned unchanged."""

    def decorate(run: Callable) -> Callable:
        register(Method(name, kind, tuple(params), reference, run=run, **capabilities))
        return run

    return decorate


def unregister(name: str) -> None:
    METHODS.pop(name, None)


def get(name: str) -> Method:
    if name not in METHODS:
        raise UnknownNameError("explainer", name, METHODS)
    return METHODS[name]


def method_names(*, kind: str | None = None, cost: str | None = None) -> list[str]:
    """Registered names in registration order, optionally of one kind or cost."""
    return [
        m.name
        for m in METHODS.values()
        if (kind is None or m.kind == kind) and (cost is None or m.cost == cost)
    ]
