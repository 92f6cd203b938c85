"""The explorer's map panel: explainer controls, stored or live map, overlay, metrics, downloads.

One module though past 300 lines: a panel's controls, its stored-or-live map, the live job's
progress and what it draws and scores share one slot's widget keys and one
:class:`~cxrxai.present.panel.PanelState`, and change together; the explorer page calls
:func:`panel` once per slot.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from cxrxai.explain import OcclusionGrid, Setting, get, method_names
from cxrxai.live import JobState, case_job, pass_label, warm_job
from cxrxai.metrics import registry as metrics
from cxrxai.present import film, film_png, film_view
from cxrxai.present.panel import PanelScore, PanelState, reference_truth, score_panel
from pages import _common as ui
from pages import _film_view
from pages._display import film_controls

__all__ = ["model_and_method", "panel", "readers_of", "resolve", "scored", "warm"]

#: How often a computing map refreshes its progress and partial result. Each refresh costs the
#: server and the browser a redraw on the one core the live worker leaves them (2 cores), and a
#: click waits behind it: going from 0.5 s to 1 s took a click during live occlusion from 1.3 s
#: to 0.9 s (median, benchmarks/live_latency.py).
POLL_S = 1.0
#: How often a partial map is redrawn while it computes (a film redraw costs the browser far more
#: than the progress bar does).
PARTIAL_EVERY_S = 2.5
FIRST_WAIT_S = 0.8  # how long a rerun waits for a live job before it shows progress instead


def _offered(param, values: dict) -> tuple[list, object]:
    """The values a control offers (bounded by ``at_most``) and its initial value (the default, or
    the nearest below)."""
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
        label, k = param.label or param.name, ui.kept(key(param.name), initial, allowed=options)
        if all(isinstance(v, str) for v in options):
            values[param.name] = col.radio(label, options, horizontal=True, key=k, help=param.help)
        else:
            values[param.name] = col.select_slider(label, options, key=k, help=param.help)
    return values


def _stored(store, model_id, case_id, label, method, params) -> np.ndarray | None:
    """The stored map of exactly this setting (resolved for the model as a build resolves it), if any."""
    path, built = str(store.path), ui.version(store)
    key = Setting.of(method, params, spec=ui.model_spec(path, built, model_id)).key
    keys = {k for _, k in ui.stored_settings(path, built, model_id, case_id, label, method)}
    return ui.stored_map(path, built, model_id, case_id, label, method, key) if key in keys else None


def _live_model(store, model_id: str) -> tuple[str, str | None] | None:
    """(spec JSON, weights path) of a model live maps can be computed with; None for imported predictions."""
    row = ui.models(str(store.path), ui.version(store)).set_index("model_id").loc[model_id]
    if row["arch"] == "imported":
        return None
    return str(row["spec"]), None if pd.isna(row["weights_path"]) else str(row["weights_path"])


def _as_map(value):
    """A live job's result or partial as a 2-D map (occlusion results are window grids)."""
    return value.to_map() if isinstance(value, OcclusionGrid) else value


def warm(store, model_id: str) -> None:
    """Load the model where live maps are computed before anyone asks for one (once per weights file)."""
    live = _live_model(store, model_id)
    if live is not None:
        ui.worker().submit(warm_job(*live))


def model_and_method(store, model_id: str, key, *, first: str | None = None, own_model: bool = False
                     ) -> tuple[str, str, dict]:
    """Model, explainer and the explainer's parameters of one panel (widgets keyed by ``key``).

    A panel's model is the page's Model; with ``own_model`` (the compare layout's second panel) it
    has a picker of its own, which starts at the page's Model. Never two pickers for one panel."""
    c1, c2 = st.columns(2)
    chosen_model = model_id
    if own_model:
        models = ui.models(str(store.path), ui.version(store))["model_id"].tolist()
        chosen_model = c1.selectbox("This panel's model", models,
                                    key=ui.kept(key("model"), model_id, allowed=models),
                                    help="starts at the page's Model; every number in this panel is this "
                                         "model's")
    methods = method_names()
    method = c2.selectbox(
        "Explainer",
        methods,
        key=ui.kept(key("method"), first or methods[0], allowed=methods),
        format_func=lambda m: get(m).title,
    )
    c2.caption(get(method).reference)
    return chosen_model, method, _controls(method, key)


