"""The audit dossier: one self-contained HTML file a reviewer reads instead of the app.

``python -m cxrxai dossier --store S --model M [--vs M0] --out audit.html`` and the app's "Download the
audit dossier" button call :func:`build_dossier`. Its sections are views of the report registry
(:mod:`._views`), so every number is the one ``cxrxai report NAME`` prints; the summary's findings
(:mod:`._findings`) are sentences computed from those same frames. Sections register themselves
(:func:`section`), in reading order: Summary, the comparison with the model it replaces (``--vs``),
Data, Performance, Fairness, Explanations, Trust and fidelity, Limitations, Provenance.

The same store gives a byte-identical file but for its one "Generated" line.
"""

from __future__ import annotations

import html
import sys
import time
from pathlib import Path

from ..discovery import discover
from ..errors import StoreError
from ..store import Store
from . import _appendix, _content  # noqa: F401 — their sections register themselves
from ._appendix import package_versions
from ._findings import findings
from ._html import document
from ._views import SECTIONS, Context, Text, section

__all__ = ["SECTIONS", "build_dossier", "comparison_sentence", "section", "write_dossier"]


def _identity(ctx: Context) -> str:
    """The summary's facts: model (id, architecture, weights sha256), data, store, versions."""
    from ..summaries import prediction_table, resolve_split

    models = ctx.store.models()
    row = models[models.model_id == ctx.model_id].iloc[0]
    split = resolve_split(ctx.store, ctx.model_id, None) or "all"
    try:
        table = prediction_table(ctx.store, ctx.model_id)
        data = (
            f"{', '.join(sorted(table.dataset.dropna().unique()))}; split {split}: "
            f"{table.image_id.nunique():,} images of {table.patient_id.nunique():,} patients"
        )
    except StoreError as err:
        data = str(err)
    facts = {
        "model": ctx.model_id,
        "architecture": row.arch,
        "weights sha256": row.weights_sha256
        or "not recorded (predictions imported, or a store written before weights were hashed)",
        "compared with": ctx.vs or "—",
        "data": data,
        "store": str(ctx.store.path),
        "store version": f"schema v{ctx.store.schema_version()}, published "
        f"{ctx.store.meta('built_at') or 'never'}",
        "cxrxai": package_versions()["cxrxai"],
    }
    if ctx.vs:
        old = models[models.model_id == ctx.vs]
        if len(old):
            facts["compared with"] = (
                f"{ctx.vs} ({old.arch.iloc[0]}, weights sha256 {old.weights_sha256.iloc[0] or '—'})"
            )
    items = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>" for k, v in facts.items())
    return f'<dl class="identity">{items}</dl>'


def comparison_sentence(store: Store, model_id: str, vs: str, *, correction: str = "holm",
                        frame=None) -> str:
    """The dossier's first finding — is ``model_id`` worse than ``vs``, for anyone? — as the Compare
    page shows it (the same function; ``frame``: the ``model-comparison`` report the page already
    read with these options)."""
    from ._content import comparison_view
    from ._findings import comparison_finding

    ctx = Context(store, model_id, vs, correction=correction)
    if frame is not None:
        ctx.given(comparison_view(ctx), frame)
    return comparison_finding(ctx) or ""


@section("summary", "Summary", order=10, late=True)
def summary_section(ctx: Context) -> list:
    sentences = findings(ctx)
    return [_identity(ctx), Text("Findings", "h3"), *[Text(s, "finding") for s in sentences]]


def _check_models(store: Store, model_id: str, vs: str | None) -> None:
    models = store.models()
    known = models["model_id"].tolist() if len(models) else []
    for name in (model_id, vs):
        if name is not None and name not in known:
            raise StoreError(
                f"the store {store.path} has no model {name!r} (models: {', '.join(known) or 'none'})"
            )


def build_dossier(
    store: Store,
    model_id: str,
    *,
    vs: str | None = None,
    correction: str = "holm",
    generated: str | None = None,
) -> str:
    """The dossier of ``model_id`` (against ``vs`` when given) as one HTML string; ``generated`` is
    its one time-dependent line (default: now)."""
    from ..errors import UnknownNameError
    from ..metrics.comparison import CORRECTIONS

    if correction not in CORRECTIONS:
        raise UnknownNameError("multiple-comparison correction", correction, CORRECTIONS)
    _check_models(store, model_id, vs)
    ctx = Context(store, model_id, vs, correction=correction)
    order = sorted(SECTIONS.values(), key=lambda s: (s.order, s.key))
    built = {}
    # A late section (the summary, limitations, provenance) reads what the others ran: built after them.
    for s in sorted(order, key=lambda s: (s.late, s.order, s.key)):
        built[s.key] = s.build(ctx)
    stamp = generated or time.strftime("Generated %Y-%m-%d %H:%M:%S %z")
    title = f"Audit dossier — {model_id}" + (f" against {vs}" if vs else "")
    return document(title, [(s.key, s.title, built[s.key]) for s in order], stamp)


def write_dossier(store: Store, model_id: str, out: str | Path, **options) -> Path:
    """Write :func:`build_dossier` to ``out`` (atomically: a reader never sees half a file)."""
    out = Path(out)
    text = build_dossier(store, model_id, **options)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return out


# A contributor's section in a module of its own (cxrxai/dossier/mysection.py) registers when found.
discover(sys.modules[__name__], "@section(")
