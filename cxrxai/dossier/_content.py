"""The dossier's sections after the summary, in reading order: each a list of report views (the
numbers ``cxrxai report`` prints), the figures the app's pages draw from them, and why any view is
missing. The summary (``_findings``) and the limitations and provenance (``_appendix``) read what
these ran."""

from __future__ import annotations

import pandas as pd

from ..present import gallery, viz
from ..summaries.hints import THRESHOLDS_FILL
from ._views import Context, Figure, Gallery, Missing, Table, Text, View, section

__all__ = ["HUMAN_BENCHMARK", "PERFORMANCE", "RANKING", "RATES", "SHORTCUT", "TRUST", "comparison_view",
           "disagreements_view", "gaps_view"]

_RATES = ("n_pos", "tpr", "tpr_lower", "tpr_upper", "n_neg", "fpr", "fpr_lower", "fpr_upper", "fnr", "small")
_CHEXCLUSION = "Seyyed-Kalantari et al. 2021 (CheXclusion); Wilson 95% CIs"
PERFORMANCE = View("performance", "AUROC and AUPRC per finding, TPR and FPR at the threshold",
                   reference="AUROC 95% CI as the interval column says; AUPRC: logit interval (Boyd et al. "
                             "2013), chance = prevalence",
                   columns=("label", "n_positive", "n_negative", "auroc", "lower", "upper", "interval",
                            "auprc", "auprc_lower", "auprc_upper", "threshold", "tpr", "fpr"))
RATES = {by: View("subgroup-tpr", f"TPR / FPR / FNR by {by.replace(',', ' × ')}", {"by": by},
                  columns=("label", *by.split(","), *_RATES), reference=_CHEXCLUSION)
         for by in ("sex", "age_bin", "sex,age_bin")}
_GAP_COLUMNS = ("grouping", "label", "rate", "group", "n_group", "value", "against", "n_against",
                "value_against", "diff", "lower", "upper", "p", "p_adjusted", "flagged", "too_wide")
_COMPARISON_COLUMNS = ("label", "grouping", "group", "metric", "n", "new", "old", "diff", "lower", "upper",
                       "p", "p_adjusted", "worse", "better", "explained_by")