def readers_of(store, case_id: str, label: str, key) -> list[str]:
    """The readers chosen for display (all of them at first, per case and finding)."""
    gt = ui.truth(str(store.path), ui.version(store), case_id)
    readers = sorted(
        {r for (lab, r) in gt["masks"] if lab == label}
        | {r for lab, r, _ in gt["boxes"] if lab == label}
        | {r for lab, r, _ in gt["points"] if lab == label}
    )
    # Keyed by case and finding: every new case starts with all of its readers shown (one key for
    # all cases would carry an empty choice over from a case without ground truth).
    return st.multiselect(
        "Ground truth (reader)", readers, default=readers, key=key(f"readers_{case_id}_{label}")
    )


def state_of(store, model_id: str, case_id: str, label: str) -> PanelState:
    """A panel's model with that model's probability, threshold and outcome on the case
    (:func:`pages._cache.panel_state`): every number a panel prints comes from this."""
    return ui.panel_state(str(store.path), ui.version(store), model_id, case_id, label)


def panel(store, model_id: str, case_id: str, label: str, *, slot: int, url=None) -> None:
    """One film with its explainer, as a fragment: a click on the explainer or its settings reruns
    this panel only, not the page's filters and case table (nothing of the page is sent again);
    ``url()`` writes the page's URL (a fragment's rerun runs nothing of the page)."""
    st.fragment(_panel)(store, model_id, case_id, label, slot, url)


def _panel(store, model_id: str, case_id: str, label: str, slot: int, url) -> None:
    def key(name: str) -> str:
        return f"{name}_{slot}"

    ui.keep_all()  # as the shell does before a page draws: this rerun's values survive navigation
    _, method, params = model_and_method(store, model_id, key)
    if url is not None:
        url()
    # The display controls and the map are one fragment: a display click (the Map toggle, the
    # opacity) reruns only this panel, not the page's filters and case table; while a live job
    # runs the fragment polls itself every POLL_S seconds and stops once the job has finished.
    polling = st.session_state.get(key("polling"), False)
    view = st.fragment(_map_view, run_every=POLL_S if polling else None)
    view(store, state_of(store, model_id, case_id, label), method, params, slot)


def set_polling(slot: str, on: bool) -> None:
    """Switch a map fragment's self-polling; the switch needs one full rerun to take effect."""
    if st.session_state.get(f"polling_{slot}", False) != on:
        st.session_state[f"polling_{slot}"] = on
        st.rerun()


@dataclass
class Resolved:
    """One panel's map: the finished or partial map (None while nothing exists yet), what is drawn
    (the previous map, dimmed, while a new one computes), its source, and the job while it runs."""

    saliency: np.ndarray | None
    shown: np.ndarray | None
    dim: float
    source: str
    job: object | None = None


def resolve(store, model_id, case_id, label, method, params, slot) -> Resolved:
    """The stored map of these settings, else a live one (submitted, finished, partial or cancelled)."""
    saliency = _stored(store, model_id, case_id, label, method, params)
    source, job = "stored", None
    if saliency is None:
        saliency, source, job = _live(store, model_id, case_id, label, method, params, slot)
    shown, dim = saliency, 1.0
    # the previous map stays, dimmed, until the new one arrives
    if saliency is None and source == "computing":
        shown, dim = st.session_state.get(f"last_map_{slot}"), 0.35
    # a partial map: redrawn at most every PARTIAL_EVERY_S (the progress bar every poll)
    elif source == "computing":
        held, now = st.session_state.get(f"partial_{slot}"), time.monotonic()
        if held is not None and held[0] == job.key and now - held[1] < PARTIAL_EVERY_S:
            shown = held[2]
        else:
            st.session_state[f"partial_{slot}"] = (job.key, now, saliency)
    elif saliency is not None:
        st.session_state[f"last_map_{slot}"] = saliency
    return Resolved(saliency, shown, dim, source, job)


