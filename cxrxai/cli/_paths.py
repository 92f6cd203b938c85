"""The paths a user gives on the command line, declared with what each must be and checked before
any work (:func:`checked_paths`, called by :func:`cxrxai.cli.main` for every command).

An option declares its kind where it is added: ``action=given("store to write")``
(kinds: :data:`cxrxai.paths.PATH_KINDS`); the value is a :class:`~pathlib.Path`. A path that cannot
serve (missing, not writable, a file where a folder is expected) ends the command with a
:class:`~cxrxai.errors.PathError` naming the option, the path and what is wrong — before a dataset is
read, a model loaded or a store, a status or a lock file touched.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UnknownNameError
from ..paths import PATH_KINDS, check_path

__all__ = ["checked_paths", "given"]

_CHECKS = "_given_paths"  # the namespace attribute: dest → (kind, option as typed)


class _GivenPath(argparse.Action):
    kind = "file"

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, Path(values))
        checks = {**getattr(namespace, _CHECKS, {}), self.dest: (self.kind, option_string or self.dest)}
        setattr(namespace, _CHECKS, checks)


def given(kind: str) -> type[argparse.Action]:
    """The argparse action of a path option that must be ``kind`` (one of :data:`PATH_KINDS`)."""
    if kind not in PATH_KINDS:
        raise UnknownNameError("path kind", kind, PATH_KINDS)
    return type(f"Given_{kind}", (_GivenPath,), {"kind": kind})


def checked_paths(args: argparse.Namespace) -> None:
    """Check every path option the user gave (defaults are the program's own, not checked here)."""
    for dest, (kind, option) in getattr(args, _CHECKS, {}).items():
        check_path(getattr(args, dest), kind, option=option)
