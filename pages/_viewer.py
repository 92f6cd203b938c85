"""The explorer's map panel: explainer controls, stored or live map, overlay, metrics, downloads."""

from __future__ import annotations

import io
import json

import numpy as np
import streamlit as st

from cxrxai import overlay
from cxrxai.explain import OcclusionGrid, get, method_names
from cxrxai.live import JobState, explain_job
from cxrxai.metrics import registry as metrics
from cxrxai.metrics.registry import score_map
from cxrxai.models.spec import preprocess
from pages import _common as ui

POLL_S = 0.5  # how often a computing map refreshes its progress and partial result
FIRST_WAIT_S = 0.8  # how long a rerun waits for a live job before it shows progress instead
MAP_WIDTH_PX = 560  # the overlay at most this wide (narrower in side-by-side columns)


def _offered(param, values: dict) -> tuple[list, object]:
    """The values a control offers (bounded by ``at_most``) and its initial value (the default, or the nearest below)."""
    options = list(param.control)
    if param.at_most and values.get(param.at_most) is not None:
        options = [v for v in options if v <= values[param.at_most]] or options[:1]
    if param.default in options:
        return options, param.default
    lower = [v for v in options if not isinstance(v, str) and v <= (param.default or 0)]
    return options, (lower[-1] if lower else options[0])


def _controls(method: str, key) -> dict:
    """One widget per parameter the registry marks as a viewer control (everything else keeps its default)."""
    controls = get(method).controls
    values: dict = {}
    for col, param in zip(st.columns(len(controls)) if controls else [], controls):
        options, initial = _offered(param, values)
        label = param.label or param.name
        if all(isinstance(v, str) for v in options):
            values[param.name] = col.radio(label, options, index=options.index(initial), horizontal=True,
                                           key=key(param.name), help=param.help)
        else:
            values[param.name] = col.select_slider(label, options, value=initial, key=key(param.name), help=param.help)
    return values


def _stored(store, model_id, case_id, label, method, params) -> np.ndarray | None:
    index = store.map_index(model_id=model_id, image_id=case_id, label=label, method=method)
    for r in index.itertuples():
        stored_params = json.loads(r.params)
        if all(stored_params.get(k) == v for k, v in params.items()):
            return ui.stored_map(str(store.path), ui.version(store), model_id, case_id, label, method, r.params_key)
    return None


def panel(store, model_id: str, case_id: str, label: str, *, slot: int) -> None:
    def key(name: str) -> str:
        return f"{name}_{slot}"

    models = store.models()["model_id"].tolist()
    c1, c2 = st.columns(2)
    chosen_model = c1.selectbox("Model", models, index=models.index(model_id), key=key("model"))
    methods = method_names()
    first = "occlusion" if slot and "occlusion" in methods else methods[0]
    method = c2.selectbox("Explainer", methods, index=methods.index(first), key=key("method"),
                          format_func=lambda m: get(m).title)
    c2.caption(get(method).reference)
    params = _controls(method, key)
    d1, d2, d3 = st.columns(3)
    mode = d1.radio("Show", overlay.DISPLAY_MODES, horizontal=True, key=key("mode"))
    alpha = d2.slider("Opacity", 0.0, 1.0, 0.45, 0.05, key=key("alpha"))
    cmap = d3.selectbox("Colour map", list(overlay.COLORMAPS), key=key("cmap"))
    gt = ui.truth(str(store.path), ui.version(store), case_id)
    readers = sorted({r for (lab, r) in gt["masks"] if lab == label})
    # Keyed by case and finding: every new case starts with all of its readers shown (one key for
    # all cases would carry an empty choice over from a case without ground truth).
    shown = st.multiselect("Ground truth (reader)", readers, default=readers, key=key(f"readers_{case_id}_{label}"))
    # The map is a fragment: while a live job runs it polls itself every POLL_S seconds without
    # re-running the page, and stops polling once the job has finished.
    polling = st.session_state.get(key("polling"), False)
    view = st.fragment(_map_view, run_every=POLL_S if polling else None)
    view(store, chosen_model, case_id, label, method, params, mode, alpha, cmap, shown, slot)


