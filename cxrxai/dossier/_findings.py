"""The summary's findings, each a sentence computed from the same report frames the sections print
(never written by hand): is the new model worse for anyone, the largest subgroup gap after the
family's correction, the explainer that localizes best (and the human benchmark), trust tests failed,
the planted shortcut. With nothing flagged, a sentence says what was tested, and on how many."""

from __future__ import annotations

from ..reports.compare import metric_label
from ._content import HUMAN_BENCHMARK, RANKING, SHORTCUT, TRUST, comparison_view, gaps_view
from ._views import Context, Missing

__all__ = ["findings"]

def _p(p: float) -> str:
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.4f}"


def _ci(r) -> str:
    return f"95% CI {r.lower:+.3f} to {r.upper:+.3f}"


def _where(r) -> str:
    return "on all shared images" if r.grouping == "all" else f"for {r.grouping} {r.group}"


def comparison_finding(ctx: Context) -> str | None:
    """ "Is the new model worse than the one it replaces, for anyone?" — the first sentence."""
    if not ctx.vs:
        return None
    cmp = ctx.run(comparison_view(ctx))
    if isinstance(cmp, Missing):
        return f"Whether {ctx.model_id} is worse than {ctx.vs} could not be tested: {cmp.why}"
    family, name = int(cmp["family"].iloc[0]), cmp["correction"].iloc[0]
    localized = cmp.metric.str.contains(" · ").any()
    tests = "AUROC by DeLong, TPR and FPR by McNemar" + (
        ", localization per explainer by a paired t-test" if localized else "")
    head = (f"Is {ctx.model_id} worse than {ctx.vs}, for anyone? Tested with {family} paired comparisons "
            f"({tests}; per finding, on all {cmp.attrs['shared_images']:,} shared images and by "
            f"{', '.join(sorted(set(cmp.grouping) - {'all'}))}), corrected by {name}: ")
    worse = cmp[cmp.worse].sort_values("p_adjusted")
    if worse.empty:
        better = int(cmp.better.sum())
        return head + f"no — worse in none of them{f'; better in {better}' if better else ''}."
    lead = worse[worse.explained_by == ""]
    groups = list(dict.fromkeys(zip(lead.grouping, lead.group)))  # most significant first
    parts = []
    for grouping, group in groups:
        rows = lead[(lead.grouping == grouping) & (lead.group == group)]
        r = rows.iloc[0]
        more = f"; and {len(rows) - 1} more comparison(s) there" if len(rows) > 1 else ""
        what = metric_label(r.metric)
        parts.append(f"{_where(r)}: {r.label} {what} {r.new:.3f} vs {r.old:.3f}, "
                     f"Δ {r['diff']:+.3f}, {_ci(r)}, {r.test}, n = {int(r.n):,}, "
                     f"adjusted {_p(r.p_adjusted)}{more}")
    explained = worse[worse.explained_by != ""]
    tail = ""
    if len(explained):
        where = ", ".join(dict.fromkeys(_where(r) for _, r in explained.iterrows()))
        tail = (f" {len(explained)} further worse comparison(s) ({where}) hold those images and are not "
                "significant without them (explained_by).")
    return head + f"yes — {' | '.join(parts)}.{tail}"


