"""Which explainer setting an analysis uses, and what a reader calls each setting.

A method can have maps of several settings (the occlusion sweep stores 8/8 … 64/32 beside 32/16;
a user may store Integrated Gradients at two step counts). The analyses score one per method:
its default, as the map stages recorded it for the model, else its most stored setting. Tables
that keep several settings name each by what sets it apart, so no two settings share a row.
"""

from __future__ import annotations

import json

import pandas as pd

__all__ = ["main_rows", "main_settings", "setting_names"]

_OCCLUSION_WINDOW = ("patch", "stride")


def main_settings(counts: pd.DataFrame, defaults: dict[str, str]) -> pd.DataFrame:
    """One row of ``counts`` (method, params_key, n) per method: its default setting
    (``defaults[method]``, a params_key) where ``counts`` has it, else its most stored one (ties:
    the first params_key in sort order, so the choice is stable).

    >>> c = pd.DataFrame({"method": ["occlusion"] * 2, "params_key": ['{"patch":16}', '{"patch":32}'], "n": [9, 9]})
    >>> main_settings(c, {"occlusion": '{"patch":32}'}).params_key.tolist(), main_settings(c, {}).params_key.tolist()
    (['{"patch":32}'], ['{"patch":16}'])
    """
    c = counts.assign(_default=counts.params_key == counts.method.map(defaults))
    c = c.sort_values(["method", "_default", "n", "params_key"], ascending=[True, False, False, True])
    return c.groupby("method").head(1).drop(columns="_default").reset_index(drop=True)


def main_rows(rows: pd.DataFrame, defaults: dict[str, str]) -> pd.DataFrame:
    """The rows (any table with method, params_key) of each method's :func:`main_settings`, counted in ``rows``."""
    counts = rows.groupby(["method", "params_key"]).size().reset_index(name="n")
    return rows.merge(main_settings(counts, defaults)[["method", "params_key"]], on=["method", "params_key"])


def setting_names(pairs: pd.DataFrame) -> list[str]:
    """A reader's name for each (method, params_key) row of ``pairs``: the method, occlusion's
    window ("occlusion 32/16"), and the parameters in which the method's settings in ``pairs``
    differ ("integrated_gradients (n_steps=20)"), so two settings never share a name (where the
    values print alike, 1 and 1.0, the key itself is added).

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


def _name(method: str, p: dict, siblings: list[dict]) -> str:
    window = method == "occlusion" and all(k in p for k in _OCCLUSION_WINDOW)
    differ = sorted(k for k in set().union(*siblings) if not (window and k in _OCCLUSION_WINDOW)
                    and any(_value(q, k) != _value(p, k) for q in siblings))
    name = f"{method} {p['patch']}/{p['stride']}" if window else method
    return name + (" (" + ", ".join(f"{k}={p.get(k, 'unset')}" for k in differ) + ")" if differ else "")
