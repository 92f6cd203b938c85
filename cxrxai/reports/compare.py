"""Claims that groups, or two models, differ — each with its test, its n and the family it is
corrected within (:mod:`cxrxai.metrics.comparison`).

* ``subgroup-gaps`` — within one model: each group's TPR and FPR against the rest of its grouping
  (sex, age bin, sex × age bin), per finding; Holm (or Benjamini–Hochberg) over the whole family.
* ``model-comparison`` — a model against the one it replaces (``vs``), on the images both predicted:
  AUROC (DeLong, paired), TPR and FPR at each model's own threshold (McNemar, paired), per finding,
  overall and per group, and localization per explainer (paired t-test on the same positive cases);
  one family, corrected as above. ``worse`` (with ``explained_by``) answers "is the new model worse
  for anyone?".
* ``model-disagreements`` — the shared cases where the two models' probabilities differ most.

One module though past 300 lines: the three reports share how a claim is stated (its test, its n,
its family's correction: ``_family``) and the images two models share (``_shared``), and change
when those do.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import StoreError
from ..labels import NO_FINDING
from ..metrics import comparison, fairness
from ..store import Store
from ..summaries import prediction_table
from ._cases import localization_cases
from ._registry import report
from .subgroups import no_group_reason, require_decisions

__all__ = ["GROUPINGS", "groupings", "metric_label", "model_comparison", "model_disagreements",
           "subgroup_gaps"]

#: The groupings of a fairness family, as an option spells them ("*" joins an intersection).
GROUPINGS = "sex,age_bin,sex*age_bin"


def groupings(text: str | list[str]) -> list[list[str]]:
    """``"sex,age_bin,sex*age_bin"`` → ``[["sex"], ["age_bin"], ["sex", "age_bin"]]``."""
    parts = text if isinstance(text, list) else str(text).split(",")
    return [[c.strip() for c in p.split("*") if c.strip()] for p in parts if p.strip()]


def _name(cols: list[str]) -> str:
    return " × ".join(cols)


def _group_label(row, cols: list[str]) -> str:
    return " · ".join(str(row[c]) for c in cols)


def _family(out: pd.DataFrame, correction: str, alpha: float) -> pd.DataFrame:
    """The family's corrected p-values, its size and its correction, on every row."""
    p_adj, reject = comparison.adjust(out["p"].to_numpy(float), method=correction, alpha=alpha)
    tested = int(np.isfinite(out["p"].to_numpy(float)).sum())
    return out.assign(
        p_adjusted=p_adj, significant=reject, family=tested, correction=comparison.CORRECTIONS[correction]
    )


_RATE_COUNTS = {"tpr": ("tp", "n_pos"), "fpr": ("fp", "n_neg")}


@report("subgroup-gaps", "each group's TPR / FPR against the rest of its grouping, family-corrected")
def subgroup_gaps(
    store: Store,
    model_id: str,
    *,
    groups: str = GROUPINGS,
    correction: str = "holm",
    alpha: float = 0.05,
    useful_width: float = 0.2,
    split: str | None = None,
) -> pd.DataFrame:
    """Per finding, rate and group of each grouping: the group's rate minus the rest of the grouping's
    (a two-group grouping compares its two groups once), Newcombe's 95 % interval and the score
    test, corrected over every comparison made (``correction``: ``holm`` or ``fdr_bh``).
    ``flagged``: significant after correction; ``too_wide``: the 95 % interval is wider than
    ``useful_width`` (a gap that size could be missed: said, never flagged by width alone).
    ``df.attrs["skipped"]`` names the groupings without any value, and why."""
    table = prediction_table(store, model_id, split=split)
    table = require_decisions(table[table.label != NO_FINDING], model_id)
    rows, skipped = [], {}
    for cols in groupings(groups):
        missing = [c for c in cols if c not in table.columns]
        if missing or table.dropna(subset=cols).empty:
            skipped[_name(cols)] = (
                f"unknown column {missing}"
                if missing
                else no_group_reason(store, table.image_id.unique(), cols[0])
            )
            continue
        rates = fairness.subgroup_rates(table, cols)
        rows += _gap_rows(rates, cols)
    if not rows:
        raise StoreError(
            f"model {model_id!r} has no group to compare: "
            + "; ".join(f"{k}: {v}" for k, v in skipped.items())
        )
    out = _family(pd.DataFrame(rows), correction, alpha)
    out["width"] = out["upper"] - out["lower"]
    out["too_wide"] = out["width"] > useful_width
    out.attrs["skipped"] = skipped
    return out.rename(columns={"significant": "flagged"})


