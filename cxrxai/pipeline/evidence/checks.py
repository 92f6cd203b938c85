"""Which shipped rows each check recomputes, and the build stages that recompute them.

A check (:class:`Check`) names its table, the key of a row, which rows it recomputes (``select``)
and, for the sampled rows of one model (:class:`Sampled`), the stages that compute exactly those
rows in a new store: the same stage code as the demo build, over the sampled rows' unit (their
images, their maps, their case) and with the demo build's plan (:func:`~cxrxai.pipeline.demo.demo_plan`),
so the few rows of a sample cost seconds, not the build's hours. Every row kind the evidence
phase writes has a check: predictions, thresholds, each explainer's localization (the cheap CAMs,
the costly maps, the occlusion sweep's settings), the maps shipped at their explainer's grid, the
baselines and the second reader, the masks' geometry, trust, fidelity and the planted shortcut.

One module though past 300 lines: the table of checks (:data:`CHECKS`) and the recomputations it
names are read and changed together, one short function per row kind.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from ...data.demo import DemoData, lazy_demo
from ...data.phantom import PhantomConfig
from ...errors import EvidenceSnapshotError
from ...explain import Setting, get, method_names
from ...models.registry import load
from ...store import LOCALIZATION_KEY
from ..fidelity import _fidelity_rows, _main_setting, _mean_image
from ..maps import MapPlan, cam_stage, map_units, run_units
from ..predict import predictions_stage, thresholds_stage
from ..references import SCORED_IDS
from ..runner import Stage
from ..scoring import localization_stage
from ..shortcut import ShortcutPlan, shortcut_stage
from ..stages import get_stage
from ..trust import TRUST_IG, TrustPlan, trust_stage
from .provenance import PHANTOMS

__all__ = ["CHECKS", "Check", "Sampled", "checks_of", "cohort", "shortcut_plan"]


@dataclass(frozen=True)
class Sampled:
    """One model's sampled rows of a check (every sampled row where the check is not per model),
    the snapshot they come from, and where the weights and the phantoms are."""

    rows: pd.DataFrame
    folder: Path
    models_dir: Path
    data_dir: Path

    def shipped(self, table: str) -> pd.DataFrame:
        return pd.read_parquet(self.folder / f"{table}.parquet")


@dataclass(frozen=True)
class Check:
    """How rows of ``table`` are recomputed: their ``key`` columns, which rows (``select``: a mask
    of a table's rows; None: all), the ``stages`` over one model's sample (``shipped``: tables taken
    from the snapshot first); ``per_model`` False: one run over the demo model for every row."""

    table: str
    key: tuple[str, ...]
    stages: Callable[[Sampled], list[Stage]]
    shipped: tuple[str, ...] = ()
    select: Callable[[pd.DataFrame], pd.Series] | None = None
    per_model: bool = True
    #: the columns of what one computation pays for, when it computes several rows at once (a
    #: fidelity case: every method's rows share its faithfulness subsets and random-order curves);
    #: a sample then draws whole units (:func:`~.recompute.sample`). None: each row alone.
    unit: tuple[str, ...] | None = None

    def rows(self, table: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``table`` this check recomputes."""
        return table[self.select(table)] if self.select is not None else table


def _plan():
    from ..demo import demo_plan  # the demo build imports this package

    return demo_plan()


def _images(s: Sampled) -> list[str]:
    return sorted(set(s.rows.image_id))


def over(stage: Stage, image_ids: list[str]) -> Stage:
    """``stage`` run over ``image_ids`` only (the stages' ``image_ids`` option)."""

    def run(ctx) -> dict:
        return stage.run(replace(ctx, options={**ctx.options, "image_ids": image_ids}))

    return Stage(stage.name, run)


def _registered(name: str) -> Stage:
    """The registered stage ``name`` bound to the demo build's plan."""
    return get_stage(name).bind(_plan())


_CHEAP = tuple(method_names(cost="cheap"))
_CAMS = Stage("cams", lambda ctx: cam_stage(ctx, MapPlan(split=None)))
_SWEEP_DEFAULT = {k: get("occlusion").stored_defaults[k] for k in ("patch", "stride")}


def _is_sweep(rows: pd.DataFrame) -> pd.Series:
    """Occlusion maps of a patch/stride other than the method's default (the sweep's other settings)."""
    keys = rows.params_key[rows.method == "occlusion"].unique()
    other = {k for k in keys if any(json.loads(k).get(p) != v for p, v in _SWEEP_DEFAULT.items())}
    return (rows.method == "occlusion") & rows.params_key.isin(other)


def _explainer(cheap: bool | None, sweep: bool = False) -> Callable[[pd.DataFrame], pd.Series]:
    """Explainer rows of the cheap methods (``cheap``), of the costly ones at their main setting, or
    (``sweep``) of the occlusion sweep's other settings."""
    def select(rows: pd.DataFrame) -> pd.Series:
        mask = rows.source == "explainer"
        if sweep:
            return mask & _is_sweep(rows)
        return mask & (rows.method.isin(_CHEAP) == cheap) & ~_is_sweep(rows)

    return select


def _source(source: str) -> Callable[[pd.DataFrame], pd.Series]:
    return lambda rows: rows.source == source


def _maps_of(pairs: pd.DataFrame) -> Stage:
    """The maps of ``pairs`` (image_id, label, method, params_key): the CAMs of their images, each
    costly setting's maps of exactly these pairs (one unit per image where the method explains an
    image's findings at once, as the build computes them)."""

    def run(ctx) -> dict:
        cheap = pairs[pairs.method.isin(_CHEAP)]
        if len(cheap):
            over(_CAMS, sorted(set(cheap.image_id))).run(ctx)
        costly = pairs[~pairs.method.isin(_CHEAP)]
        for (method, key), g in costly.groupby(["method", "params_key"], sort=True):
            todo = g[["image_id", "label"]].drop_duplicates().sort_values(["label", "image_id"])
            run_units(ctx, map_units(todo, Setting.stored(method, key)), f"{method} maps")
        return {"maps": len(pairs)}

    return Stage("maps of the sample", run)


def _scored(s: Sampled) -> list[Stage]:
    return [_maps_of(s.rows), Stage("localization", localization_stage)]


def _trust(s: Sampled) -> list[Stage]:
    """The trust stage over the sampled rows' images (every image of the model's trust sample
    where a degradation threshold is sampled: it is drawn over all of them), their methods, and the
    models they compare with."""
    shipped = s.shipped("trust")
    shipped = shipped[shipped.model_id == s.rows.model_id.iloc[0]]
    images = set(s.rows.image_id) - {"*"}
    randomized = sorted(set(shipped.image_id[shipped.kind == "randomization"]))
    if (s.rows.kind == "threshold").any():
        images |= set(randomized)
    elif (s.rows.kind == "randomization").any() and len(images) < 2:
        # the stage redraws each method's threshold with its randomization, over two images at least
        images |= set([i for i in randomized if i not in images][: 2 - len(images)])
    known = dict((*TrustPlan().methods, TRUST_IG))
    methods = tuple((m, known[m]) for m in sorted(set(s.rows.method)))
    plan = TrustPlan(images=len(images), methods=methods, data_ranges=_plan().trust.data_ranges)
    others = sorted(set(s.rows.other_model) - {""})

    def run(ctx) -> dict:
        peers = [load(_weights(s.models_dir, name)) for name in others]
        return trust_stage(replace(ctx, options={**ctx.options, "trust_models": peers}), plan)

    return [over(Stage("trust", run), sorted(images))]


def _weights(models_dir: Path, model_id: str) -> Path:
    path = Path(models_dir) / f"{model_id}.pt"
    if not path.is_file():
        raise EvidenceSnapshotError(f"the snapshot's rows of {model_id} cannot be recomputed: its weights "
                                    f"{path} are missing (ship them beside the demo models)")
    return path


def _fidelity(s: Sampled) -> list[Stage]:
    """The sampled fidelity rows, over their maps computed anew: each sampled case once, with the
    sampled methods only. A method's row does not rest on the others the build scored beside it: the
    faithfulness subsets and the random-order deletion curves are drawn from the plan's seed and the
    image alone (:func:`~cxrxai.metrics.fidelity.faithfulness_correlations`), so a case's rows
    recompute equal one method at a time (tests/pipeline/test_fidelity_stage.py pins it)."""
    plan = _plan().fidelity
    cases = s.rows[["model_id", "image_id", "label", "method", "params_key"]].drop_duplicates()

    def run(ctx) -> dict:
        mid = ctx.model.spec.name
        index = ctx.writer.map_index(model_id=mid)
        index = _main_setting(index[index.method.isin(plan.methods)], ctx.model)
        mean_fill = _mean_image(ctx, ctx.model.spec).to(ctx.model.device)
        for _, case in cases.groupby(["image_id", "label"], sort=True):
            units = index.merge(case[["image_id", "label", "method", "params_key"]])
            rows = _fidelity_rows(ctx, plan, units, mean_fill)  # the plan's region: a shipped one may differ
            ctx.writer.put_table("fidelity", pd.DataFrame(rows))
        return {"cases": cases[["image_id", "label"]].drop_duplicates().shape[0]}

    return [_maps_of(cases), Stage("fidelity", run)]


def cohort(config: PhantomConfig, data_dir: str | Path, snapshot: str | Path) -> DemoData:
    """The phantom cohort of ``config`` for a recomputation: its ground truth from the rendered cache
    in ``data_dir`` or the annotations the ``snapshot`` ships (:data:`~.provenance.PHANTOMS`), its
    films drawn as a sampled row asks for them (:func:`~cxrxai.data.demo.lazy_demo`)."""
    return lazy_demo(config, data_dir, annotations=Path(snapshot) / PHANTOMS)


def shortcut_plan(shipped: pd.DataFrame) -> ShortcutPlan:
    """The plan the shipped shortcut rows were computed with: their methods and settings, their
    numbers of positive and negative cases (the seeded draw of that many picks the same cases)."""
    cases = shipped.drop_duplicates("image_id")
    methods = shipped[["method", "params_key"]].drop_duplicates().sort_values(["method", "params_key"])
    return ShortcutPlan(positives=int(cases.gt_positive.sum()), negatives=int((~cases.gt_positive).sum()),
                        methods=tuple((m, tuple(sorted(Setting.stored(m, k).declared.items())))
                                      for m, k in methods.itertuples(index=False)),
                        thumb=int(shipped.thumb_size.iloc[0]))


def _shortcut(s: Sampled) -> list[Stage]:
    """The planted shortcut's stage with the shipped rows but the sampled ones taken as done: it
    renders and predicts its marked cases and explains the sampled (model, case, method) only."""
    shipped = s.shipped("shortcut")
    key = ["model_id", "image_id", "method"]
    done = shipped.merge(s.rows[key].drop_duplicates(), how="left", indicator=True)
    done = done[done._merge == "left_only"].drop(columns="_merge")
    roles = dict(zip(shipped.role, shipped.model_id))
    config = PhantomConfig.from_json(shipped.phantom_config.iloc[0])

    def run(ctx) -> dict:
        if len(done):
            ctx.writer.put_table("shortcut", done)
        models = {role: load(_weights(s.models_dir, mid)) for role, mid in sorted(roles.items())}
        return shortcut_stage(ctx.writer, models, config=config, data_dir=s.data_dir,
                              plan=shortcut_plan(shipped), data=cohort(config, s.data_dir, s.folder))

    return [Stage("shortcut", run)]


def _whole(name: str) -> Callable[[Sampled], list[Stage]]:
    """The registered stage ``name`` whole (the geometry: cheap)."""
    return lambda s: [_registered(name)]


def _scored_sample(name: str) -> Callable[[Sampled], list[Stage]]:
    """The registered scoring stage ``name`` (the baselines, the second reader) scoring the sampled
    cases only (:data:`~cxrxai.pipeline.references.SCORED_IDS`): the baselines' rows rest on every
    case (the average training mask, the one random stream drawn in the cases' order), but scoring
    every case was the check's cost (each random map's contours filled one by one)."""
    def stages(s: Sampled) -> list[Stage]:
        stage = _registered(name)

        def run(ctx) -> dict:
            return stage.run(replace(ctx, options={**ctx.options, SCORED_IDS: set(_images(s))}))

        return [Stage(stage.name, run)]

    return stages


_BASELINES, _READER = _scored_sample("baselines"), _scored_sample("second reader")
_LOC = ("predictions", "thresholds")
_SCORES = (*LOCALIZATION_KEY, "metric")
CHECKS = {
    "predictions": Check("predictions", ("model_id", "image_id", "label"),
                         lambda s: [over(Stage("predictions", predictions_stage), _images(s))]),
    "thresholds": Check("thresholds", ("model_id", "label"),
                        lambda s: [Stage("thresholds", thresholds_stage)], ("predictions",)),
    "localization": Check("localization", LOCALIZATION_KEY, _scored, _LOC, _explainer(True)),
    "localization_scores": Check("localization_scores", _SCORES, _scored, _LOC, _explainer(True)),
    "localization: costly maps": Check("localization", LOCALIZATION_KEY, _scored, _LOC, _explainer(False)),
    "localization_scores: costly maps": Check("localization_scores", _SCORES, _scored, _LOC,
                                              _explainer(False)),
    "localization: occlusion sweep": Check("localization", LOCALIZATION_KEY, _scored, _LOC,
                                           _explainer(None, sweep=True)),
    "localization_scores: occlusion sweep": Check("localization_scores", _SCORES, _scored, _LOC,
                                                  _explainer(None, sweep=True)),
    "localization: baselines": Check("localization", LOCALIZATION_KEY, _BASELINES,
                                     select=_source("baseline")),
    "localization_scores: baselines": Check("localization_scores", _SCORES, _BASELINES,
                                            select=_source("baseline")),
    "localization: second reader": Check("localization", LOCALIZATION_KEY, _READER,
                                         select=_source("reader")),
    "localization_scores: second reader": Check("localization_scores", _SCORES, _READER,
                                                select=_source("reader")),
    "geometry": Check("geometry", ("image_id", "label", "reader", "dominant"), _whole("geometry"),
                      per_model=False),
    "trust": Check("trust", ("model_id", "method", "kind", "image_id", "label", "step", "other_model",
                             "data_range"), _trust),
    "maps": Check("maps", ("model_id", "image_id", "label", "method", "params_key"),
                  lambda s: [_maps_of(s.rows)]),
    "fidelity": Check("fidelity", ("model_id", "image_id", "label", "method", "params_key"), _fidelity,
                      _LOC, unit=("model_id", "image_id", "label")),
    "shortcut": Check("shortcut", ("model_id", "image_id", "method"), _shortcut, per_model=False),
}


def checks_of(table: str) -> dict[str, Check]:
    """The checks of ``table``'s rows, by name."""
    return {name: c for name, c in CHECKS.items() if c.table == table}