def _set_polling(slot: int, on: bool) -> None:
    """Switch the map fragment's self-polling; the switch needs one full rerun to take effect."""
    if st.session_state.get(f"polling_{slot}", False) != on:
        st.session_state[f"polling_{slot}"] = on
        st.rerun()


def _map_view(store, model_id, case_id, label, method, params, mode, alpha, cmap, readers, slot) -> None:
    path, built = str(store.path), ui.version(store)
    img = ui.image(path, built, case_id)
    gt = ui.truth(path, built, case_id)
    masks = [(label, m) for (lab, r), m in gt["masks"].items() if lab == label and r in readers]
    saliency = _stored(store, model_id, case_id, label, method, params)
    source = "stored"
    if saliency is None:
        saliency, source = _live(store, model_id, case_id, label, method, params, slot)
    _set_polling(slot, source == "computing")
    rgb = overlay.render_case(img, saliency, mode=mode, alpha=alpha, colormap=cmap, masks=masks)
    # A film-sized view: the whole map, its scores and the sliders fit one screen.
    st.image(rgb, caption=f"{method} {params or ''} · {source}", width=MAP_WIDTH_PX)
    if saliency is None:
        return
    truth = next((m for (lab, r), m in gt["masks"].items() if lab == label and r == "gt"), np.zeros(img.shape, bool))
    s = score_map(saliency, truth)
    for col, name in zip(st.columns(3), ("iou", "hit", "roc_auc")):
        metric, value = metrics.get(name), s[name]
        shown = "—" if np.isnan(value) else ("yes" if value else "no") if name == "hit" else f"{value:.3f}"
        col.metric(metric.label, shown, help=f"{metric.help}; against the reference reader (gt). {metric.reference}")
    c1, c2 = st.columns(2)
    with c1:
        ui.download_png(rgb, f"{case_id}-{label}-{method}.png", key=f"png_{slot}")
    with c2:
        buf = _npy(saliency)
        st.download_button("Download map (.npy)", buf, file_name=f"{case_id}-{label}-{method}.npy", key=f"npy_{slot}")


def _live(store, model_id, case_id, label, method, params, slot):
    row = store.models().set_index("model_id").loc[model_id]
    model = ui.model_for(store, model_id)
    if model is None:
        return None, "live recomputation unavailable"
    x = preprocess(ui.image(str(store.path), ui.version(store), case_id), model.spec).to(model.device)
    job = ui.worker().submit(explain_job(model, x, model.spec.label_index(label), method, params,
                                         owner=f"{ui.session_owner()}:{slot}", case_key=(str(store.path), case_id),
                                         weights_path=str(row["weights_path"])))
    job.wait(FIRST_WAIT_S)  # fast explainers finish here, with no polling at all
    current = job.result if job.state == JobState.DONE else job.partial
    value = current.to_map() if isinstance(current, OcclusionGrid) else current
    if job.state == JobState.DONE:
        device = model.device.type.upper()
        return value, f"recomputed live on {device} in {job.seconds:.2f} s"
    if job.state == JobState.FAILED:
        st.error(f"Recomputation failed: {job.error}")
        return None, "failed"
    if job.state == JobState.CANCELLED:
        st.warning("Cancelled. Change a setting to recompute.")
        return value, "cancelled (partial)"
    done, total = job.progress
    st.progress(done / total if total else 0.0, text=f"{job.stage or job.state} · {done}/{total} windows" if total else
                f"{job.state}… ({ui.worker().queue_length()} queued)")
    if st.button("Cancel", key=f"cancel_{slot}"):
        job.cancel()
    return value, "computing"


def _npy(m: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(m, np.float32))
    return buf.getvalue()
