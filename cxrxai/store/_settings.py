"""Which explainer setting an analysis uses, and what a reader calls each setting.

A method can have maps of several settings (the occlusion sweep stores 8/8 … 64/32 beside 32/16;
a user may store Integrated Gradients at two step counts). The analyses score one per method:
its default, as the map stages recorded it for the model, else its most stored setting. A setting
is its ``params_key`` here (the store never parses or defaults a parameter); what a reader calls
each is :func:`cxrxai.explain.setting_names`.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["SWEEP_PLAN_META", "main_rows", "main_settings"]

#: The meta key of a model's occlusion sweep plan, ``{"cases": n, "settings": [[patch, stride], ...]}``:
#: the sweep stage writes it before its first map, so an interrupted sweep says what it lacks.
SWEEP_PLAN_META = "sweep_plan:{model_id}"


def main_settings(counts: pd.DataFrame, defaults: dict[str, str]) -> pd.DataFrame:
    """One row of ``counts`` (method, params_key, n) per method: its default setting
    (``defaults[method]``, a params_key) where ``counts`` has it, else its most stored one (ties:
    the first params_key in sort order, so the choice is stable).

    >>> c = pd.DataFrame({"method": ["occlusion"] * 2, "params_key": ['{"patch":16}', '{"patch":32}'],
    ...                   "n": [9, 9]})
    >>> main = main_settings(c, {"occlusion": '{"patch":32}'}), main_settings(c, {})
    >>> main[0].params_key.tolist(), main[1].params_key.tolist()
    (['{"patch":32}'], ['{"patch":16}'])
    """
    c = counts.assign(_default=counts.params_key == counts.method.map(defaults))
    c = c.sort_values(["method", "_default", "n", "params_key"], ascending=[True, False, False, True])
    return c.groupby("method").head(1).drop(columns="_default").reset_index(drop=True)


def main_rows(rows: pd.DataFrame, defaults: dict[str, str]) -> pd.DataFrame:
    """The rows (any table with method, params_key) of each method's :func:`main_settings`, counted
    in ``rows``."""
    counts = rows.groupby(["method", "params_key"]).size().reset_index(name="n")
    return rows.merge(main_settings(counts, defaults)[["method", "params_key"]], on=["method", "params_key"])