def _gap_rows(rates: pd.DataFrame, cols: list[str]) -> list[dict]:
    rows = []
    for label, lab in rates.groupby("label", sort=True):
        groups = lab.reset_index(drop=True)
        pairs = groups.iloc[:1] if len(groups) == 2 else groups  # two groups: one comparison, not two
        for rate, (k, n) in _RATE_COUNTS.items():
            total_k, total_n = int(groups[k].sum()), int(groups[n].sum())
            for _, g in pairs.iterrows():
                k1, n1 = int(g[k]), int(g[n])
                k2, n2 = total_k - k1, total_n - n1
                against = _group_label(groups.iloc[1], cols) if len(groups) == 2 else "the rest"
                test = comparison.two_proportions(k1, n1, k2, n2)
                rows.append(
                    {
                        "grouping": _name(cols),
                        "label": label,
                        "group": _group_label(g, cols),
                        "against": against,
                        "rate": rate,
                        "n_group": n1,
                        "value": k1 / n1 if n1 else np.nan,
                        "n_against": n2,
                        "value_against": k2 / n2 if n2 else np.nan,
                        **test,
                        "test": "score test, Newcombe 95% CI",
                    }
                )
    return rows


def _shared(store: Store, model_id: str, vs: str, split: str | None) -> pd.DataFrame:
    """One row per image × finding both models predicted: each one's prob and decision, truth and
    demographics (joined by image id and label, never by order)."""
    if not vs or vs == model_id:
        models = store.models()
        others = [m for m in (models["model_id"].tolist() if len(models) else []) if m != model_id]
        what = (f"vs={vs!r} is the model itself" if vs else "no vs=MODEL_ID, the model it replaces")
        raise StoreError(
            f"comparing model {model_id!r} needs another model of the store, and got {what} (the store's "
            f"other models: {', '.join(others) or 'none'}); name it: `python -m cxrxai report "
            f"model-comparison --model {model_id} --option vs=OLD` or `python -m cxrxai dossier --model "
            f"{model_id} --vs OLD`; with no other model, predict the one it replaces into this store "
            "(`python -m cxrxai precompute --model …`)")
    new, old = prediction_table(store, model_id, split=split), prediction_table(store, vs, split=split)
    keep = ["image_id", "label", "prob", "predicted"]
    both = new.merge(old[keep], on=["image_id", "label"], suffixes=("", "_old"), validate="one_to_one")
    both = both[both.label != NO_FINDING].dropna(subset=["ground_truth"])
    if both.empty:
        raise StoreError(
            f"models {model_id!r} and {vs!r} share no labelled image × finding "
            f"({new.image_id.nunique():,} and {old.image_id.nunique():,} images, findings "
            f"{sorted(set(new.label))} and {sorted(set(old.label))}); predict both on one dataset "
            "(`python -m cxrxai precompute --model …` once per model into this store)"
        )
    return both


_MCNEMAR = "McNemar (paired), Wald 95% CI"
_TESTS = {"auroc": "DeLong (paired)", "tpr": _MCNEMAR, "fpr": _MCNEMAR}
_FIELDS = ("new", "old", "diff", "lower", "upper", "p")


class _Cases:
    """One finding's shared cases as arrays (truth, both models' probabilities and decisions), a group
    a boolean mask over them: a group, and a group without another's images, cost a mask each (at
    MIMIC-CXR size, selecting rows of an Arrow-backed frame by image id took a minute a dossier)."""

    def __init__(self, lab: pd.DataFrame):
        self.y = lab["ground_truth"].to_numpy(int)
        self.prob, self.prob_old = lab["prob"].to_numpy(float), lab["prob_old"].to_numpy(float)
        self.pred = lab["predicted"].to_numpy(float)
        self.pred_old = lab["predicted_old"].to_numpy(float)
        self.decided = np.isfinite(self.pred) & np.isfinite(self.pred_old)


