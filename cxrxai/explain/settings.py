"""A setting of an explainer: the one value every consumer resolves, keys, stores, calls and names.

A :class:`Setting` is built only through its method's declaration (:mod:`.registry`): the given
parameters are checked (unknown names, types, choices, ranges: a typed error naming what is
allowed) and laid over the method's defaults; with the model's spec the defaults that depend on
the model are filled in too (the explained output, the CAM layer, the input geometry a window
grid is rebuilt with). From it come

* ``params`` — the stored parameters (runtime ones such as a batch size never: they change how a
  map is computed, not what it is); ``key`` — their canonical JSON, the store's ``params_key``;
* :meth:`Setting.kwargs` — the arguments the method's ``run`` is called with;
* :meth:`Setting.describe`, :meth:`Setting.slug` and :func:`setting_names` — what a reader calls it.

>>> from cxrxai.models.spec import ModelSpec
>>> spec = ModelSpec(name="m", arch="densenet121", labels=("A",))
>>> s = Setting.of("occlusion", {"patch": 16, "stride": 8}, spec=spec)
>>> s.key
'{"baseline":"black","height":224,"output":"logit","patch":16,"precision":"fp32","stride":8,"width":224}'
>>> Setting.stored("occlusion", s.key) == s, s.kwargs()["patch"], "height" in s.kwargs()
(True, 16, False)
>>> Setting.of("occlusion", Setting.stored("occlusion", s.key).declared, spec=spec) == s
True
>>> s.describe(), s.slug()
('Occlusion patch 16 stride 8 baseline black', '-patch16-stride8-baselineblack')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..errors import ExplainerError
from .registry import Method, get

__all__ = ["Setting", "setting_names"]

#: What a window-grid map records besides its parameters: the input it is rebuilt at.
_GEOMETRY = ("height", "width")


@dataclass(frozen=True, eq=False)
class Setting:
    """One explainer setting (see the module docstring); equal and hashed by method and key."""

    method: str
    params: Mapping[str, Any] = field(repr=False)

    @classmethod
    def of(cls, method: str, params: Mapping | None = None, *, spec=None) -> Setting:
        """The setting of ``method`` with ``params`` (checked) over its defaults; ``spec`` (a
        :class:`~cxrxai.models.spec.ModelSpec`) fills what its model decides. Runtime parameters
        are refused here: they go to :meth:`kwargs`."""
        meth = get(method)
        given = meth.check(dict(params or {}))
        runtime = sorted(k for k in given if meth.param(k).runtime)
        if runtime:
            raise ExplainerError(f"{method}: {runtime} change how a map is computed, not the setting; "
                                 f"a setting takes {sorted(meth.stored_defaults)}")
        return cls(method, {**meth.stored_defaults, **_from_model(meth, given, spec), **given})

    @classmethod
    def split(cls, method: str, params: Mapping, *, spec=None) -> tuple[Setting, dict]:
        """``params`` as ``explain`` takes them: the setting they make and the runtime arguments."""
        meth = get(method)
        checked = meth.check(dict(params))
        runtime = {k: v for k, v in checked.items() if meth.param(k).runtime}
        setting = cls.of(method, {k: v for k, v in checked.items() if k not in runtime}, spec=spec)
        return setting, runtime

    @classmethod
    def stored(cls, method: str, params: str | Mapping) -> Setting:
        """The setting a stored map records (its params JSON or dict), checked against the method."""
        raw = json.loads(params) if isinstance(params, str) else dict(params)
        meth = get(method)
        geometry = {k: raw.pop(k) for k in _GEOMETRY if k in raw and meth.kind == "occlusion_grid"}
        return cls(method, {**meth.stored_defaults, **meth.check(raw), **geometry})

    @property
    def method_(self) -> Method:
        return get(self.method)

    @property
    def declared(self) -> dict:
        """The parameters the method declares (a stored window grid's geometry left out): what
        :meth:`of` takes back, the model's spec filling the geometry in again."""
        grid = self.method_.kind == "occlusion_grid"
        return {k: v for k, v in self.params.items() if not (grid and k in _GEOMETRY)}

    @property
    def key(self) -> str:
        """Canonical JSON of ``params`` (sorted keys, compact): the store's ``params_key``."""
        return json.dumps(dict(self.params), sort_keys=True, separators=(",", ":"))

    def kwargs(self, **runtime) -> dict:
        """The keyword arguments the method runs with: every parameter it declares (runtime ones at
        their defaults unless given here), never the geometry a stored map records."""
        meth = self.method_
        extra = meth.check(runtime)
        return {**meth.defaults, **{k: v for k, v in self.params.items() if k in meth.defaults}, **extra}

    def describe(self) -> str:
        """The method's title and its viewer controls' values: "Occlusion patch 32 stride 16 …"."""
        return " ".join([self.method_.title, *(f"{k} {v}" for k, v in self._shown())])

    def slug(self) -> str:
        """The controls' values for a file name: "-patch32-stride16-baselineblack"."""
        return "".join(f"-{k}{v}" for k, v in self._shown())

    def _shown(self) -> list[tuple[str, Any]]:
        return [(p.name, self.params.get(p.name)) for p in self.method_.controls]

    def __eq__(self, other) -> bool:
        return isinstance(other, Setting) and (self.method, self.key) == (other.method, other.key)

    def __hash__(self) -> int:
        return hash((self.method, self.key))

    def __repr__(self) -> str:
        return f"Setting({self.method!r}, {self.key})"


def _from_model(meth: Method, given: dict, spec) -> dict:
    """The defaults ``spec``'s model decides: the output it explains, its CAM layer, its input size."""
    if spec is None:
        return {}
    out = {}
    if "output" in meth.defaults:
        out["output"] = spec.explained_output
    if meth.layer and given.get("layer") is None:
        out["layer"] = spec.cam_layer
    if meth.kind == "occlusion_grid":
        out.update(height=spec.input_size, width=spec.input_size)
    return out


def setting_names(pairs: pd.DataFrame) -> list[str]:
    """A reader's name for each (method, params_key) row of ``pairs``: the method with the values of
    the parameters it is named by (occlusion's window: "occlusion 32/16"), and the parameters in
    which the method's settings in ``pairs`` differ ("ig (steps=20)"), so two settings never share
    a name (where the values print alike, 1 and 1.0, the key itself is added).

    >>> p = pd.DataFrame({"method": ["ig", "ig", "occlusion"],
    ...                   "params_key": ['{"n":20,"o":1}', '{"n":50,"o":1}', '{"patch":32,"stride":16}']})
    >>> setting_names(p)
    ['ig (n=20)', 'ig (n=50)', 'occlusion 32/16']
    """
    keys = pairs[["method", "params_key"]].drop_duplicates()
    parsed = {k: json.loads(k) for k in keys["params_key"]}
    named = {}
    for method, group in keys.groupby("method", sort=False):
        siblings = [parsed[k] for k in group["params_key"]]
        for key in group["params_key"]:
            named[method, key] = _name(method, parsed[key], siblings)
        clash = pd.Series({k: named[method, k] for k in group["params_key"]}).duplicated(keep=False)
        for key in clash[clash].index:
            named[method, key] += f" {key}"
    return [named[m, k] for m, k in zip(pairs["method"], pairs["params_key"])]


def _value(params: dict, key: str) -> str:
    return json.dumps(params[key]) if key in params else "unset"  # 1 and 1.0, null and unset differ


def _named_by(method: str) -> tuple[str, ...]:
    """The parameters ``method`` is named by (none for a method no longer registered)."""
    try:
        return get(method).named_by
    except ExplainerError:
        return ()


def _name(method: str, p: dict, siblings: list[dict]) -> str:
    by = _named_by(method)
    by = by if by and all(k in p for k in by) else ()
    differ = sorted(k for k in set().union(*siblings) if k not in by
                    and any(_value(q, k) != _value(p, k) for q in siblings))
    name = " ".join([method, "/".join(str(p[k]) for k in by)]) if by else method
    return name + (" (" + ", ".join(f"{k}={p.get(k, 'unset')}" for k in differ) + ")" if differ else "")
