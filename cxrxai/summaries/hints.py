"""How the missing evidence of a store gets filled: the one sentence a page or a report ends its
"there is nothing here yet" with, from the build's actual status (running, stopped, finished)."""

from __future__ import annotations

import json

from ..labels import NO_FINDING
from ..store import CAM_ONLY_META, Store
from ..store.status import BACKGROUND_ENV, background_mode, read_status

__all__ = [
    "FILLED_BY",
    "THRESHOLDS_FILL",
    "cannot_have",
    "comparison_hint",
    "fill_command",
    "fill_hint",
    "is_demo",
    "no_finding_truth",
    "resume_hint",
    "will_come",
]

#: How a model's missing thresholds get filled (a precompute of the test split alone has no
#: validation predictions to choose them on): the end of every "no decision" sentence.
THRESHOLDS_FILL = (
    "give them in a CSV of label,threshold rows by running the precompute again with it: "
    "`python -m cxrxai precompute ... --thresholds FILE` (or `python -m cxrxai import-predictions ... "
    "--thresholds FILE`); or predict a validation split with both classes (`python -m cxrxai precompute "
    "... --split all`) so they are chosen on it"
)


#: Where race and insurance come from, quoted wherever a store has none.
RACE_INSURANCE_SOURCE = (
    "race and insurance are read from MIMIC-IV's admissions.csv(.gz) (its race column, ethnicity before "
    "MIMIC-IV 2.0, and insurance) by the mimic layout, no other layout carries them: load MIMIC-CXR with "
    "--data-option mimic_iv=DIR holding that file (directly or under hosp/), with `python -m cxrxai "
    "precompute` or `import-predictions`")


def fill_command(
    store: Store, what: str = "predictions", *, explainers: str | None = "gradcam,gradcam++"
) -> str:
    """The command that fills ``what`` in this store: the demo build for the demo store, else a
    precompute (or an import, for predictions) with ``explainers`` (``None``: the option left out)."""
    if is_demo(store):
        return "python -m cxrxai demo"
    if what == "predictions":
        return "python -m cxrxai precompute --model ... (or import-predictions --predictions preds.csv)"
    if what == "thresholds":
        return "python -m cxrxai precompute --model ... --thresholds FILE (a CSV of label,threshold rows)"
    extra = {
        "trust": " --analyses trust",
        "fidelity": " --analyses fidelity",
        "sweep": " --analyses sweep",
    }.get(what, "")
    chosen = f" --explainers {explainers}" if explainers else ""
    return f"python -m cxrxai precompute --model ...{chosen}{extra}"


#: Which steps of a build fill which evidence (the names of the stages that write it, as a build's
#: plan names them), so a page can say when a running build will have it.
FILLED_BY = {"predictions": ("predictions",), "thresholds": ("thresholds",),
             "localization": ("localization (CAMs)", "localization"), "sweep": ("occlusion sweep",),
             "reader": ("second reader",), "geometry": ("geometry",), "trust": ("trust",),
             "fidelity": ("fidelity",), "shortcut": ("shortcut",)}
#: Evidence of no particular model (a step of any model fills it).
_ANY_MODEL = ("geometry", "shortcut")
_CAMS = ("gradcam", "gradcam++")
_RESUME = "python -m cxrxai demo --phase evidence"
_READ = object()


def fill_hint(store: Store, what: str = "predictions", model_id: str | None = None, *,
              method: str | None = None, status: dict | None = _READ, mode: str | None = None) -> str:
    """The one true sentence (its end) on how the missing ``what`` (a :data:`FILLED_BY` key) of
    ``model_id`` (``method``: of that explainer) gets filled, from the build's actual ``status``
    (default: the status file beside the store, :func:`~cxrxai.store.status.read_status`) and
    ``mode`` (``CXRXAI_BACKGROUND``: on, off or keep; default: the environment's).

    * a build computes it now → its round, step and stage and when it is expected; later in its
      plan → the step that computes it and where the build is now;
    * a stopped or failed build → how to resume it (the sidebar's Resume, or the command when
      ``CXRXAI_BACKGROUND=0`` keeps the app from doing it);
    * finished without it, or no build → the command that fills it (:func:`fill_command`);
    * a model the build gives its CAMs only (a second seed) → a model that has it now, else which
      one will have it and when;
    * the human benchmark (``reader``) → what fills it in this store (the demo's second reader, or
      which dataset's annotations would);
    * evidence no command gives this store (:func:`cannot_have`) → that, and why.
    """
    never = cannot_have(store, what)
    if never:
        return never
    status = read_status(store.path) if status is _READ else status
    mode = mode or background_mode()
    cam_only = json.loads(store.meta(CAM_ONLY_META) or "{}")
    if model_id in cam_only and not (what == "localization" and method in _CAMS) \
            and _step(status, what, model_id, method, start=1) is None:
        return _seed_hint(store, what, model_id, cam_only, method=method, status=status, mode=mode)
    hint = _build_hint(store, what, model_id, method=method, status=status, mode=mode)
    return f"{_reader_source(store)}; {hint}" if what == "reader" else hint


