"""The dossier's last two sections, from what the others ran: Limitations (intervals too wide to be
useful, demographics missing, labels unmatched, every analysis that could not be shown and why) and
the Provenance appendix (every view's report and options, thresholds and their source, seeds,
package versions, the command that rebuilds the file)."""

from __future__ import annotations

import json
import shlex
from importlib import metadata

import pandas as pd

from ..errors import CxrxaiError
from ..reports import REPORTS
from ._content import gaps_view
from ._views import Context, Missing, Table, Text, View, section

__all__ = ["PACKAGES", "command_line", "package_versions"]

#: The packages whose versions decide a number in the document.
PACKAGES = (
    "cxrxai",
    "torch",
    "torchvision",
    "captum",
    "numpy",
    "scipy",
    "pandas",
    "duckdb",
    "scikit-learn",
    "scikit-image",
    "statsmodels",
    "opencv-python-headless",
    "pydicom",
    "plotly",
)


def package_versions() -> dict[str, str]:
    """Installed versions; cxrxai's own from the package (a checkout has no installed metadata)."""
    import cxrxai

    out = {"cxrxai": cxrxai.__version__}
    for name in PACKAGES[1:]:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def command_line(ctx: Context, out: str = "audit.html") -> str:
    """The command that rebuilds this file."""
    parts = ["python", "-m", "cxrxai", "dossier", "--store", str(ctx.store.path), "--model", ctx.model_id]
    if ctx.vs:
        parts += ["--vs", ctx.vs]
    if ctx.correction != "holm":
        parts += ["--correction", ctx.correction]
    return shlex.join([*parts, "--out", out])


@section("limitations", "Limitations", order=80, late=True)
def limitations_section(ctx: Context) -> list:
    blocks: list = []
    gaps = ctx.run(gaps_view(ctx))
    if not isinstance(gaps, Missing):
        wide = gaps[gaps.too_wide]
        width = ctx.options(gaps_view(ctx))["useful_width"]
        blocks.append(
            Text(
                f"{len(wide)} of {len(gaps)} subgroup comparisons have a 95% CI wider than {width}: "
                "a gap of that size there can neither be shown nor ruled out (too few cases)."
            )
        )
        if len(wide):
            cols = ["grouping", "label", "rate", "group", "n_group", "diff", "lower", "upper", "width"]
            blocks.append(
                Table(
                    View("subgroup-gaps", "Comparisons too wide to be useful"),
                    wide.sort_values("width", ascending=False)[cols].head(30).reset_index(drop=True),
                    f"{len(wide):,} rows; the 30 widest shown" if len(wide) > 30 else "",
                )
            )
    blocks += _coverage(ctx) + _unmatched(ctx)
    if ctx.missing:
        blocks.append(Text("Analyses not shown, why, and the command that fills each:"))
        blocks += [Text(f"{m.what}: {m.why}", "missing") for m in ctx.missing]
    else:
        blocks.append(Text("Every analysis of this document had data."))
    return blocks


def _coverage(ctx: Context) -> list:
    """Demographics missing among the evaluated images."""
    from ..summaries import prediction_table

    try:
        table = prediction_table(ctx.store, ctx.model_id).drop_duplicates("image_id")
    except CxrxaiError:  # the performance section already says why the model has no predictions
        return []
    n = len(table)
    lines = [
        f"{col}: {int(table[col].isna().sum()):,} of {n:,} evaluated images have none"
        for col in ("sex", "age")
        if col in table.columns and table[col].isna().any()
    ]
    return (
        [Text("Demographics missing — " + "; ".join(lines)
              + " (they form no group; `audit-data` says why).")]
        if lines
        else [Text(f"Sex and age are known for all {n:,} evaluated images.")]
    )


def _unmatched(ctx: Context) -> list:
    """Model outputs scoring no dataset label and labels no output scores (the data audit's matches)."""
    lines, unknown = [], []
    for dataset in ctx.audit().datasets:
        part = dataset.section("label_matches")
        if part.empty:
            unknown.append(f"{dataset.dataset}: {part.empty}")
            continue
        rows = part.table[part.table["model_id"].isin([m for m in (ctx.model_id, ctx.vs) if m])]
        for how, col in (("unmatched output", "model_output"), ("unmatched label", "dataset_label")):
            names = rows.loc[rows["how"] == how, col].dropna().tolist()
            if names:
                lines.append(f"{dataset.dataset}: {len(names)} {how}(s) — {', '.join(map(str, names))}")
    blocks = [Text("Which model output scores which dataset label is not known — " + "; ".join(unknown))
              ] if unknown else []
    if lines:
        return [*blocks, Text("Labels and outputs not evaluated: " + "; ".join(lines) + ".")]
    if not unknown:
        blocks.append(Text("Every model output this document evaluates scores a dataset label, and every "
                           "label has an output."))
    return blocks


@section("provenance", "Provenance", order=90, late=True)
def provenance_section(ctx: Context) -> list:
    rows = [
        {
            "report": v.report,
            "what": REPORTS[v.report].reproduces,
            "shown as": v.title,
            "options": json.dumps(ctx.options(v), default=str, sort_keys=True),
            "reference": v.reference,
        }
        for v in ctx.ran
    ]
    versions = pd.DataFrame(list(package_versions().items()), columns=["package", "version"])
    return [
        Text(
            "Every table above is a `python -m cxrxai report NAME` with these options; its numbers are that "
            "command's, rounded for print."
        ),
        Table(View("provenance", "Reports and their options"), pd.DataFrame(rows)),
        Table(View("provenance", "Package versions"), versions),
        Text("Rebuild this file: " + command_line(ctx), "code"),
    ]
