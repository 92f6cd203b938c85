"""The layers import downwards only, and every file and function stays small enough to read.

Layers (README, "Design"): the base modules; ``data``; ``metrics`` (pure numbers: never a model,
an explainer or the store); ``models``; ``store``; ``explain``; then ``pipeline`` and the
presentation modules that combine them; the CLI on top. Pages may import the library; the library
never imports Streamlit or the pages.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASE = {"errors", "labels", "demographic_groups", "paths", "stats", "validate", "postprocess", "discovery"}

#: Which cxrxai packages (or top-level modules) each one may import, besides itself.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "discovery": set(),  # which modules of a package register something
    "labels": {"errors"},
    "demographic_groups": {"errors"},  # the papers' groupings of recorded race and insurance values
    "paths": {"errors"},  # check_path's PathError
    "stats": {"errors"},
    "validate": {"errors"},
    "postprocess": {"errors", "validate"},
    "data": BASE,
    "metrics": BASE,
    "models": BASE | {"data", "metrics"},
    "store": BASE | {"models", "metrics"},  # the metric registry names the localization columns
    "explain": BASE | {"models"},
    "pipeline": BASE | {"data", "metrics", "models", "store", "explain"},
    "summaries": BASE | {"metrics", "store"},
    "reports": BASE | {"metrics", "store", "summaries", "explain"},  # explain: what a setting is called
    "audit": BASE | {"store"},
    # The audit dossier: views of the reports, the pages' figures, the data audit, in one document.
    "dossier": BASE | {"metrics", "store", "summaries", "reports", "present", "audit"},
    # Presentation (viz, film, overlay, display, exports, provenance, panel): what a page or the CLI shows.
    "present": BASE | {"data", "metrics", "store", "explain", "reports"},
    "live": BASE | {"data", "models", "store", "explain"},
    # The commands, and cli/bench.py: the explainers' timings `cxrxai bench` and benchmarks/ print.
    "cli": BASE | {"data", "metrics", "models", "store", "explain", "pipeline", "summaries", "reports", "present",
                   "live", "audit", "dossier"},
    "__main__": {"cli"},
    "": set(),
}


def _imports(path: Path) -> list[tuple[str, int]]:
    """(absolute module name, line) of every import in ``path``, relative ones resolved."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
                out += [(f"{mod}.{a.name}" if not node.module else mod, node.lineno) for a in node.names]
            else:
                out.append((node.module, node.lineno))
    return out


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _library_files() -> list[Path]:
    return sorted((ROOT / "cxrxai").rglob("*.py"))


def _violations(files) -> list[str]:
    bad = []
    for f in files:
        mine = _layer(_module_of(f))
        for module, line in _imports(f):
            top = module.split(".")[0]
            if top in ("streamlit", "pages"):
                bad.append(f"{f.relative_to(ROOT)}:{line} imports {module} (the library never imports the UI)")
            elif top == "cxrxai":
                other = _layer(module)
                if other and other != mine and other not in ALLOWED.get(mine, set()):
                    bad.append(f"{f.relative_to(ROOT)}:{line} ({mine}) imports {module} ({other})")
    return bad


def test_every_package_has_a_declared_layer():
    layers = {_layer(_module_of(f)) for f in _library_files()}
    assert layers <= set(ALLOWED), sorted(layers - set(ALLOWED))


def test_imports_run_down_the_layers_only():
    assert _violations(_library_files()) == []


def test_the_check_catches_an_upward_import(tmp_path):
    """A compute package importing the pipeline (the old cycle) is reported, with file and line."""
    pkg = ROOT / "cxrxai" / "metrics"
    fake = pkg / "_upward_probe.py"
    fake.write_text("from ..pipeline import run_stages\nimport streamlit\n")
    try:
        bad = _violations([fake])
    finally:
        fake.unlink()
    assert bad == ["cxrxai/metrics/_upward_probe.py:1 (metrics) imports cxrxai.pipeline (pipeline)",
                   "cxrxai/metrics/_upward_probe.py:2 imports streamlit (the library never imports the UI)"]


# --------------------------------------------------------------------------- sizes
#: A file: 400 physical lines. A function: 40 lines of logic, counted as logical lines (statements, the
#: formatter's layout aside: a call spread over eight lines for the 110-character limit is one line of logic).
MAX_FILE_LINES, MAX_FUNCTION_LINES, MAX_LINE_CHARS = 400, 40, 110


def _logic_lines(text: str, node: ast.AST) -> int:
    """Logical lines (statements) of a function that are not its docstring; blank lines and comments
    never count."""
    doc: set[int] = set()
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) \
            and isinstance(first.value.value, str):
        doc = set(range(first.lineno, first.end_lineno + 1))
    ends = {t.start[0] for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.NEWLINE}
    return sum(1 for i in ends if node.lineno <= i <= node.end_lineno and i not in doc)


def _sources() -> list[Path]:
    return [*_library_files(), *sorted((ROOT / "pages").glob("*.py")), ROOT / "app.py"]


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_files_and_functions_stay_small(path):
    text = path.read_text()
    lines = text.splitlines()
    assert len(lines) <= MAX_FILE_LINES, f"{len(lines)} lines"
    long = [f"{n.name} ({_logic_lines(text, n)} lines)" for n in ast.walk(ast.parse(text))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and _logic_lines(text, n) > MAX_FUNCTION_LINES]
    assert long == []
    wide = [i for i, line in enumerate(lines, 1) if len(line) > MAX_LINE_CHARS]
    assert wide == [], f"lines over {MAX_LINE_CHARS} characters: {wide}"


def test_the_size_check_counts_logic_lines_only():
    src = 'def f():\n    """Doc\n\n    more."""\n    # comment\n\n    x = g(1,\n          2)\n    return x\n'
    node = ast.parse(src).body[0]
    assert _logic_lines(src, node) == 3  # def, x = g(1, 2) over two lines, return