def _build_hint(store: Store, what: str, model_id: str | None, *, method, status: dict | None,
                mode: str) -> str:
    """:func:`fill_hint` for a model the build gives everything it computes."""
    if status is None:
        if mode == "off" and is_demo(store) and not store.meta("evidence_built_at"):
            return f"the app's background build is off ({BACKGROUND_ENV}=0): fill it with `{_RESUME}`"
        return f"fill it with `{fill_command(store, what)}`"
    step = _step(status, what, model_id, method, start=status.get("stage_index") or 1)
    if status.get("running"):
        return _running_hint(store, what, status, step)
    if status.get("state") in ("stopped", "failed"):
        return _resume_hint(store, status, step, mode)
    done = "the background build finished without it; " if status.get("plan") else ""
    return f"{done}fill it with `{fill_command(store, what)}`"


def _step(status: dict | None, what: str, model_id: str | None, method: str | None, *, start: int
          ) -> tuple[int, list] | None:
    """The first step (1-based, from ``start``) of the status's plan that fills ``what`` of ``model_id``."""
    names = FILLED_BY.get(what, ())
    if what == "localization" and method is not None and method not in _CAMS:
        names = ("localization",)  # the CAMs' own scoring step scores the CAMs only
    for k, (_round, _round_name, name, model) in enumerate((status or {}).get("plan") or [], start=1):
        if k >= start and name in names and (what in _ANY_MODEL or model_id is None or model == model_id):
            return k, [_round, _round_name, name, model]
    return None


def _where(status: dict, k: int, entry: list | None = None) -> str:
    """"round 1 of 2 (first look), step 15 of 42 (maps of demo-resnet18)" for step ``k`` of the plan."""
    r, round_name, name, model = entry or status["plan"][k - 1]
    text = f"step {k} of {status.get('stages') or len(status['plan'])} ({name} of {model})"
    rounds = status.get("rounds") or 0
    return (f"round {r} of {rounds} ({round_name}), " if rounds > 1 else "") + text


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "its ETA comes with the step's first finished item"
    return f"expected in about {max(1, round(seconds / 60))} min"


def _running_hint(store: Store, what: str, status: dict, step: tuple[int, list] | None) -> str:
    now = status.get("stage_index")
    if not status.get("plan") or not now:  # a precompute, or a demo build that has no plan (yet)
        precompute = str(status.get("phase", "")).startswith("precompute")
        if not precompute and not status.get("total"):  # neither a task of 0/0 nor "a evidence"
            return ("the background build is starting: once it has planned its steps this says which "
                    "computes it; what it computes shows here as it is published")
        task = f"{status.get('stage', '…')} {status.get('done', 0)}/{status.get('total', 0)}"
        who = status["phase"] if precompute else f"demo build ({status['phase']})"
        return (f"a {who} is writing this store now ({task}); what it computes "
                "shows here as it is published")
    if step is None:
        return (f"the background build running now ({_where(status, now)}) does not compute it; once it has "
                f"finished, fill it with `{fill_command(store, what)}`")
    if step[0] == now:
        return (f"the background build is computing it now: {_where(status, now)}, "
                f"{_minutes(status.get('eta_s'))}")
    _r, _name, name, model = status["plan"][now - 1]
    return (f"the background build computes it at {_where(status, *step)}, after step {step[0] - 1}; "
            f"it is at step {now} ({name} of {model}) now")


