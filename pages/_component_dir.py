"""Where a small static Streamlit component of the app is served from.

Streamlit serves a component from one directory. The app's components (the film,
``pages/_film_view.py``; the case grid, ``pages/_case_grid.py``) ship static files beside the pages
(no build step) and may need a file of an installed package (the film: Plotly's own
``plotly.min.js``), so each is assembled once under the home's cache, in a directory named after a
digest of its shipped files and of the packages' versions: an edit or an upgrade gets a new one.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from cxrxai import paths


def assembled(name: str, source: Path, files: tuple[str, ...], *, extra: dict[str, Path] | None = None,
              version: str = "") -> Path:
    """The directory ``components/<name>-<digest>/`` of the home's cache, with ``files`` of ``source``
    and ``extra`` (name in the directory → a file elsewhere, stamped by ``version``: the installed
    package's version), assembled on first use (in a staging directory renamed at the end, so a
    half-copied one is never served)."""
    extra = extra or {}
    stamp = hashlib.blake2b(version.encode(), digest_size=8)
    for file in files:
        stamp.update((source / file).read_bytes())
    target = paths.home() / "components" / f"{name}-{stamp.hexdigest()}"
    if not all((target / file).is_file() for file in (*files, *extra)):
        staging = target.with_name(target.name + ".part")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for file in files:
            shutil.copyfile(source / file, staging / file)
        for file, path in extra.items():
            shutil.copyfile(path, staging / file)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target
