"""Text and tables for a reader (no Plotly): a number or why it is missing, a case's decision,
the PASS/FAIL verdicts, the explainer ranking and the planted-shortcut summaries, n beside each.

:mod:`cxrxai.present.viz` re-exports these names, so pages and scripts keep one import for presentation.
"""

from __future__ import annotations

import pandas as pd

from ..stats import MIN_CI_N

__all__ = [
    "CLOCKS",
    "SMALL_N",
    "decision_text",
    "ranking_display",
    "reliance_display",
    "shortcut_display",
    "sweep_counts",
    "sweep_timing",
    "value_text",
    "verdict_table",
]

#: Cells, points and bars resting on fewer cases than this are greyed (shown, never hidden).
SMALL_N = 10


def value_text(value: float, why: str, *, digits: int = 3) -> str:
    """A number for a caption, or ``why`` it is missing (a NaN is never printed).

    >>> value_text(0.12345, "no cases"), value_text(float("nan"), "no cases")
    ('0.123', 'no cases')
    """
    return why if value is None or value != value else f"{value:.{digits}f}"


def sweep_counts(sweep: pd.DataFrame, *, unplanned: str = " (plan not recorded)") -> str:
    """The maps each sweep setting has stored of those planned, where the store recorded the plan;
    ``unplanned`` follows "k stored" where it did not (empty where no sweep ran: nothing was planned).

    >>> sweep_counts(pd.DataFrame({"patch": [16, 8], "stride": [8, 8], "maps": [1, 3],
    ...                            "maps_planned": [5, None]}))
    '16/8: 1 of 5 planned; 8/8: 3 stored (plan not recorded)'
    """
    planned = sweep["maps_planned"] if "maps_planned" in sweep else [None] * len(sweep)
    return "; ".join(f"{p}/{s}: {k} of {int(n)} planned" if n is not None and n == n
                     else f"{p}/{s}: {k} stored{unplanned}"
                     for p, s, k, n in zip(sweep["patch"], sweep["stride"], sweep["maps"], planned))


#: What each clock a map's seconds are read from is called, and what it counts (see
#: :func:`cxrxai.pipeline.units.pass_clock`).
CLOCKS = {
    "cpu": ("CPU", "the CPU time of the pass, every thread's summed: the computation's own time, "
                   "without waiting (about cores × wall time on an idle machine)"),
    "wall": ("wall-clock", "the wall time of the pass, which counts any time spent waiting on a busy "
                           "machine"),
}


def _seconds(row) -> str:
    p, s = f"{row.patch}/{row.stride}", row.get("seconds_median")
    n = int(row.get("timed_maps") or 0)
    if not n or s != s:
        return f"{p}: no map timed"
    spread = (f" [IQR {row.seconds_q1:.1f}–{row.seconds_q3:.1f}]" if n >= MIN_CI_N else "")
    return f"{p}: {s:.1f} s{spread} (n = {n}, {CLOCKS.get(row.timing, (row.timing,))[0]})"


def sweep_timing(sweep: pd.DataFrame) -> str:
    """Seconds per map of each sweep setting: median, interquartile range (from ``MIN_CI_N`` maps),
    n and the clock, then what each clock shown counts.

    >>> sweep_timing(pd.DataFrame({"patch": [32, 8], "stride": [16, 8], "timing": ["wall", None],
    ...     "timed_maps": [5, 0], "seconds_median": [3.0, None], "seconds_q1": [2.0, None],
    ...     "seconds_q3": [4.0, None]}))  # doctest: +ELLIPSIS
    'Seconds per map, median: 32/16: 3.0 s [IQR 2.0–4.0] (n = 5, wall-clock); 8/8: no map timed. wall-...'
    """
    if "seconds_median" not in sweep:
        return "No map of the sweep has a time stored."
    rows = "; ".join(_seconds(r) for _, r in sweep.iterrows())
    kinds = [k for k in CLOCKS if k in set(sweep["timing"].dropna())]
    return f"Seconds per map, median: {rows}. " + " ".join(
        f"{CLOCKS[k][0]}: {CLOCKS[k][1]}." for k in kinds)


def decision_text(prob: float, threshold: float, outcome) -> str:
    """A case's probability, threshold and outcome for a caption, saying why a part is missing.

    >>> decision_text(0.83, 0.45, "TP"), decision_text(0.83, float("nan"), None)
    ('P 0.830 (threshold 0.450) · TP', 'P 0.830 · no decision: no threshold stored for this label')
    >>> decision_text(0.83, 0.45, "")
    'P 0.830 (threshold 0.450) · no outcome: ground truth unknown'
    """
    if threshold is None or threshold != threshold:
        return f"P {value_text(prob, 'missing')} · no decision: no threshold stored for this label"
    if not outcome or outcome != outcome:
        return f"P {prob:.3f} (threshold {threshold:.3f}) · no outcome: ground truth unknown"
    return f"P {prob:.3f} (threshold {threshold:.3f}) · {outcome}"


