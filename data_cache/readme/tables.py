"""The README's evidence tables, printed as Markdown from a finished demo store.

    .venv/bin/python data_cache/readme/tables.py [--store data_cache/demo.duckdb] > /tmp/tables.md
    .venv/bin/python data_cache/readme/tables.py --sweep demo-densenet121  # docs/demo.md's sweep table

(``make install-test`` brings ``tabulate``, which pandas writes Markdown with.)

Every number comes from a report (``cxrxai.reports``), the same call the pages and
``python -m cxrxai report`` make; the explainer tables print n beside every value, the others
print the report's own n columns; a missing value is a dash.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cxrxai import paths, reports  # noqa: E402
from cxrxai.errors import CxrxaiError  # noqa: E402
from cxrxai.explain import get  # noqa: E402
from cxrxai.metrics import registry as metric_registry  # noqa: E402
from cxrxai.present.display import CLOCKS  # noqa: E402
from cxrxai.present.viz import value_text  # noqa: E402
from cxrxai.store import open_store  # noqa: E402


def _title(method: str) -> str:
    try:
        return get(method).title
    except CxrxaiError:  # a method stored by another version: its name
        return method


def _v(x) -> str:
    return value_text(x, "—")


def markdown(df: pd.DataFrame) -> str:
    """GitHub Markdown through pandas (``tabulate``, a test requirement), the cells as printed."""
    return df.astype(str).to_markdown(index=False, disable_numparse=True)


def explainers(store, model: str) -> str:
    t = reports.run_report(store, "explainers", model, slice_="true_positive")
    t["cell"] = [f"{_v(i)} ({n})" for i, n in zip(t.iou, t.n)]
    wide = t.pivot(index="explainer", columns="label", values="cell").fillna("no case")
    wide.index = [_title(m) for m in wide.index]
    return markdown(wide.reset_index().rename(columns={"index": "explainer"}))


def ranking(store, model: str) -> str:
    rows = []
    for metric, name in (("iou", "IoU"), ("hit", "pointing game"), ("roc_auc", "AUC")):
        r = reports.run_report(store, "explainer-ranking", model, metric=metric, slice_="positive")
        for label, g in r.groupby("label", sort=False):
            best = g.iloc[0]
            nxt = g.iloc[1] if len(g) > 1 else None
            gap = "only one explainer" if nxt is None else (
                f"{_title(nxt.explainer)} {_v(nxt[metric])} (n = {int(nxt.n)}): {_v(nxt.difference)} behind "
                f"[{_v(nxt.lower)}, {_v(nxt.upper)}] on {int(nxt.n_paired)} paired cases"
                if nxt.lower == nxt.lower else f"{_title(nxt.explainer)} {_v(nxt[metric])} (no interval: "
                f"{int(nxt.n_paired) if nxt.n_paired == nxt.n_paired else 0} pairs)")
            behind = int(g.behind.fillna(False).astype(bool).sum())
            rows.append({"finding": label, "metric": name, "best": f"{_title(best.explainer)} {_v(best[metric])} "
                         f"(n = {int(best.n)})", "runner-up: best − it [95 % CI]": gap,
                         "behind the best (CI excludes 0)": f"{behind} of {len(g) - 1}"})
    return markdown(pd.DataFrame(rows))


def _interval(row, metric: str) -> str:
    lower, upper = row.get(f"{metric}_lower"), row.get(f"{metric}_upper")
    bounds = f" [{_v(lower)}, {_v(upper)}]" if lower == lower and upper == upper and lower is not None else ""
    return _v(row[metric]) + bounds


def _seconds(row) -> str:
    """Median seconds per map [interquartile range] (n maps, clock), as the Benchmark page says it."""
    if not row.timed_maps or row.seconds_median != row.seconds_median:
        return "—"
    clock = CLOCKS.get(row.timing, (row.timing,))[0]
    return (f"{row.seconds_median:.1f} [{row.seconds_q1:.1f}, {row.seconds_q3:.1f}] "
            f"({int(row.timed_maps)}, {clock})")


def sweep(store, model: str) -> str:
    """docs/demo.md's sweep table of ``model``: per setting its grid, the maps stored, seconds per
    map (median [IQR] (n, clock)) and every metric of the ``sweep`` view with its 95 % CI."""
    t = reports.run_report(store, "occlusion-sweep", model)
    names = [m for m in metric_registry.metric_names(view="sweep") if m in t]
    rows = [{"patch/stride": f"{r.patch}/{r.stride}", "grid": str(r.resolution).replace("x", "×"),
             "maps": int(r.maps), "s / map: median [IQR] (n, clock)": _seconds(r),
             **{metric_registry.label(m): _interval(r, m) for m in names}} for _, r in t.iterrows()]
    return markdown(pd.DataFrame(rows))


def table(store, name: str, model: str) -> str:
    t = reports.run_report(store, name, model)
    for c in t.columns:  # floats in object columns too (a verdict table mixes them with text)
        t[c] = ["—" if pd.isna(x) else _v(x) if isinstance(x, float) else x for x in t[c]]
    return markdown(t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=paths.demo_store())
    parser.add_argument("--sweep", metavar="MODEL", help="print only docs/demo.md's sweep table of MODEL")
    args = parser.parse_args()
    if args.sweep:
        with open_store(args.store) as store:
            print(sweep(store, args.sweep))
        return
    with open_store(args.store) as store:
        print(f"<!-- from {args.store}, built {store.meta('built_at')}, evidence {store.meta('evidence_built_at')} -->")
        for model in store.models().model_id:
            print(f"\n### {model}\n")
            for title, make in (("Explainer × finding IoU on true positives (n)", explainers),
                                ("Which explainer finds the lesion (all positives)", ranking)):
                try:
                    print(f"**{title}**\n\n{make(store, model)}\n")
                except CxrxaiError as err:  # a section the store cannot fill says so
                    print(f"**{title}**: {err}\n")
            for name in ("occlusion-sweep", "fidelity", "trust"):
                try:
                    print(f"**{name}**\n\n{table(store, name, model)}\n")
                except CxrxaiError as err:
                    print(f"**{name}**: {err}\n")


if __name__ == "__main__":
    main()
