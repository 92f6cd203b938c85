"""The explorer's multi-film layouts: compare side by side, and a grid of explainers.

Both draw one Plotly figure (``cxrxai.present.film.film_grid``): every map normalised the same way onto
one colour bar, zoom and pan shared between the panels of one film size, one legend for the
readers. Each panel is resolved like the single view (stored map, else live; cancellable), and
the figure is a fragment that polls itself while any of its maps computes. The figure is drawn by
the single view's film component (``pages/_film_view.py``), one film per panel: its display
controls act on every film in the browser (no rerun, the zoom kept); the server computes the
map's values only (scale, smoothing, the scale's top).
"""

from __future__ import annotations

import streamlit as st

from cxrxai.explain import Setting, get, method_names
from cxrxai.present import film, film_view
from pages import _common as ui
from pages import _film_view, _viewer
from pages._display import film_controls

__all__ = ["compare", "defaults", "grid"]

GRID_MAX = 6


def compare(store, model_id: str, case_id: str, label: str, case_ids: list[str]) -> None:
    """Two panels — two explainers, two models or two cases — in one figure with zoom synced. The
    left panel shows the page's Model, the right one has its own picker (starting at the page's)."""
    specs = []
    for slot, col in enumerate(st.columns(2)):
        def key(name: str, slot=slot) -> str:
            return f"{name}_{slot}"

        with col:
            options = list(dict.fromkeys([case_id, *case_ids]))
            case = (
                st.selectbox("Case", options, key=ui.kept(key("case"), case_id, allowed=options))
                if slot
                else case_id
            )
            methods = method_names()
            chosen_model, method, params = _viewer.model_and_method(
                store, model_id, key, first="occlusion" if slot and "occlusion" in methods else None,
                own_model=bool(slot))
            specs.append({"slot": str(slot), "model": chosen_model, "case": case, "method": method,
                          "params": params, "state": _viewer.state_of(store, chosen_model, case, label)})

    _fragment("compare")(store, case_id, label, specs, "compare")


def grid(store, model_id: str, case_id: str, label: str) -> None:
    """Several explainers of one case and model, at their default settings, on one normalisation."""
    def key(name: str) -> str:
        return f"{name}_grid"

    stored = [m for m in method_names() if m in set(store.stored_methods(model_id))]
    offered = [*stored, *(m for m in method_names() if m not in stored)]
    default = [m for m in stored if get(m).cost == "cheap"][:2] + [
        m for m in stored if get(m).cost == "costly"
    ][:2]
    chosen = st.multiselect(
        f"Explainers (at most {GRID_MAX}; stored ones first, the others are computed live)",
        offered,
        key=ui.kept(key("methods"), default or offered[:2], allowed=offered),
        format_func=lambda m: get(m).title,
        max_selections=GRID_MAX,
    )
    if not chosen:
        st.info("Choose at least one explainer.")
        return
    state = _viewer.state_of(store, model_id, case_id, label)
    specs = [{"slot": f"g{k}", "model": model_id, "case": case_id, "method": m, "params": defaults(m),
              "state": state} for k, m in enumerate(chosen)]
    _fragment("grid")(store, case_id, label, specs, "grid")


def defaults(method: str) -> dict:
    """The values the viewer's controls start at (the ones the demo stores)."""
    values: dict = {}
    for param in get(method).controls:
        values[param.name] = _viewer._offered(param, values)[1]
    return values


def _fragment(name: str):
    polling = st.session_state.get(f"polling_{name}", False)
    return st.fragment(_multi_view, run_every=_viewer.POLL_S if polling else None)


def _title(spec: dict) -> str:
    return f"{spec['model']} · {Setting.of(spec['method'], spec['params']).describe()}"


def _multi_view(store, case_id: str, label: str, specs: list[dict], name: str) -> None:
    """The display controls and the figure: one fragment (a display click reruns only this)."""
    def key(part: str) -> str:
        return f"{part}_{name}"

    ui.keep_all()  # a display click reruns this fragment alone: its values must survive navigation too
    kinds = [get(s["method"]).kind for s in specs]  # one set of controls: a pixel map's defaults if any
    kind = "pixel" if "pixel" in kinds else kinds[0]
    controls = film_controls(key, kind)  # the map's values are the server's; the rest is the browser's
    values, display = controls.values, controls.display
    readers = _viewer.readers_of(store, case_id, label, key)
    path, built = str(store.path), ui.version(store)
    resolved = [_viewer.resolve(store, s["model"], s["case"], label, s["method"], s["params"], s["slot"])
                for s in specs]
    _viewer.set_polling(name, any(r.source == "computing" for r in resolved))
    panels, truths, scores = [], [], []
    for s, r in zip(specs, resolved):
        gt = ui.truth(path, built, s["case"])
        truth = _viewer.ground_truth(gt, label, readers)
        truths.append(truth)
        img = ui.image(path, built, s["case"])
        scores.append(_viewer.scored(s["state"], r, gt, img.shape))
        decision = s["state"].decision
        title = f"{get(s['method']).title} · {s['model']}<br>{s['case']} · {decision.split(' (')[0]}"
        if "(threshold" in decision:  # the outcome after the probability; a missing one is said once
            title += f" · {decision.rsplit(' · ', 1)[-1]}"
        panels.append({"image": img, "saliency": r.shown, "dim": r.dim, "title": title,
                       "segmentation": scores[-1].mask, **truth})
    columns = 2 if len(panels) in (2, 4) or name == "compare" else min(3, len(panels))
    # kept per (panels, map values) like the single view's film: a poll with no new partial map and
    # the settings' own rerun redraw nothing; drawn at the opening display (the browser applies its own)
    # and without the films' pictures (the browser paints them from the data)
    signature = (path, built, label, columns, repr(sorted(values.items())), tuple(readers),
                 *((s["case"], p["title"], ui.digest(p["saliency"]), p["dim"], ui.digest(p["segmentation"]))
                   for s, p in zip(specs, panels)))
    opening = controls.opening
    fig, data = ui.session_memo(f"film_{name}", signature, lambda: (film.film_grid(
        panels, columns=columns, revision=film.view_revision(name, *(s["case"] for s in specs)),
        height_per_row=420 if columns == 2 else 320, **values, **opening, picture=False),
        [film_view.browser_film(p["image"], p["saliency"], **values, dim=p["dim"]) for p in panels]))
    _film_view.film_view(fig, data, controls.shown, key=key("film"))
    st.caption(f"Every map normalised the same way ({display['mode']}) onto one colour bar; zoom and pan are "
               "shared between panels of the same film size.")
    per_row = min(len(specs), 3)
    cells = [c for start in range(0, len(specs), per_row) for c in st.columns(per_row)]
    for s, r, truth, score, col in zip(specs, resolved, truths, scores, cells):
        with col:
            st.caption(f"**{_title(s)}** · {s['case']} · {s['state'].decision} · {r.source}")
            if r.shown is not None:
                st.caption(score.caption)
            _viewer.details(store, s["state"], s["method"], s["params"], display, truth, r, score, s["slot"])

