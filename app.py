"""cxrxai — entry point: the app's shell (page config, password gate, sidebar, navigation) and
the chosen page; no computation here. The shell lives in ``pages/_common.py`` so that a page
reached before routing existed gets the same one (see ``ui.require_app``)."""

from pages import _common as ui

page = ui.app_shell()
with ui.routing():
    page.run()