def verdict_table(table: pd.DataFrame) -> pd.DataFrame:
    """Arun et al.'s PASS/FAIL summary (``trust.pass_fail``) as a reader sees it: per criterion its
    verdict, mean, p and the n of images it rests on, "—" where a method has no scores for it.

    >>> t = pd.DataFrame({"method": ["a", "b"], "utility": ["PASS", None], "utility_mean": [0.61, None],
    ...                   "utility_p": [0.001, None], "utility_n": [30, None]})
    >>> verdict_table(t).to_dict("records")[1]
    {'method': 'b', 'utility': '—', 'utility mean': '—', 'utility p': '—', 'utility n': '—'}
    """
    if table.empty or "method" not in table:
        return table
    out = pd.DataFrame({"method": table["method"]})
    for crit in ("utility", "randomization", "repeatability", "reproducibility"):
        if crit not in table:
            continue
        there = table[f"{crit}_n"].notna()
        out[crit] = table[crit].where(there, "—")
        out[f"{crit} mean"] = [value_text(v, "—") for v in table[f"{crit}_mean"]]
        out[f"{crit} p"] = [value_text(v, "—", digits=4) for v in table[f"{crit}_p"]]
        out[f"{crit} n"] = [str(int(n)) if ok else "—" for n, ok in zip(table[f"{crit}_n"], there)]
    return out


def _ci_text(value: float, lower: float, upper: float, n: int) -> str:
    if value != value:
        return "no cases"
    if lower != lower:
        return f"{value:+.3f} (no interval from n = {n} < {MIN_CI_N})"
    return f"{value:+.3f} [{lower:+.3f}, {upper:+.3f}]"


def _share(v: float) -> str:
    return "no map with positive mass" if v != v else f"{v:.1%}"


def shortcut_display(summary: pd.DataFrame) -> pd.DataFrame:
    """The planted-shortcut summary as a reader sees it: shares as percentages beside the chance
    level, the paired difference with its CI and n, and the verdict — never a bare NaN."""
    return pd.DataFrame(
        [
            {
                "explainer": r.method,
                "verdict": r.verdict,
                "shortcut − control (95 % CI)": _ci_text(r.difference, r.lower, r.upper, r.pairs),
                "n pairs": r.pairs,
                "marker share, shortcut model": _share(r.shortcut_share),
                "marker share, control": _share(r.control_share),
                "chance (zone area)": f"{r.chance:.1%}",
                "peak on marker, shortcut / control": " / ".join(
                    "no map" if v != v else f"{v:.0%}" for v in (r.shortcut_peak, r.control_peak)
                ),
                "lesion share (positives), shortcut / control": f"{_share(r.shortcut_lesion_share)} / "
                f"{_share(r.control_lesion_share)}",
            }
            for r in summary.itertuples(index=False)
        ]
    )


def reliance_display(reliance: pd.DataFrame) -> pd.DataFrame:
    """Each model's probability with and without the marker on the same cases, with n and CI."""
    return pd.DataFrame([{
        "model": f"{r.model_id} ({r.role})", "cases": r.cases, "n": r.n,
        "probability with marker": "no cases" if r.n == 0 else f"{r.prob_with:.3f}",
        "without": "no cases" if r.n == 0 else f"{r.prob_without:.3f}",
        "shift (95 % CI)": _ci_text(r.shift, r.lower, r.upper, r.n),
    } for r in reliance.itertuples(index=False)])


def ranking_display(ranking: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The explainer ranking as a reader sees it: the mean with n, and each explainer's paired
    difference from the best with its CI — or why there is none — never a bare NaN."""
    rows = []
    for r in ranking.itertuples(index=False):
        d = r._asdict()
        if d["vs"] is None or d["vs"] != d["vs"]:
            versus = "best"
        elif not d["n_paired"]:
            versus = f"no case scored by both it and {d['vs']}: not compared"
        elif d["lower"] != d["lower"]:
            versus = (f"{d['difference']:+.3f} behind {d['vs']} on {int(d['n_paired'])} shared cases "
                      f"(no interval from fewer than {MIN_CI_N})")
        else:
            verdict = "behind" if d["behind"] else "not distinguishable from"
            versus = (f"{verdict} {d['vs']}: {d['difference']:+.3f} [{d['lower']:.3f}, {d['upper']:.3f}], "
                      f"n = {int(d['n_paired'])} shared cases")
        small = " (n < 10)" if d["n"] < SMALL_N else ""
        rows.append(
            {
                "finding": d["label"],
                "rank": d["rank"],
                "explainer": d["explainer"],
                metric: f"{d[metric]:.3f}{small}",
                "n": d["n"],
                "compared with the best (paired bootstrap 95 % CI)": versus,
            }
        )
    return pd.DataFrame(rows)