def _resume_hint(store: Store, status: dict, step: tuple[int, list] | None, mode: str) -> str:
    """A stopped or failed build: where it stopped and how to resume it under ``mode``."""
    now = status.get("stage_index")
    at = f"at {_where(status, now) if status.get('plan') and now else status.get('stage') or 'its start'}"
    why = (f"failed {at}: {status.get('error')}" if status.get("state") == "failed" else
           f"stopped {at}" + (f" ({status['stopped_by']})" if status.get("stopped_by") else ""))
    before = f", before {_where(status, *step)} that computes it" if step and step[0] != now else ""
    if str(status.get("phase", "")).startswith("precompute"):
        return f"the {status['phase']} writing this store {why}; run the same command again to resume it"
    how = (f"{BACKGROUND_ENV}=0 keeps the app from resuming it: resume it with `{_RESUME}`"
           if mode == "off" else f"resume it with Resume in the sidebar (or `{_RESUME}`)")
    return f"the background build {why}{before}; {how}"


def resume_hint(store: Store, status: dict, *, mode: str | None = None) -> str:
    """The sentence for a stopped or failed build (the sidebar's): where it stopped, why, and how to
    resume it under ``mode`` (``CXRXAI_BACKGROUND``; default: the environment's)."""
    text = _resume_hint(store, status, None, mode or background_mode())
    return text[0].upper() + text[1:] + "."


def _seed_hint(store: Store, what: str, model_id: str, cam_only: dict, *, method, status, mode) -> str:
    """A second training of a model (repeatability only): point to a model that has ``what`` now,
    else say which will have it and when."""
    serves = cam_only[model_id]
    head = (f"it is a second training of {serves!r}, kept for that model's repeatability, with its "
            "predictions and Grad-CAM / Grad-CAM++ maps and their scores only")
    others = sorted((m for m in store.models().model_id if m not in cam_only), key=lambda m: (m != serves, m))
    have = [m for m in others if _has(store, what, m, method)]
    if have:
        return f"{head}; pick {' or '.join(repr(m) for m in have)} here, which has it now"
    if not others:
        return head
    later = _build_hint(store, what, others[0], method=method, status=status, mode=mode)
    return f"{head}; {others[0]!r} will have it: {later}"


def _has(store: Store, what: str, model_id: str, method: str | None) -> bool:
    """Whether ``model_id`` has rows of ``what`` (aggregate queries; the human benchmark's rows)."""
    if what in ("predictions", "thresholds"):
        return bool(store.prediction_splits(model_id))
    if what == "sweep":
        return len(store.map_settings(model_id, method="occlusion")) > 1
    if what == "reader":
        return not store.table("localization", model_id=model_id, source="reader").empty
    if what == "trust":  # no params_key column: the rows themselves (hundreds)
        return not store.table("trust", model_id=model_id).empty
    if what not in ("localization", "fidelity"):
        return False
    scored = store.scored_settings(what, model_id)
    return not (scored[scored.method == method] if method else scored).empty


#: The source the demo build registers its dataset with (``pipeline.demo_cases.put_demo_dataset``).
DEMO_SOURCE = "cxrxai phantom"


def is_demo(store: Store) -> bool:
    """Whether ``store`` holds the phantom demo: a dataset named ``demo`` that the demo build
    registered, or built from a phantom configuration (a user's folder dataset given ``name=demo``
    is not the demo)."""
    ds = store.datasets()
    if ds.empty or "dataset" not in ds:
        return False
    demo = ds[ds["dataset"] == "demo"]
    by_source = DEMO_SOURCE in set(demo.get("source", []))
    return by_source or any("marker_probability" in str(c) for c in demo.get("config", []))


def _reader_source(store: Store) -> str:
    """What fills the human benchmark in this store: the demo's second reader, or the second readers
    of the store's own annotations (a store without them cannot have it: :func:`cannot_have`)."""
    if is_demo(store):
        return ("the demo's second reader (hb-synthetic: the reference masks redrawn with a reader's "
                "variation) fills it")
    readers = store.annotation_readers()
    others = readers[readers.reader != "gt"]
    names = ", ".join(f"{d}: {', '.join(g.reader.astype(str))}" for d, g in others.groupby("dataset"))
    return (f"the second readers of this store's annotations ({names}) fill it (the build's second "
            "reader step)")