def _compare_rows(c: _Cases, mask: np.ndarray, metrics=("auroc", "tpr", "fpr")) -> list[dict]:
    """AUROC (DeLong), TPR and FPR (McNemar) of the new model against the old on the cases ``mask``."""
    rows = []
    if "auroc" in metrics:
        d = comparison.delong_paired(c.y[mask], c.prob[mask], c.prob_old[mask])
        rows.append({"metric": "auroc", "n": int(mask.sum()), "n_pos": d["n_pos"], "n_neg": d["n_neg"],
                     **{k: d[k] for k in _FIELDS}, "test": _TESTS["auroc"]})
    for metric, cls in (("tpr", 1), ("fpr", 0)):
        if metric not in metrics:
            continue
        part = mask & c.decided & (c.y == cls)
        r = comparison.paired_rates(c.pred[part].astype(int), c.pred_old[part].astype(int))
        counts = {"n": r["n"], "n_pos": r["n"] if cls else 0, "n_neg": 0 if cls else r["n"]}
        rows.append({"metric": metric, **counts, **{k: r[k] for k in _FIELDS}, "test": _TESTS[metric]})
    return rows


def _groups(lab: pd.DataFrame, groups: str) -> list[tuple[str, str, np.ndarray]]:
    """(grouping, group, mask) of every group of every grouping, after "all"."""
    out = [("all", "all", np.ones(len(lab), bool))]
    for cols in groupings(groups):
        if not all(c in lab.columns for c in cols):
            continue
        known = lab[cols].notna().all(axis=1).to_numpy()
        parts = [lab[c].astype(str).to_numpy(dtype=object) for c in cols]
        keys = parts[0] if len(parts) == 1 else np.array([" · ".join(t) for t in zip(*parts)], dtype=object)
        out += [(_name(cols), key, known & (keys == key)) for key in sorted(set(keys[known]))]
    return out


@report("model-comparison", "a model against the one it replaces on shared images: DeLong, McNemar, "
                            "family-corrected", pairs=True)
def model_comparison(store: Store, model_id: str, *, vs: str = "", groups: str = "sex,age_bin",
                     localization: str = "iou", correction: str = "holm", alpha: float = 0.05,
                     split: str | None = None) -> pd.DataFrame:
    """``model_id`` (new) against ``vs`` (old) per finding, overall and per group of each grouping:
    AUROC by DeLong's paired test, TPR on the positives and FPR on the negatives at each model's own
    threshold by McNemar's test; and, per explainer both models' maps were scored with, the
    ``localization`` metric (e.g. IoU; "" for none) on the positive cases both scored, by a paired
    t-test. Every comparison is in one family (``correction``). ``worse``: the new model is
    significantly worse after correction (lower AUROC, TPR or localization, higher FPR); ``better``
    the reverse.

    Groups of different groupings overlap (the women hold part of every age bin), so a difference
    confined to one group shows in every group holding its images. ``explained_by`` names, for a
    worse row, a smaller group of another grouping without whose images the difference is no longer
    significant (same test, uncorrected, ``p_without``; see :func:`_explain`): the answer to "worse
    for whom?" is the worse rows that nothing explains."""
    both = _shared(store, model_id, vs, split)
    rows, cases, masks = [], {}, {}
    for label, lab in both.groupby("label", sort=True):
        cases[label] = _Cases(lab)
        for grouping, group, mask in _groups(lab, groups):
            masks[(label, grouping, group)] = mask
            rows += [{"label": label, "grouping": grouping, "group": group, **r}
                     for r in _compare_rows(cases[label], mask)]
    rows += _localization_rows(store, model_id, vs, localization)
    out = _family(pd.DataFrame(rows), correction, alpha)
    higher = out["metric"].map(_higher_is_better)
    harm = np.where(higher, out["diff"] < 0, out["diff"] > 0)
    out["worse"] = out["significant"] & harm
    out["better"] = out["significant"] & ~harm & (out["diff"] != 0)
    out = _explain(out.drop(columns="significant"), cases, masks, alpha)
    out.attrs["shared_images"] = int(both.image_id.nunique())
    return out


def _higher_is_better(metric: str) -> bool:
    """A row's metric: fpr is better lower; a localization metric as the metric registry says."""
    if metric in ("auroc", "tpr", "fpr"):
        return metric != "fpr"
    from ..metrics import registry as metric_registry

    return metric_registry.get(metric.split(" · ")[0]).higher_is_better is not False