def _gap_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Flagged gaps first, then by p: the comparisons nearest to significance."""
    return df.sort_values(["flagged", "p", "grouping", "label", "group"],
                          ascending=[False, True, True, True, True])


def gaps_view(ctx: Context) -> View:
    return View("subgroup-gaps", "Subgroup gaps: each group against the rest of its grouping",
                {"correction": ctx.correction}, rows=_gap_rows, limit=25, columns=_GAP_COLUMNS,
                reference="score test, Newcombe 1998 hybrid score 95% CI; corrected over the whole family")


def _worst_first(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values(["worse", "better", "p_adjusted", "p"], ascending=[False, False, True, True])


def comparison_view(ctx: Context) -> View:
    return View("model-comparison", f"{ctx.model_id} (new) against {ctx.vs} (old), paired on shared images",
                {"vs": ctx.vs, "correction": ctx.correction}, rows=_worst_first, limit=30,
                columns=_COMPARISON_COLUMNS,
                reference="AUROC: DeLong et al. 1988, paired; TPR / FPR: McNemar 1947, paired, Wald 95% CI")


def disagreements_view(ctx: Context) -> View:
    return View("model-disagreements", "Shared cases where the two models disagree most", {"vs": ctx.vs},
                columns=("label", "image_id", "sex", "age_bin", "ground_truth", "prob", "prob_old",
                         "prob_diff", "predicted", "predicted_old"))


@section("comparison", "Against the model it replaces", order=15)
def comparison_section(ctx: Context) -> list:
    if not ctx.vs:
        return [Text("No model to compare with: `python -m cxrxai dossier … --vs OLD_MODEL` audits this "
                     "model against the one it replaces, on the images both predicted.")]
    view = comparison_view(ctx)
    blocks: list = [ctx.table(view)]
    cmp = ctx.run(view)
    if not isinstance(cmp, Missing):
        blocks.append(Figure("New − old with 95% CIs", viz.comparison_forest(cmp)))
    return [*blocks, ctx.table(disagreements_view(ctx))]


@section("data", "Data", order=20)
def data_section(ctx: Context) -> list:
    """The data audit: films read and skipped, rescaling, orientation, demographics, label matches."""
    audit = ctx.audit()
    if not audit.datasets:
        return [Missing("the data audit", audit.empty or "the store holds no dataset; load one with "
                        "`python -m cxrxai precompute --dataset …` (or `import-predictions`)")]
    blocks: list = [Text("What cxrxai did to each dataset's films, labels and demographics "
                         f"(`python -m cxrxai audit-data --store {ctx.store.path}`).")]
    for dataset in audit.datasets:
        head = f"Dataset {dataset.dataset} ({dataset.source}, {dataset.n_images:,} images)"
        blocks.append(Text(head, "h3"))
        for part in dataset.sections:
            blocks.append(Text(f"{part.title}. " + " ".join(part.lines or (part.empty or "",))))
            if len(part.table):
                note = f"{len(part.table):,} rows; the first 20 shown" if len(part.table) > 20 else ""
                table = part.table.head(20).reset_index(drop=True)
                blocks.append(Table(View("audit-data", part.title), table, note))
    return blocks


@section("performance", "Performance", order=30)
def performance_section(ctx: Context) -> list:
    perf = ctx.table(PERFORMANCE)
    blocks: list = [perf]
    if isinstance(perf, Table):
        from ..summaries import roc_table

        blocks.append(Figure("AUROC per finding (95% CI)", viz.auroc_bars(ctx.run(PERFORMANCE))))
        roc = roc_table(ctx.store, ctx.model_id)
        blocks.append(Figure("ROC curves", viz.roc_curves(roc, ctx.run(PERFORMANCE))))
    return [*blocks, Text("Thresholds: " + _thresholds(ctx))]


def _thresholds(ctx: Context) -> str:
    t = ctx.store.thresholds(ctx.model_id)
    if t.empty:
        return f"none stored: TPR and FPR are not defined; {THRESHOLDS_FILL}"
    return "; ".join(f"{r.label} {r.threshold:.4g} ({r.method}{', ' + str(r.split) if r.split else ''})"
                     for r in t.itertuples())


@section("fairness", "Fairness", order=40)
def fairness_section(ctx: Context) -> list:
    blocks: list = [ctx.table(gaps_view(ctx))]
    rates = ctx.run(RATES["sex"])
    if not isinstance(rates, Missing):
        blocks.append(Figure("TPR by sex (Wilson 95% CI)", viz.rate_bars(rates, ["sex"], rate="tpr")))
    blocks += [ctx.table(view) for view in RATES.values()]
    blocks.append(ctx.table(View("underdiagnosis", "No Finding under/overdiagnosis by sex", {"by": "sex"},
                                 reference="Seyyed-Kalantari et al. 2021, Nat Med")))
    blocks.append(ctx.table(View("explanation-auc-subgroups", "Explanation AUC by sex (true positives)",
                                 reference="Bel Bordes 2023, Fig. 5")))
    return blocks


#: The views the summary's findings read too (the same frames: each is run once per document).
RANKING = View("explainer-ranking", "Explainer ranking, paired bootstrap against the best",
               reference="Saporta et al. 2022")
HUMAN_BENCHMARK = View("human-benchmark", "Grad-CAM against the human benchmark (% decrease)",
                       reference="Saporta et al. 2022, Fig. 2")
SHORTCUT = View("shortcut", "The planted shortcut: explainers' mass on the marker",
                columns=("method", "shortcut_n", "shortcut_share", "control_share", "difference", "lower",
                         "upper", "verdict"))
TRUST = View("trust", "Trust tests: PASS / FAIL with the means and p behind each",
             reference="Arun et al. 2021, Table 2")
_EXPLANATIONS = (
    View("explainers", "Localization per explainer and finding (true positives)",
         reference="Bel Bordes 2023, Table 1",
         columns=("explainer", "label", "n", "iou", "iou_sd", "hit", "hit_sd", "pla", "pla_sd", "roc_auc",
                  "roc_auc_sd")),
    RANKING,
    View("localization", "Grad-CAM mIoU per finding", reference="Saporta et al. 2022, Fig. 2"),
    HUMAN_BENCHMARK,
    View("occlusion-sweep", "Occlusion patch / stride sweep", reference="Bel Bordes 2023, Fig. 3",
         columns=("patch", "stride", "maps", "seconds_median", "timing", "timed_maps", "cases_scored", "iou",
                  "iou_lower", "iou_upper", "roc_auc", "roc_auc_lower", "roc_auc_upper")),
    View("geometry", "Localization ~ lesion geometry (OLS, Bonferroni)",
         reference="Saporta et al. 2022, Table 1"),
    View("confidence", "Localization ~ model confidence", reference="Saporta et al. 2022, Table 2"),
    SHORTCUT,
)


@section("explanations", "Explanations", order=50)
def explanations_section(ctx: Context) -> list:
    notes = _explanation_notes(ctx)
    return [*[ctx.table(v, notes.get(v.report, "")) for v in _EXPLANATIONS], _gallery(ctx)]


def _explanation_notes(ctx: Context) -> dict[str, str]:
    """The captions the Benchmark and Geometry pages print beside the same tables (one function each)."""
    from ..summaries import box_geometry_caveat, findings_without_rows, ranking_caption

    notes = {"explainer-ranking": ranking_caption(ctx.store, **_n_boot(ctx.options(RANKING))),
             "geometry": box_geometry_caveat(ctx.store) or ""}
    table = ctx.run(_EXPLANATIONS[0])
    if not isinstance(table, Missing):
        slice_ = ctx.options(_EXPLANATIONS[0]).get("slice", "true_positive")
        notes["explainers"] = findings_without_rows(ctx.store, ctx.model_id, table, slice_) or ""
    return notes


def _n_boot(options: dict) -> dict:
    """The ``n_boot`` option a view was run with, for its caption (none: the report's default)."""
    return {"n_boot": int(options["n_boot"])} if "n_boot" in options else {}


#: The gallery's explainer and metric: Grad-CAM's maps are stored for every case (maps at the
#: input's pixels, IG's say, are recomputed by the explorer and not stored).
GALLERY_METHOD, GALLERY_METRIC = "gradcam", "iou"


def _gallery(ctx: Context) -> Gallery | Missing:
    """Per finding, the best and the worst localized true positive, drawn as the explorer draws them."""
    from ..errors import CxrxaiError
    from ..reports import localization_cases

    what = f"the gallery of best and worst localized cases ({GALLERY_METHOD}, {GALLERY_METRIC})"
    try:
        cases = localization_cases(ctx.store, ctx.model_id, slice_="true_positive", method=GALLERY_METHOD)
    except CxrxaiError as err:
        ctx.missing.append(Missing(what, str(err)))
        return ctx.missing[-1]
    thresholds = ctx.store.thresholds(ctx.model_id).set_index("label")["threshold"].to_dict()
    pictures, failed = [], []
    for r in gallery.best_and_worst(cases, GALLERY_METRIC).itertuples():
        value = getattr(r, GALLERY_METRIC)
        caption = f"{r.label} · {r.rank} · {r.image_id} · {GALLERY_METRIC} {value:.3f} · P {r.prob:.3f}"
        try:
            picture = gallery.gallery_picture(ctx.store, ctx.model_id, r.image_id, r.label, GALLERY_METHOD,
                                              r.params_key, prob=r.prob, threshold=thresholds.get(r.label))
        except CxrxaiError as err:
            failed.append(f"{r.image_id} · {r.label}: {err}")
            continue
        pictures.append((caption, gallery.png_data_uri(picture)))
    note = ("Green: the Otsu segmentation the IoU was computed from; outlines: each reader's mask or box."
            + (f" Not drawn: {'; '.join(failed)}." if failed else ""))
    return Gallery(f"Best and worst localized true positives per finding ({GALLERY_METHOD}, "
                   f"{GALLERY_METRIC})", pictures, note)


_TRUST = (
    TRUST,
    View("fidelity", "Faithfulness, deletion / insertion, AUDCdiff", reference="Bel Bordes 2023, §2.4"),
)


@section("trust", "Trust and fidelity", order=60)
def trust_section(ctx: Context) -> list:
    from ..summaries import trust_gaps

    table = ctx.run(TRUST)
    note = "" if isinstance(table, Missing) else trust_gaps(ctx.store, ctx.model_id, table)
    return [ctx.table(v, note if v is TRUST else "") for v in _TRUST]
