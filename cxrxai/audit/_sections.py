"""One function per section of a dataset's audit: store reads in, a :class:`Section` out.

Every section says, when it has nothing to show, why and how to fill it; every share carries its n.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from ..demographic_groups import fell_to_other
from ..labels import ADMISSION_FIELDS
from ..store import Store
from ._reasons import action, reason

__all__ = ["AS_IS", "Section", "classify", "count", "share"]

_RERUN = "re-run `python -m cxrxai precompute` with this cxrxai (it migrates the store) to record them"
_FILL = "run `python -m cxrxai precompute` or `python -m cxrxai import-predictions` on it"
_ORIENTATION = re.compile("orientation", re.IGNORECASE)
AS_IS = "read as is (no note)"
#: Where race and insurance come from, said when a dataset has none.
_ADMISSIONS_ONLY = ("only the mimic layout reads it, from MIMIC-IV's admissions.csv(.gz) "
                    "(--data-option mimic_iv=DIR)")


@dataclass(frozen=True)
class Section:
    """One part of the audit: ``lines`` (sentences, each number with its n), ``table`` (the rows
    behind them) and ``empty`` (why there is nothing to show and how to fill it; None otherwise)."""

    key: str
    title: str
    lines: tuple[str, ...] = ()
    table: pd.DataFrame = field(default_factory=pd.DataFrame)
    empty: str | None = None


def count(n: int, noun: str | None = None) -> str:
    """``1,166``; with ``noun``, ``"1 row"`` / ``"1,166 rows"``."""
    text = f"{int(n):,}"
    return text if noun is None else f"{text} {noun}{'' if int(n) == 1 else 's'}"


def share(n: int, of: int) -> str:
    """``"97.1% (n = 1,165 of 1,200)"``; ``"n = 0 of 0"`` when there is nothing to divide by.

    >>> share(1165, 1200), share(0, 0)
    ('97.1% (n = 1,165 of 1,200)', 'n = 0 of 0')
    """
    return f"{100 * n / of:.1f}% (n = {count(n)} of {count(of)})" if of else f"n = {count(n)} of {count(of)}"


def _old_store(store: Store, what: str) -> str:
    return f"{what} not recorded in this store (schema v{store.schema_version()}, before v5): {_RERUN}"


def classify(problems: pd.DataFrame) -> pd.DataFrame:
    """``problems`` with ``reason`` and ``action`` columns (see :mod:`cxrxai.audit._reasons`)."""
    texts = problems["problem"].drop_duplicates()  # one classification per distinct message
    return problems.assign(reason=problems["problem"].map(dict(zip(texts, map(reason, texts)))),
                           action=problems["problem"].map(dict(zip(texts, map(action, texts)))))


def films(n_images: int, problems: pd.DataFrame, *, recorded: bool = True) -> Section:
    """Films read and skipped: the adapter's and the film reader's problem rows by reason
    (``recorded``: whether the store has a problems table at all)."""
    rows = problems[problems["stage"].isin(["adapter", "decode"])]
    title = "Films read and skipped"
    lines = [f"{count(n_images)} images in the store"]
    if not recorded:
        why = f"what was skipped is not recorded in this store (no problems table): {_RERUN}"
        return Section("films", title, tuple(lines), empty=why)
    if rows.empty:
        why = ("no film or row was skipped or changed when the dataset was read (no adapter or decode "
               "problem rows)")
        return Section("films", title, tuple(lines), empty=why)
    skipped = rows[rows["action"] == "image skipped"]
    adapter = skipped[skipped["stage"] == "adapter"]
    decode = skipped[skipped["stage"] == "decode"]
    lines.append(f"{count(len(adapter), 'row')} of the dataset's files left out by the adapter "
                 "(not in the store)")
    failed = decode["image_id"].nunique()
    lines.append(f"{count(failed, 'film')} in the store could not be decoded and have no prediction: "
                 f"{share(failed, n_images)}")
    kept = rows[rows["action"] != "image skipped"]
    if len(kept):
        lines.append(f"{count(len(kept), 'row')} kept with a change (a value set to missing, a box clipped "
                     "or skipped)")
    table = (rows.groupby(["stage", "reason", "action"]).size().reset_index(name="n")
             .sort_values(["stage", "n", "reason"], ascending=[True, False, True], ignore_index=True))
    return Section("films", title, tuple(lines), table)


def film_notes(store: Store, dataset: str, n_images: int) -> tuple[Section, Section]:
    """Bit depth and rescaling (images per reader note), and the orientation fixes among them."""
    titles = ("Bit depth and rescaling", "Orientation fixes")
    if not store.images_have(["decode_note"]):
        why = _old_store(store, "what the film reader did (bit depth, rescaling, EXIF orientation) is")
        return Section("film_notes", titles[0], empty=why), Section("orientation", titles[1], empty=why)
    if n_images == 0:
        why = "the dataset has no images in the store"
        return Section("film_notes", titles[0], empty=why), Section("orientation", titles[1], empty=why)
    notes = store.decode_notes(dataset)
    changed = int(notes.loc[notes["note"].notna(), "n"].sum())
    table = notes.assign(note=notes["note"].fillna(AS_IS), percent=(100 * notes["n"] / n_images).round(1))
    lines = (f"{count(changed, 'film')} changed by the reader: {share(changed, n_images)}; the others were "
             "read as they are (films never decoded, outside the precomputed split, carry no note either)",)
    turned = table[notes["note"].fillna("").str.contains(_ORIENTATION)].reset_index(drop=True)
    n_turned = int(turned["n"].sum())
    if n_turned:
        said = f"{count(n_turned, 'film')} turned by their EXIF orientation: {share(n_turned, n_images)}"
        orientation = Section("orientation", titles[1], (said,), turned)
    else:
        orientation = Section("orientation", titles[1], empty="no film carried an EXIF orientation to apply "
                                                              f"(n = 0 of {count(n_images)})")
    return Section("film_notes", titles[0], lines, table), orientation


def _source_name(source, known: bool) -> str:
    if not known:
        return "missing" if source is None or pd.isna(source) else f"{source} (value missing)"
    return "source not recorded" if source is None or pd.isna(source) else str(source)


def _coverage(name: str, counts: pd.DataFrame, n_images: int) -> str:
    """``"sex known for 90.0% (n = 18 of 20), from csv:… 15, dicom:… 3"``; race or insurance known
    for none says where they come from."""
    rows = counts[(counts["field"] == name) & counts["known"]]
    known = int(rows["n"].sum())
    froms = ", ".join(f"{s} {count(n)}" for s, n in rows.groupby("source", sort=False)["n"].sum().items())
    line = f"{name} known for {share(known, n_images)}" + (f", from {froms}" if froms else "")
    return f"{line}: {_ADMISSIONS_ONLY}" if not known and name in ADMISSION_FIELDS else line


def _paper_other(store: Store, dataset: str, name: str) -> str | None:
    """Which recorded ``name`` values (race, insurance) the Underdiagnosis paper's groups put in
    Other, with their n (None when the dataset records none)."""
    values = store.demographic_values(dataset, name)
    if values.empty:
        return None
    other = fell_to_other(values, name)
    head = f"{name} in the Underdiagnosis paper's groups (report option {name}=paper): "
    if other.empty:
        return head + "no recorded value falls to Other"
    held = ", ".join(f"{v} {count(n)}" for v, n in zip(other["value"], other["n"]))
    table = "RACE_GROUPS" if name == "race" else "INSURANCE_GROUPS"
    unlisted = ", ".join(other.loc[~other["listed"], "value"])
    rule = f" ({unlisted} not in cxrxai.demographic_groups.{table}: Other by its rule)" if unlisted else ""
    return f"{head}Other holds {held}{rule}"


def demographics(store: Store, dataset: str, n_images: int) -> Section:
    """Share of images with sex, age and view (and race and insurance, schema v8 on), where each
    value came from, and which race and insurance values the paper's groups put in Other."""
    title = "Demographic coverage"
    if n_images == 0:
        return Section("demographics", title, empty="the dataset has no images in the store")
    counts = store.demographic_sources(dataset)
    counts["source"] = [_source_name(s, bool(k)) for s, k in zip(counts["source"], counts["known"])]
    table = counts.groupby(["field", "source"], sort=False)["n"].sum().reset_index()
    table["percent"] = (100 * table["n"] / n_images).round(1)
    fields = store.demographic_fields()
    lines = [_coverage(name, counts, n_images) for name in fields]
    lines += [line for name in fields if name in ADMISSION_FIELDS
              if (line := _paper_other(store, dataset, name))]
    if not store.images_have(["sex_source", "age_source", "view_source"]):
        lines.append(_old_store(store, "where each value came from is"))
    return Section("demographics", title, tuple(lines), table)


