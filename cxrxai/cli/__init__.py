"""``python -m cxrxai <command>``: the command line (the only layer that prints).

Commands live in ``_demo`` (train, demo, phantom), ``_maps`` (explain, bench, score, report) and
``_data`` (precompute, import-predictions, info, export), ``_audit`` (audit-data), ``_dossier``
(dossier) and ``_app`` (app);
each registers itself here; ``bench`` holds the timings the ``bench`` command prints (and
``benchmarks/`` reuses). Installed, the console script ``cxrxai`` is the same command line
(:func:`entry_point`).

Every command has ``--help``. Library errors (:class:`~cxrxai.errors.CxrxaiError`) end the
command with their message and exit status 2; nothing else is caught.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from ..errors import CxrxaiError

__all__ = ["COMMANDS", "commands", "entry_point", "main"]

#: command name → (help line, add-arguments function, run function). Later layers add theirs.
COMMANDS: dict[
    str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
] = {}


def command(name: str, help_: str, add: Callable[[argparse.ArgumentParser], None]):
    def register(run: Callable[[argparse.Namespace], int]):
        COMMANDS[name] = (help_, add, run)
        return run

    return register


class Bars:
    """tqdm bars keyed by task name, fed by the library's ``progress(task, done, total)``."""

    def __init__(self):
        from tqdm import tqdm

        self._tqdm, self._bars = tqdm, {}

    def __call__(self, task: str, done: int, total: int) -> None:
        bar = self._bars.get(task)
        if bar is None or bar.total != total:
            if bar is not None:
                bar.close()
            bar = self._bars[task] = self._tqdm(total=total, desc=task, unit="it", dynamic_ncols=True)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()


def _phantom_config(args):
    from ..data.phantom import PhantomConfig

    kwargs = {}
    if getattr(args, "n_images", None):
        kwargs["n_images"] = args.n_images
    if getattr(args, "size", None):
        kwargs["size"] = args.size
    return PhantomConfig(**kwargs)


def _schedule(text: str) -> tuple[tuple[int, int], ...]:
    try:
        return tuple((int(r), int(e)) for r, e in (part.split(":") for part in text.split(",")))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"schedule {text!r} must look like '128:6,224:3' (resolution:epochs)"
        ) from None


def _param(text: str) -> tuple[str, object]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"parameter {text!r} must look like name=value (e.g. patch=32)")
    key, value = text.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def _add_phantom(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n-images", type=int, default=None, help="phantom cohort size (default 4300)")
    p.add_argument("--size", type=int, default=None, help="phantom image side in pixels (default 224)")


def _add_model_spec(p: argparse.ArgumentParser, *, required: bool, default: str = "") -> None:
    """``--model SPEC`` (one syntax for every command: :mod:`cxrxai.models.from_text`) and the
    options of an ARCH:CHECKPOINT model."""
    from ..models.from_text import MODEL_SPEC_HELP

    p.add_argument("--model", required=required, default=None, help=MODEL_SPEC_HELP + default)
    p.add_argument("--input-size", type=int, default=None,
                   help="input side in pixels of an ARCH:CHECKPOINT model (default 224, 299 for "
                        "inception_v3; the thesis's DenseNet-121 used 256)")
    p.add_argument("--trust-pickle", action="store_true",
                   help="ARCH:CHECKPOINT is a whole pickled model: loading it runs code from the file "
                        "(only files you trust)")


def _load_model(name: str | None, store=None, *, input_size: int | None = None, trust_pickle: bool = False):
    """The model ``--model`` names (:func:`cxrxai.models.stored.model_for`)."""
    from ..models.stored import model_for

    return model_for(name, store, input_size=input_size, trust_pickle=trust_pickle)


def _only_model(store) -> str:
    """The store's model with predictions, when there is exactly one."""
    from ..models.stored import only_model

    return only_model(store)


# --------------------------------------------------------------------------- entry

def build_parser(prog: str = "python -m cxrxai", *, only: str | None = None) -> argparse.ArgumentParser:
    """Every command with its help line, and the options of ``only`` alone: what a command's options
    need is imported when they are built (``precompute`` lists the stages and the explainers: torch
    and every pipeline module, ~2.5 s of CPU), so ``cxrxai app`` starts the server, and ``cxrxai
    --help`` lists the commands, without loading them (no command named, none runs)."""
    parser = argparse.ArgumentParser(prog=prog, description="Audit chest X-ray classifiers.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_, add, _) in commands().items():
        command_parser = sub.add_parser(name, help=help_, description=help_)
        if name == only:
            add(command_parser)
    return parser


def commands() -> dict:
    """Every command (its module registers it when first imported)."""
    from . import _app, _audit, _data, _demo, _dossier, _maps  # noqa: F401

    return COMMANDS


def main(argv: list[str] | None = None, *, prog: str = "python -m cxrxai") -> int:
    given = sys.argv[1:] if argv is None else argv
    named = given[0] if given and given[0] in commands() else None  # else the whole help, or its error
    args = build_parser(prog, only=named).parse_args(argv)
    from ._paths import checked_paths

    try:
        checked_paths(args)  # every path the user gave, before any work
        return COMMANDS[args.command][2](args)
    except CxrxaiError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def entry_point() -> None:
    """The ``cxrxai`` console script of an installed package."""
    sys.exit(main(prog="cxrxai"))