def ground_truth(gt: dict, label: str, readers) -> dict:
    """The chosen readers' masks, boxes and points of one finding, as the film functions take them."""
    return {"masks": {r: m for (lab, r), m in gt["masks"].items() if lab == label and r in readers},
            "boxes": [(r, b) for lab, r, b in gt["boxes"] if lab == label and r in readers],
            "points": [(r, pt) for lab, r, pt in gt["points"] if lab == label and r in readers]}


def scored(state: PanelState, r: Resolved, gt: dict, shape: tuple[int, int]) -> PanelScore:
    """The panel's segmentation and scores (one library call, memoized per map: a display click or
    a poll scores nothing again); a partial map is neither."""
    partial = "still computing" if r.job is not None else None
    if r.source.startswith("cancelled"):
        partial = "cancelled"
    truth = reference_truth(gt["masks"], state.label, shape)
    return ui.session_memo("scores", (state, ui.digest(r.saliency), ui.digest(truth), partial),
                           lambda: score_panel(state, r.saliency, truth, partial=partial), size=8)


def _map_view(store, state: PanelState, method, params, slot) -> None:
    def key(name: str) -> str:
        return f"{name}_{slot}"

    ui.keep_all()  # a display click reruns this fragment alone: its values must survive navigation too
    model_id, case_id, label = state.model_id, state.case_id, state.label
    st.markdown(f"**{model_id}** · {state.decision}")
    kind = get(method).kind
    controls = film_controls(key, kind)  # the map's values are the server's; the rest is the browser's
    values = controls.values
    readers = readers_of(store, case_id, label, key)
    path, built = str(store.path), ui.version(store)
    img = ui.image(path, built, case_id)
    gt = ui.truth(path, built, case_id)
    r = resolve(store, model_id, case_id, label, method, params, slot)
    set_polling(str(slot), r.source == "computing")
    truth = ground_truth(gt, label, readers)
    score = scored(state, r, gt, img.shape)
    # The figure and the browser's data depend on the map and its values only: a display click
    # never reaches here, and the settings' own rerun (for the export) sends the same figure,
    # drawn at the opening settings (the browser applies its own at once), without its picture:
    # the browser paints the film from the data (no blend or PNG on the server, 128 kB less sent).
    opening = controls.opening
    signature = (path, built, model_id, case_id, label, ui.digest(r.shown), r.dim,
                 repr(sorted(values.items())), tuple(readers), ui.digest(score.mask))
    fig, data = ui.session_memo(f"film_{slot}", signature, lambda: (film.film_figure(
        img, r.shown, **truth, segmentation=score.mask, revision=film.view_revision(case_id), **values,
        **{**opening, "alpha": opening["alpha"] * r.dim}, picture=False),
        film_view.browser_film(img, r.shown, **values, dim=r.dim)))
    _film_view.film_view(fig, data, controls.shown, key=key("film"))
    st.caption(f"{model_id} · {Setting.of(method, params).describe()} · {r.source}")
    if r.shown is not None:
        st.caption(score.caption)
    details(store, state, method, params, controls.display, truth, r, score, slot)


def details(store, state: PanelState, method, params, display, truth, r: Resolved, score: PanelScore,
            slot) -> None:
    """Under a film: progress and Cancel while computing, then the scores and the downloads."""
    if r.job is not None:  # scores and downloads wait for the finished (or cancelled) map
        _progress(r.job, method, params, slot)
        return
    if r.saliency is None:
        return
    model_id, case_id, label = state.model_id, state.case_id, state.label
    img = ui.image(str(store.path), ui.version(store), case_id)
    _scores(score)
    setting = Setting.of(method, params)
    what = setting.describe()
    stem = f"{case_id}-{label}-{model_id}-{method}{setting.slug()}".replace(" ", "_")
    saliency = r.saliency
    legend = (f"{case_id} · {label} · model {model_id} · {state.decision}", f"{what} · {r.source}",
              f"colour map {display['colormap']}, opacity {display['alpha']:g}, "
              f"clear below {display['floor']:g}")

    def png() -> np.ndarray:  # what the film shows, at the film's own resolution
        return film_png.film_png(img, saliency, **truth, segmentation=score.mask, legend=legend, **display)

    c1, c2 = st.columns(2)
    with c1:
        ui.download_png(png, f"{stem}.png", key=f"png_{slot}")
    with c2:
        st.download_button(
            "Download map (.npy)",
            lambda: _npy(saliency),
            file_name=f"{stem}.npy",
            key=f"npy_{slot}",
            on_click="ignore",
        )