def _no_second_reader(datasets: str) -> str:
    return (f"its datasets ({datasets}) have no second reader's annotations, only the reference (gt); a "
            "store of a dataset that has them can: CheXpert with CheXlocalize's second reader (`python -m "
            "cxrxai precompute --dataset chexpert ... --data-option chexlocalize=DIR` with "
            "hb_annotations_test.json in DIR) or VinDr-CXR (each radiologist a reader)")


def no_finding_truth(store: Store) -> str:
    """Why a model's No Finding output has no ground truth in ``store`` and how its datasets get one:
    a dataset whose labels have no No Finding (a folder's CSV without the column) names its labels;
    a folder dataset gets the column and a precompute again, another adapter's files carry none."""
    parts = []
    for d in store.datasets().itertuples():
        labels = [str(lab) for lab in (d.labels if d.labels is not None else [])]
        if any(lab.casefold() == NO_FINDING.casefold() for lab in labels):
            continue
        kind = str(d.source).split(" ")[0]
        head = f"Dataset {d.dataset} ({kind}) labels {', '.join(labels) or 'nothing'} and no {NO_FINDING!r}"
        parts.append(f"{head}: give it a {NO_FINDING!r} column in its CSV (1: a film with no finding), "
                     f"named in `--data-option labels=...,{NO_FINDING}`, and run `python -m cxrxai "
                     "precompute --dataset folder ...` again" if kind == "folder" else
                     f"{head}: its files carry no such label, so this store cannot have it for them")
    return "; ".join(parts) or (f"the datasets label {NO_FINDING!r} but leave it blank on these images "
                                "(`python -m cxrxai audit-data` lists the label matches)")


#: What a second training of a model gets from the demo build (its CAMs' maps and their scores).
_SEED_GETS = ("predictions", "thresholds", "localization")


def cannot_have(store: Store, what: str) -> str | None:
    """Why no command fills ``what`` (a :data:`FILLED_BY` key, or ``comparison``: repeatability and
    reproducibility) in this store, a user's own: the planted shortcut, the demo's experiment; the
    human benchmark, without a second reader's annotations; the comparison with another model,
    which ``precompute`` never makes. None when a command fills it (always, in the demo store)."""
    if is_demo(store):
        return None
    datasets = ", ".join(sorted(set(store.datasets().get("dataset", [])))) or "none"
    if what == "shortcut":
        return ("this store cannot have it: the planted shortcut is the demo's own experiment (a ring "
                "marker planted in its phantom films, a ResNet-18 fine-tuned on them against its control, "
                f"all in the demo store), and no command plants a marker in the films of {datasets}")
    if what == "reader" and (store.annotation_readers().reader == "gt").all():
        return f"this store cannot have it: {_no_second_reader(datasets)}"
    if what == "comparison":
        return ("this store cannot have it: repeatability (a second training of the same network) and "
                "reproducibility (another architecture) compare this model's maps with another model's on "
                "the same images, and `precompute` explains one model at a time; only the demo build "
                "trains and compares models of its own, in the demo store")
    return None


def comparison_hint(store: Store, model_id: str | None = None) -> str:
    """How repeatability and reproducibility (the trust table's comparison of ``model_id``'s maps
    with a second training of it and with another architecture) get filled in this store, or why
    they cannot be: in the demo, only a model with a second training (the build's
    :data:`~cxrxai.store.CAM_ONLY_META`) has repeatability."""
    never = cannot_have(store, "comparison")
    if never:
        return never
    seeds = json.loads(store.meta(CAM_ONLY_META) or "{}")
    if model_id is not None and seeds and model_id not in seeds.values():
        return (f"the demo build compares {model_id!r} with the demo's other architecture (reproducibility) "
                f"only: it trains a second seed of {', '.join(sorted(set(seeds.values())))} alone, so "
                f"{model_id!r} has no repeatability")
    return ("they need a second DenseNet-121 and a second architecture — `python -m cxrxai train --seed 1 "
            "--name demo-densenet121-seed1 && python -m cxrxai demo`")


def will_come(store: Store, what: str, model_id: str | None = None) -> bool:
    """Whether some command or build can still give ``model_id`` its ``what``: not when this store
    cannot have it (:func:`cannot_have`), nor for a second training of a model (repeatability only),
    which gets its predictions and its CAMs' scores and nothing else."""
    cam_only = json.loads(store.meta(CAM_ONLY_META) or "{}")
    return cannot_have(store, what) is None and not (model_id in cam_only and what not in _SEED_GETS)