def gap_finding(ctx: Context) -> str | None:
    gaps = ctx.run(gaps_view(ctx))
    if isinstance(gaps, Missing):
        return f"Subgroup gaps could not be tested: {gaps.why}"
    family, name = int(gaps["family"].iloc[0]), gaps["correction"].iloc[0]
    flagged = gaps[gaps.flagged]
    wide = int(gaps.too_wide.sum())
    width = ctx.options(gaps_view(ctx))["useful_width"]
    wide_text = (
        f" {wide} of the {len(gaps)} comparisons have a 95% CI wider than {width} (too few cases to "
        "rule out a gap that size; listed under Limitations)."
        if wide
        else ""
    )
    if flagged.empty:
        return (
            f"No subgroup gap is significant after {name}: {family} tested comparisons of TPR and FPR "
            "(each group "
            f"against the rest of its grouping, per finding, by {', '.join(sorted(set(gaps.grouping)))})."
            + wide_text
        )
    r = flagged.assign(_abs=flagged["diff"].abs()).sort_values("_abs", ascending=False).iloc[0]
    return (
        f"The largest subgroup gap significant after {name} ({len(flagged)} of {family} comparisons "
        f"flagged): {r.label} {r.rate.upper()} for {r.grouping} {r.group}, {r.value:.3f} "
        f"(n = {int(r.n_group):,}) against {r.value_against:.3f} for {r.against} "
        f"(n = {int(r.n_against):,}), Δ {r['diff']:+.3f}, {_ci(r)}, "
        f"score test, adjusted {_p(r.p_adjusted)}." + wide_text
    )


def explainer_finding(ctx: Context) -> str | None:
    ranking = ctx.run(RANKING)
    if isinstance(ranking, Missing):
        return None
    metric = ranking.columns[4]
    top = ranking[ranking["rank"] == 1]
    wins = top["explainer"].value_counts()
    best = wins.index[0]
    led = top.loc[top.explainer == best, "label"]
    clear = [lab for lab in led if ranking[(ranking.label == lab) & (ranking["rank"] > 1)]["behind"].all()]
    mean = float(ranking.loc[ranking.explainer == best, metric].mean())
    text = (f"The explainer that localizes best: {best}, first by mean {metric} on {len(led)} of "
            f"{top.label.nunique()} findings, ahead of every other explainer (paired bootstrap 95% CI of the "
            f"difference above 0) on {len(clear)} of them; its mean {metric} over all findings {mean:.3f}.")
    bench = ctx.run(HUMAN_BENCHMARK)
    if not isinstance(bench, Missing):
        avg = bench[bench["name"] == "Average"]
        if len(avg):
            r = avg.iloc[0]
            verdict = "below" if r.lower > 0 else "above" if r.upper < 0 else "not distinguishable from"
            text += (f" Grad-CAM's {metric} is {verdict} the human benchmark (a second reader): a "
                     f"decrease of {r.decrease_pct:.1f}% on average (95% CI {r.lower:.1f} to {r.upper:.1f}%, "
                     f"n = {int(r.n):,} cases; Saporta et al.'s paired bootstrap).")
    return text


def trust_finding(ctx: Context) -> str | None:
    trust = ctx.run(TRUST)
    if isinstance(trust, Missing):
        return None
    verdicts = [
        c for c in trust.columns if c in ("utility", "randomization", "repeatability", "reproducibility")
    ]
    cells = [(r.method, c, str(r[c]).upper()) for _, r in trust.iterrows() for c in verdicts]
    failed = [f"{method} {c}" for method, c, v in cells if v == "FAIL"]
    tested = sum(1 for *_, v in cells if v in ("PASS", "FAIL"))
    return f"Trust tests (Arun et al.): {len(failed)} of {tested} failed" + (
        f": {', '.join(failed)}." if failed else "."
    )


def shortcut_finding(ctx: Context) -> str | None:
    sc = ctx.run(SHORTCUT)
    if isinstance(sc, Missing) or "verdict" not in sc.columns:
        return None
    found = sc[sc.verdict.astype(str) == "shows the shortcut"]
    return (
        f"Planted shortcut: {len(found)} of {len(sc)} explainers show the marker the shortcut model learned "
        f"(more mass on it than under the control model, paired bootstrap CI above zero): "
        f"{', '.join(found.method) or 'none'}."
    )


def findings(ctx: Context) -> list[str]:
    """The summary's sentences, in order (none for an analysis the store cannot give)."""
    out = [
        f(ctx) for f in (comparison_finding, gap_finding, explainer_finding, trust_finding, shortcut_finding)
    ]
    return [s for s in out if s]