def _localization_rows(store: Store, model_id: str, vs: str, metric: str) -> list[dict]:
    """Per explainer both models were scored with and finding: ``metric`` of each model's map of the
    same positive case, paired (t-test); none when either model has no scored maps."""
    if not metric:
        return []
    methods = []
    for m in (model_id, vs):
        loc = store.table("localization", model_id=m) if store.has_table("localization") else pd.DataFrame()
        methods.append(set(loc.loc[loc.source == "explainer", "method"]) if len(loc) else set())
    rows = []
    for method in sorted(methods[0] & methods[1]):
        try:
            a, b = (localization_cases(store, m, slice_="positive", method=method) for m in (model_id, vs))
        except StoreError:
            continue
        if metric not in a.columns or metric not in b.columns:
            continue
        keys = ["image_id", "label"]
        pairs = a[[*keys, metric]].merge(b[[*keys, metric]], on=keys, suffixes=("", "_old")).dropna()
        for label, g in pairs.groupby("label", sort=True):
            r = comparison.paired_means(g[metric].to_numpy(float), g[f"{metric}_old"].to_numpy(float))
            rows.append({"label": label, "grouping": "all", "group": "all", "metric": f"{metric} · {method}",
                         "n": r["n"], "n_pos": r["n"], "n_neg": 0, **{k: r[k] for k in _FIELDS},
                         "test": "paired t-test (same positive cases)"})
    return rows


#: Smaller groups tried, per worse row, as the place its difference comes from.
EXPLAIN_TRIES = 3


def _explain(out: pd.DataFrame, cases: dict, masks: dict, alpha: float) -> pd.DataFrame:
    """``explained_by`` / ``p_without`` of each worse row: among the smaller groups of the other
    groupings whose difference points the same way, worse ones first, then the larger difference,
    the first of at most :data:`EXPLAIN_TRIES` without whose images the row's own test is no longer
    significant (a bounded search: at MIMIC-CXR size each try is a DeLong test on ~300,000 cases)."""
    explained, p_without = [""] * len(out), [np.nan] * len(out)
    harmful = np.where(out["metric"].map(_higher_is_better), out["diff"] < 0, out["diff"] > 0)
    candidates = out[harmful & (out.grouping != "all")].assign(rank=lambda d: ~d["worse"],
                                                               size=lambda d: -d["diff"].abs())
    for i, row in out[out["worse"]].iterrows():
        same = candidates[(candidates.label == row.label) & (candidates.metric == row.metric)
                          & (candidates.n < row.n) & (candidates.grouping != row.grouping)]
        mask = masks[(row.label, row.grouping, row.group)]
        for _, h in same.sort_values(["rank", "size", "grouping", "group"]).head(EXPLAIN_TRIES).iterrows():
            rest = mask & ~masks[(h.label, h.grouping, h.group)]
            (r,) = _compare_rows(cases[row.label], rest, (row.metric,))
            if not r["p"] < alpha:
                pos = out.index.get_loc(i)
                explained[pos], p_without[pos] = f"{h.grouping} {h.group}", r["p"]
                break
    return out.assign(explained_by=explained, p_without=p_without)


@report("model-disagreements", "the shared cases where two models' probabilities differ most",
        pairs=True)
def model_disagreements(store: Store, model_id: str, *, vs: str = "", top: int | None = 5,
                        split: str | None = None) -> pd.DataFrame:
    """Per finding, the ``top`` shared images (None: every one) with the largest |prob(new) −
    prob(old)|, with truth and each model's decision (ties broken by image id: the same store gives
    the same rows)."""
    both = _shared(store, model_id, vs, split).assign(prob_diff=lambda d: d["prob"] - d["prob_old"])
    both = both.assign(abs_diff=both["prob_diff"].abs()).sort_values(
        ["label", "abs_diff", "image_id"], ascending=[True, False, True])
    cols = ["label", "image_id", "sex", "age_bin", "ground_truth", "prob", "prob_old", "prob_diff",
            "predicted", "predicted_old"]
    chosen = both if top is None else both.groupby("label", sort=True).head(int(top))
    return chosen[cols].reset_index(drop=True)


def metric_label(metric: str) -> str:
    """How a ``model-comparison`` row's metric is printed: AUROC, TPR, FPR, or the localization
    metric and explainer as they are (``iou · gradcam``)."""
    return {"auroc": "AUROC", "tpr": "TPR", "fpr": "FPR"}.get(metric, metric)