def _scores(score: PanelScore) -> None:
    """The numbers the panel's segmentation was scored with (none for a map that was not scored)."""
    if not score.scores:
        return
    names = metrics.metric_names(view="cases")
    for col, name in zip(st.columns(len(names)), names):
        metric, value = metrics.get(name), score.scores[name]
        yes_no, segmented = metric.category == "pointing", metric.category == "overlap"
        shown = "—" if np.isnan(value) else ("yes" if value else "no") if yes_no else f"{value:.3f}"
        why = "" if not np.isnan(value) else " (no segmentation: see the caption above)" if (
            segmented and score.mask is None) else " (no lesion of this finding on this image)"
        col.metric(
            metric.label,
            shown,
            help=f"{metric.help}{why}; against the reference reader (gt). {metric.reference}",
        )


def _live(store, model_id, case_id, label, method, params, slot):
    """(map or partial or None, what it is, the job while it runs). A cancelled request shows its
    partial map and is not submitted again until a setting changes."""
    live = _live_model(store, model_id)
    if live is None:
        return None, "live recomputation unavailable (predictions imported without a model)", None
    # Ids only: the worker's child reads, preprocesses and explains the image (no model in this process).
    job = case_job(str(store.path), case_id, label, method, params, model_spec=live[0], weights_path=live[1],
                   owner=f"{ui.session_owner()}:{slot}")
    cancelled = st.session_state.get(f"cancelled_{slot}")
    if cancelled is not None and cancelled[0] == job.key:
        st.warning("Cancelled: the partial map is shown. Change a setting to compute again.")
        return cancelled[1], "cancelled (partial)", None
    submitted = ui.worker().submit(job)
    # new: fast explainers finish here, with no polling at all (a running job is not waited on)
    if submitted is job:
        job.wait(FIRST_WAIT_S)
    job = submitted
    current = job.result if job.state == JobState.DONE else job.partial
    value = _as_map(current)
    if job.state == JobState.DONE:
        return value, f"recomputed live on {ui.worker().device_name()} in {job.seconds:.2f} s", None
    if job.state == JobState.FAILED:
        st.error(f"Recomputation failed: {job.error}")
        return None, "failed", None
    if job.state == JobState.CANCELLED:
        st.session_state[f"cancelled_{slot}"] = (job.key, value)
        return value, "cancelled (partial)", None
    return value, "computing", job


def _progress(job, method: str, params: dict, slot: int) -> None:
    """Under the map: what is being computed, how far, and Cancel."""
    counts = job.counts  # one read: the counts and the pass they belong to
    finished, done, total = counts
    two_pass = get(method).progressive is not None and params.get("stride") != params.get("patch")
    if total or finished:
        unit = "windows" if get(method).progressive is not None else get(method).unit
        text = f"{get(method).title} · {pass_label(counts, two_pass=two_pass, unit=unit)}"
    else:
        text = f"{get(method).title} · {job.state}… ({ui.worker().queue_length()} queued)"
    c1, c2 = st.columns([5, 1])
    c1.progress(done / total if total else 0.0, text=text)
    if c2.button("Cancel", key=f"cancel_{slot}"):
        job.cancel()
        job.wait(5.0)  # the worker stops within one window batch
        st.session_state[f"cancelled_{slot}"] = (job.key, _as_map(job.partial))
        st.rerun()


def _npy(m: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(m, np.float32))
    return buf.getvalue()
