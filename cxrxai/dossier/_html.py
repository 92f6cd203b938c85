"""One self-contained HTML file: styles inline, figures inline (plotly.js embedded once, only when
there is a figure), no request to any network; A4 print rules (each main section on a new page,
table rows and figures never split). Every table carries the report and options it shows
(``data-report``, ``data-options``) so a reader — or a test — can run the same command."""

from __future__ import annotations

import html
import json
import math
from importlib import resources

import pandas as pd

from ._views import Figure, Gallery, Missing, Table, Text

__all__ = ["CSS", "document", "format_value"]

CSS = """
@page { size: A4; margin: 14mm 12mm; }
body { font: 10.5pt/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2330;
       max-width: 190mm; margin: 0 auto; padding: 0 4mm; }
h1 { font-size: 20pt; margin: 6mm 0 2mm; } h2 { font-size: 15pt; border-bottom: 2px solid #2b5797;
       padding-bottom: 1mm; margin-top: 8mm; } h3 { font-size: 11.5pt; margin: 5mm 0 1mm; }
h2.section { break-before: page; } h2.section.first { break-before: auto; }
p.finding { border-left: 4px solid #2b5797; padding: 1mm 3mm; margin: 2mm 0; background: #f3f6fb; }
p.missing { border-left: 4px solid #c0392b; padding: 1mm 3mm; background: #fcf3f2; }
p.generated, p.note, caption .ref { color: #5a6372; font-size: 9pt; }
code, p.code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 9pt;
               word-break: break-all; }
table { border-collapse: collapse; margin: 2mm 0 4mm; font-size: 8pt; width: 100%; break-inside: auto; }
table.wide { font-size: 6.8pt; } .scroll { overflow-x: auto; }
caption { text-align: left; font-weight: 600; font-size: 10pt; padding-bottom: 1mm; }
caption .ref { font-weight: 400; }
th, td { border-bottom: 1px solid #d8dde6; padding: 0.5mm 1mm; text-align: right; vertical-align: top; }
th { background: #eef1f6; } td.text, th.text { text-align: left; }
tr { break-inside: avoid; } thead { display: table-header-group; }
tr.flag td { background: #fdecea; } .figure { break-inside: avoid; margin: 2mm 0 5mm; }
.gallery { display: grid; grid-template-columns: 1fr 1fr; gap: 3mm; }
.gallery figure { margin: 0; break-inside: avoid; } .gallery img { width: 100%; height: auto; }
.gallery figcaption { font-size: 8pt; color: #5a6372; }
dl.identity { display: grid; grid-template-columns: 42mm 1fr; gap: 0.5mm 3mm; font-size: 9.5pt; }
dl.identity dt { font-weight: 600; } dl.identity dd { margin: 0; word-break: break-all; }
"""


def format_value(value) -> str:
    """A cell as printed: 4 significant digits for a number (what a test reads back), a dash for a
    missing value, yes/no for a flag."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "–"
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "yes" if value else "no"
    if isinstance(value, int) or type(value).__name__.startswith("int"):
        return f"{int(value):,}".replace(",", "\u2009")
    if isinstance(value, float) or type(value).__name__.startswith("float"):
        return f"{float(value):.4g}"
    return str(value)


def _table(block: Table) -> str:
    frame, view = block.frame, block.view
    numeric = {
        c: pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
        for c in frame.columns
    }
    head = "".join(
        f'<th class="{"num" if numeric[c] else "text"}">{html.escape(str(c))}</th>' for c in frame.columns
    )
    rows = []
    for rec in frame.itertuples(index=False):
        flagged = any(bool(getattr(rec, c)) for c in ("flagged", "worse") if c in frame.columns)
        cells = "".join(
            f'<td class="{"num" if numeric[c] else "text"}">{html.escape(format_value(v))}</td>'
            for c, v in zip(frame.columns, rec)
        )
        rows.append(f'<tr{" class=flag" if flagged else ""}>{cells}</tr>')
    ref = f'<br><span class="ref">{html.escape(view.reference)}</span>' if view.reference else ""
    note = f'<p class="note">{html.escape(block.note)}</p>' if block.note else ""
    options = html.escape(json.dumps(view.options, sort_keys=True, default=str), quote=True)
    wide = " wide" if len(frame.columns) > 10 else ""
    return (f'<div class="scroll"><table class="view{wide}" data-report="{html.escape(view.report)}" '
            f'data-options="{options}"><caption>{html.escape(view.title)}{ref}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>{note}")


def _block(block, k: int) -> str:
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Missing):
        what, why = html.escape(block.what), html.escape(block.why)
        return f'<p class="missing"><strong>{what}</strong> — not shown: {why}</p>'
    if isinstance(block, Figure):
        div = block.figure.to_html(
            full_html=False,
            include_plotlyjs=False,
            div_id=f"figure-{k}",
            config={"displaylogo": False, "responsive": True},
        )
        return f'<div class="figure" aria-label="{html.escape(block.title)}">{div}</div>'
    if isinstance(block, Gallery):
        items = "".join(f'<figure><img src="{uri}" alt="{html.escape(text)}">'
                        f"<figcaption>{html.escape(text)}</figcaption></figure>"
                        for text, uri in block.pictures)
        note = f'<p class="note">{html.escape(block.note)}</p>' if block.note else ""
        return f'<h3>{html.escape(block.title)}</h3><div class="gallery">{items}</div>{note}'
    if isinstance(block, Text):
        if block.kind == "h3":
            return f"<h3>{html.escape(block.text)}</h3>"
        return f'<p class="{block.kind}">{html.escape(block.text)}</p>'
    if isinstance(block, str):  # already HTML (the summary's identity list)
        return block
    raise TypeError(f"unknown dossier block {type(block).__name__}")


def _plotly_js() -> str:
    return resources.files("plotly").joinpath("package_data/plotly.min.js").read_text(encoding="utf-8")


def document(title: str, sections: list[tuple[str, str, list]], generated: str) -> str:
    """The whole file: ``sections`` as (key, title, blocks) in reading order; ``generated`` is the
    one line that differs between two builds of the same store."""
    body, k, figures = [], 0, False
    for i, (key, heading, blocks) in enumerate(sections):
        cls = "section first" if i == 0 else "section"
        body.append(f'<section id="{key}"><h2 class="{cls}">{html.escape(heading)}</h2>')
        for block in blocks:
            figures |= isinstance(block, Figure)
            body.append(_block(block, k))
            k += 1
        body.append("</section>")
    script = f"<script>{_plotly_js()}</script>" if figures else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{CSS}</style>{script}</head><body>"
        f"<h1>{html.escape(title)}</h1><p class=\"generated\">{html.escape(generated)}</p>"
        + "\n".join(body)
        + "</body></html>\n"
    )
