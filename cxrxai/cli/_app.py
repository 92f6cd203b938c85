"""``cxrxai app``: the Streamlit app, from a checkout or an installed package, from any directory."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .. import paths
from ..errors import StoreError
from . import command
from ._paths import given

__all__: list[str] = []


def _add_app(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        action=given("store to read"),
        default=None,
        help="store to open (default: the demo store under the cxrxai home, its quick phase built first "
        "when missing, under a minute; the app builds the rest of the evidence in the background)",
    )
    p.add_argument("--port", type=int, default=8501, help="port to serve on (default 8501)")
    p.add_argument(
        "streamlit_args",
        nargs=argparse.REMAINDER,
        help="after --, options for `streamlit run` (e.g. -- --server.address 0.0.0.0; read the README's "
        "'Serving' section first)",
    )


@command("app", "run the Streamlit app on a store (default: the embedded demo)", _add_app)
def _app(args) -> int:
    store = _store_to_open(args.store)
    app = paths.app_dir()
    extra = [a for a in args.streamlit_args if a != "--"]
    env = {**os.environ, "CXRXAI_STORE": str(store), paths.HOME_ENV: str(paths.home())}
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app / "app.py"),
        "--server.port",
        str(args.port),
        *extra,
    ]
    # This process becomes the server, run where app.py is: a signal to `cxrxai app` (Ctrl-C, a service
    # manager's SIGTERM) reaches the server itself, which a child would have outlived, serving on; and
    # Streamlit reads the shipped .streamlit/config.toml from its working directory (the user's own
    # directory gets nothing written to it).
    sys.stdout.flush()
    sys.stderr.flush()
    os.chdir(app)
    os.execve(sys.executable, cmd, env)
    return 0  # not reached: execve replaces this process


def _store_to_open(store: Path | None) -> Path:
    if store is not None:
        store = store.expanduser().resolve()
        if not store.is_file():
            raise StoreError(f"no store at {store}; build one with `cxrxai precompute --store {store} ...`, "
                             "or leave out --store to open the demo")
        return store
    store = paths.demo_store()
    if not store.is_file():
        from . import main

        print(f"building the demo store's quick phase at {store} (under a minute, once)", file=sys.stderr)
        store.parent.mkdir(parents=True, exist_ok=True)  # the home, on a first start (--store is checked)
        status = main(["demo", "--phase", "quick", "--store", str(store)])
        if status != 0:
            raise StoreError(f"the demo build ended with status {status}; nothing to open at {store}")
    return store