def _match_line(model_id: str, rows: pd.DataFrame) -> str:
    by = rows.groupby("how").size()
    matched = ", ".join(f"{by[h]} {h}" for h in ("exact", "alias", "case") if h in by)
    outs = rows.loc[rows["how"] == "unmatched output", "model_output"].dropna().tolist()
    labs = rows.loc[rows["how"] == "unmatched label", "dataset_label"].dropna().tolist()
    parts = [f"{model_id}: outputs matched to labels {matched or 'none'}"]
    if outs:
        parts.append(f"{len(outs)} output(s) score no dataset label ({', '.join(outs)})")
    if labs:
        parts.append(f"{len(labs)} dataset label(s) have no model output ({', '.join(labs)})")
    return "; ".join(parts)


def label_matches(store: Store, dataset: str, predicted: pd.DataFrame) -> Section:
    """Which model output scores which dataset label, and how (exact, alias, case, unmatched)."""
    title = "Model outputs and dataset labels"
    if not store.has_table("label_matches"):
        why = _old_store(store, "which model output scores which label is")
        return Section("label_matches", title, empty=why)
    rows = store.label_matches(dataset=dataset).drop(columns="dataset")
    unrecorded = ("no label matches recorded: the store was built before cxrxai recorded them; re-run "
                  "precompute to record them")
    if rows.empty:
        why = unrecorded if len(predicted) else f"no model has predictions on this dataset yet: {_FILL}"
        return Section("label_matches", title, empty=why)
    lines = [_match_line(m, g) for m, g in rows.groupby("model_id", sort=True)]
    lines += [f"{m}: {unrecorded}" for m in sorted(set(predicted["model_id"]) - set(rows["model_id"]))]
    return Section("label_matches", title, tuple(lines), rows)


def splits(store: Store, dataset: str, problems: pd.DataFrame, predicted: pd.DataFrame) -> Section:
    """Images per split, how many could not be decoded and how many each model has predictions for."""
    title = "Splits"
    sizes = store.split_sizes(dataset)
    if sizes.empty:
        return Section("splits", title, empty="the dataset has no images in the store")
    failed = problems[(problems["stage"] == "decode") & (problems["action"] == "image skipped")]
    failed = failed.assign(split=failed["split"].fillna("none")).groupby("split")["image_id"].nunique()
    table = sizes.rename(columns={"n": "images"})
    table["not decoded"] = table["split"].map(failed).fillna(0).astype(int)
    lines = []
    for model_id, rows in predicted.groupby("model_id", sort=True):
        per = rows.set_index("split")["n"]
        table[f"predicted by {model_id}"] = table["split"].map(per).fillna(0).astype(int)
        lines.append(f"{model_id} has predictions for {share(int(per.sum()), int(sizes['n'].sum()))}")
    if predicted.empty:
        lines.append(f"no model has predictions on this dataset yet: {_FILL}")
    return Section("splits", title, tuple(lines), table)
