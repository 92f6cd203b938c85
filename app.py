"""cxrxai — entry point: the app's frame (page config, password gate, sidebar, navigation) and the
chosen page; no computation here. The frame's parts live in ``pages/_shell.py`` so that a page
reached before routing existed gets the same one (see ``require_app`` there)."""

if __name__ == "__main__":  # Streamlit runs the app as __main__; the live worker's spawned child runs
    # this file as __mp_main__ and must import no page: its st.cache_data functions, decorated outside
    # a runtime, would each log "No runtime found" at every server start
    from pages._shell import app_shell, routing

    page = app_shell()
    with routing():
        page.run()
