"""The one case schema every dataset adapter maps onto, and shared validation.

An adapter reads a dataset's files exactly as published and returns :class:`DatasetTables`:

* ``images`` — image_id, path (relative to ``root``), patient_id, sex ("M"/"F"/missing),
  age (years, missing allowed), age_bin, view, split, width, height (missing until read), and
  where sex, age and view came from: ``sex_source``, ``age_source``, ``view_source``
  (``csv:<file name>``, ``dicom:<Tag>``, ``derived:<rule>``; missing when the value is);
* ``labels`` — long: image_id, label, value (1, 0, or missing = unknown/uncertain-ignored);
* ``annotations`` — image_id, label, reader, instance, kind (mask/box/point), x, y, w, h,
  mask_rle (COCO compressed), mask_height, mask_width;
* ``problems`` — file, row, image_id, problem: each bad row, with the reason and what was done.

Adapters only rename and derive columns. Missing demographics stay missing (never invented).
A file-level fault (missing file or column) raises :class:`DataError` naming the file; a bad
row is recorded in ``problems`` and only what is wrong is left out (a path escaping the root or
an unknown label drops the image; a box outside the image drops the box; an absurd age becomes
missing), so a precompute reports it instead of aborting — ``strict=True`` raises on the first
one instead.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import lzma
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import DataError, UnknownNameError, shown
from ...labels import age_bin
from ...paths import absolute
from ._boxes import clip_boxes

__all__ = [
    "ANNOTATION_COLUMNS",
    "IMAGE_COLUMNS",
    "DatasetTables",
    "Problems",
    "clean_age",
    "clip_boxes",
    "clean_sex",
    "escaping",
    "keep_views",
    "UNCERTAIN_POLICIES",
    "chexpert_values",
    "long_labels",
    "name_list",
    "patient_split",
    "read_csv",
    "require",
    "sourced",
    "study_years",
    "sniff_delimiter",
    "unit_interval",
    "with_sources",
]

IMAGE_COLUMNS = ["image_id", "path", "patient_id", "sex", "age", "age_bin", "view", "split", "width",
                 "height", "sex_source", "age_source", "view_source"]
ANNOTATION_COLUMNS = ["image_id", "label", "reader", "instance", "kind", "x", "y", "w", "h", "mask_rle",
                      "mask_height", "mask_width"]
MAX_AGE = 120
#: What a CheXpert-labeler "uncertain" (−1) becomes: missing (``ignore``), negative or positive.
UNCERTAIN_POLICIES = ("ignore", "zeros", "ones")


@dataclass
class DatasetTables:
    name: str
    source: str
    root: Path
    label_names: list[str]
    images: pd.DataFrame
    labels: pd.DataFrame
    annotations: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=ANNOTATION_COLUMNS))
    problems: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["file", "row", "image_id", "problem"])
    )
    description: str = ""
    config: dict = field(default_factory=dict)

    def __post_init__(self):
        self.root = absolute(self.root)  # what a store records: the same folder from any working directory
        self.images = self.images.reindex(columns=IMAGE_COLUMNS)
        self.annotations = self.annotations.reindex(columns=ANNOTATION_COLUMNS)
        dup = self.images["image_id"].duplicated()
        if dup.any():
            raise DataError(
                f"{self.name}: duplicate image ids, e.g. {self.images['image_id'][dup].iloc[0]!r}"
            )


class Problems:
    """Collects bad rows, each with what was done about it; raises the first one in strict mode.

    ``action`` is appended to the message: ``"image skipped"`` (the default: the image leaves the
    dataset, see :meth:`skipped`), ``"annotation skipped"`` or ``"age set to missing"`` (the
    image stays).
    """

    SKIP_IMAGE = "image skipped"

    def __init__(self, strict: bool):
        self.strict, self.rows, self._skipped = strict, [], set()

    def add(self, file: str | Path, row: int | None, image_id: str | None, problem: str, *,
            action: str = SKIP_IMAGE) -> None:
        where = f"{Path(file).name}" + (f", row {row}" if row is not None else "")
        if self.strict:
            raise DataError(f"{where}: {problem}" + (f" (image {image_id})" if image_id else ""))
        self.rows.append(
            {"file": str(file), "row": row, "image_id": image_id, "problem": f"{problem}; {action}"}
        )
        if action == self.SKIP_IMAGE and image_id is not None:
            self._skipped.add(str(image_id))

    def note(self, file: str | Path, problem: str, *, action: str | None = None) -> None:
        """A row about the whole file, not a bad row: what an option or a missing companion file left
        out or left missing, or what changed how the file was read (a delimiter other than a comma).
        Never raises, even in strict mode: nothing in the data is wrong."""
        self.rows.append({"file": str(file), "row": None, "image_id": None,
                          "problem": problem if action is None else f"{problem}; {action}"})

    def skipped(self) -> set[str]:
        """Image ids whose problem removes the image from the dataset."""
        return set(self._skipped)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["file", "row", "image_id", "problem"])


def read_csv(path: str | Path, *, problems: Problems | None = None, **kwargs) -> pd.DataFrame:
    """A metadata CSV, its delimiter sniffed (:func:`sniff_delimiter`) unless ``sep`` is given.

    The delimiter used is in ``frame.attrs["delimiter"]``; one other than a comma is also said in
    ``problems`` (a row "read with ';' as the delimiter"), so a European spreadsheet's export is
    read, and said to be read, instead of failing on a missing column. Column names are read
    without spaces around them (``Consolidation `` is ``Consolidation``, for ``dtype`` and
    ``usecols`` too), said in ``problems`` when any had them.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(f"missing file {p}")
    sep = kwargs.pop("sep", None) or kwargs.pop("delimiter", None) or sniff_delimiter(p)
    try:
        header = list(pd.read_csv(p, sep=sep, nrows=0).columns)
        padded = [c for c in header if isinstance(c, str) and c != c.strip()]
        if padded:
            kwargs.update(header=0, names=[c.strip() if isinstance(c, str) else c for c in header])
        frame = pd.read_csv(p, sep=sep, **kwargs)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as err:
        raise DataError(f"cannot parse {p}: {err}") from None
    frame.attrs["delimiter"] = sep
    if sep != "," and problems is not None:
        problems.note(p, f"columns separated by {sep!r}, not commas",
                      action=f"read with {sep!r} as the delimiter")
    if padded and problems is not None:
        problems.note(p, f"column name(s) {padded} have spaces around them",
                      action=f"read as {[c.strip() for c in padded]}")
    return frame


#: Delimiters :func:`sniff_delimiter` considers, and the openers of compressed CSVs it can peek into.
DELIMITERS = ",;\t|"
_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def sniff_delimiter(path: Path, *, sample_bytes: int = 65536) -> str:
    """The delimiter of a CSV: :class:`csv.Sniffer` on its first 64 KB, restricted to
    :data:`DELIMITERS`, kept only when the header line holds it; a comma otherwise (one column, a
    zip archive, nothing to tell). ~10 ms whatever the file's size (NIH's 112,120-row CSV: 6 ms
    against 1.6 s for pandas' ``sep=None`` python engine)."""
    opener = _OPENERS.get(path.suffix.lower(), open)
    if path.suffix.lower() == ".zip":
        return ","
    try:
        with opener(path, "rb") as fh:
            sample = fh.read(sample_bytes).decode("utf-8", errors="replace").lstrip("\ufeff")
        found = csv.Sniffer().sniff(sample, delimiters=DELIMITERS).delimiter
    except (OSError, EOFError, csv.Error):
        return ","
    header = sample.splitlines()[0] if sample else ""
    return found if found in header else ","


def require(df: pd.DataFrame, columns, path: str | Path) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataError(f"{Path(path).name}: missing column(s) {missing}; found {list(df.columns)}")


def _where(path, values: pd.Series, i: int) -> tuple[object, int | None]:
    """File and row of the ``i``-th value: one CSV (``path``: its row as a spreadsheet counts it), or
    one file per value (``path`` a Series aligned with ``values``, e.g. DICOM headers: no row)."""
    if isinstance(path, pd.Series):
        return path.iloc[i], None
    return path, int(values.index[i]) + 2


def clean_age(values: pd.Series, path, problems: Problems, ids: pd.Series | None) -> pd.Series:
    """Ages in years; DICOM age strings accepted (``"058Y"``, ``"006M"``, ``"002W"``, ``"010D"``: years,
    months, weeks, days); missing stays missing; absurd ages are problems (``path``: the CSV, or a
    Series of one file per value, see :func:`_where`; ``ids``: the image of each value, ``None`` when
    the values are per patient).

    >>> ages = pd.Series(["058Y", "006M", "026W", "073D"])
    >>> clean_age(ages, "f.csv", Problems(False), None).round(2).tolist()
    [58.0, 0.5, 0.5, 0.2]
    """
    text = values.astype("string").str.strip().str.upper()
    num = pd.to_numeric(text.str.rstrip("YMWD"), errors="coerce").astype(float)
    for unit, per_year in (("M", 12), ("W", 365 / 7), ("D", 365)):
        num = num.where(~text.str.endswith(unit, na=False), num / per_year)
    bad = ((num < 0) | (num > MAX_AGE) | (values.notna() & num.isna())).to_numpy(dtype=bool)
    for i in np.flatnonzero(bad):
        problems.add(*_where(path, values, i), str(ids.iloc[i]) if ids is not None else None,
                     f"absurd age {values.iloc[i]} (allowed 0–{MAX_AGE} years)", action="age set to missing")
    return num.where(~bad).astype(float)


def clean_sex(
    values: pd.Series, path=None, problems: Problems | None = None, ids: pd.Series | None = None
) -> pd.Series:
    """"M" / "F" (male, female in any case); anything else is missing — with ``problems``, a
    value that is neither blank nor M/F is a problem row ("sex set to missing")."""
    mapping = {"M": "M", "MALE": "M", "F": "F", "FEMALE": "F"}
    text = values.astype("string").str.strip().str.upper()
    out = text.map(mapping).astype(object).where(lambda s: s.notna(), None)
    if problems is not None:
        for i in np.flatnonzero((text.notna() & (text != "") & out.isna()).to_numpy(dtype=bool)):
            problems.add(
                *_where(path, values, i),
                str(ids.iloc[i]) if ids is not None else None,
                f"sex {shown(values.iloc[i])} is not one of M, F (male, female)",
                action="sex set to missing",
            )
    return out


def study_years(values: pd.Series, column: str, path, problems: Problems, ids: pd.Series) -> pd.Series:
    """The year of DICOM-style ``yyyymmdd`` dates (``20140915`` → 2014.0), to derive ages from;
    a value that is not such a date is a problem row ("age set to missing"), a blank stays missing.

    >>> p = Problems(strict=False)
    >>> dates, ids = pd.Series([20140915, None, 2014]), pd.Series(["a", "b", "c"])
    >>> study_years(dates, "StudyDate", "f.csv", p, ids).tolist()
    [2014.0, nan, nan]
    >>> p.rows[0]["problem"]
    "StudyDate '2014' is not a yyyymmdd date; age set to missing"
    """
    text = values.astype("string").str.strip().str.replace(r"\.0$", "", regex=True)
    dates = pd.to_datetime(text, format="%Y%m%d", errors="coerce")
    bad = (text.notna() & (text != "") & dates.isna()).to_numpy(dtype=bool)
    for i in np.flatnonzero(bad):
        problems.add(path, int(values.index[i]) + 2, str(ids.iloc[i]),
                     f"{column} {str(text.iloc[i])!r} is not a yyyymmdd date", action="age set to missing")
    return dates.dt.year.astype(float)


def sourced(values: pd.Series, source) -> pd.Series:
    """The provenance column of ``values``: ``source`` (one text, or a Series of one per value) where a
    value is present, missing where not."""
    return pd.Series(source, index=values.index, dtype=object).where(values.notna().to_numpy(), None)


def keep_views(view: pd.Series, views, file: str | Path, problems: Problems) -> np.ndarray:
    """Which films a ``views`` option keeps (``None``: every film; else a list of view names,
    any case, e.g. ``PA,AP``); the films it leaves out are counted, per view, in one note row.

    >>> p = Problems(strict=False)
    >>> keep_views(pd.Series(["PA", "LATERAL", None]), "pa,ap", "meta.csv", p).tolist(), p.rows[0]["problem"]
    ([True, False, False], "views ['PA', 'AP'] kept: 2 films of other views left out (LATERAL 1, blank 1)")
    """
    if views is None:
        return np.ones(len(view), bool)
    wanted = [v.upper() for v in name_list(views)]
    keep = view.astype("string").str.strip().str.upper().isin(wanted).to_numpy(dtype=bool)
    if not keep.all():
        counts = view[~keep].astype(object).where(view[~keep].notna(), "blank").value_counts()
        problems.note(file, f"views {wanted} kept: {int((~keep).sum()):,} films of other views left out ("
                            + ", ".join(f"{k} {n:,}" for k, n in counts.items()) + ")")
    return keep


def chexpert_values(values: pd.DataFrame, uncertain: str) -> pd.DataFrame:
    """Labels of the CheXpert labeler (CheXpert's CSVs, MIMIC-CXR's chexpert and negbio files):
    1 positive, 0 negative, −1 uncertain, blank not mentioned. Blanks become negatives (as
    CheXpert's and the Underdiagnosis paper's code read them); −1 follows ``uncertain``, one of
    :data:`UNCERTAIN_POLICIES` (``ignore`` → missing, ``zeros`` → 0, ``ones`` → 1).

    >>> chexpert_values(pd.DataFrame({"Edema": [1.0, 0.0, -1.0, None]}), "ignore").Edema.tolist()
    [1.0, 0.0, nan, 0.0]
    """
    if uncertain not in UNCERTAIN_POLICIES:
        raise UnknownNameError("uncertain-label policy", uncertain, UNCERTAIN_POLICIES)
    out = values.astype(float).fillna(0.0)
    return out.replace(-1.0, {"ignore": np.nan, "zeros": 0.0, "ones": 1.0}[uncertain])


def escaping(paths: pd.Series) -> np.ndarray:
    """Which relative paths would leave the dataset root (absolute, or with a ``..`` part).

    Decided on the text alone (vectorised: 10⁵ rows in milliseconds), so a metadata-only
    checkout without the images is checked the same way as a full one.
    """
    text = paths.astype(str).str.replace("\\", "/", regex=False)
    absolute = text.str.startswith("/") | text.str.match(r"^[A-Za-z]:/")
    return (absolute | text.str.contains(r"(?:^|/)\.\.(?:/|$)", regex=True)).to_numpy(dtype=bool)


def long_labels(ids, matrix: np.ndarray, names) -> pd.DataFrame:
    """Long label table from an (N, K) matrix of 1 / 0 / NaN."""
    ids = np.asarray(ids, dtype=object)
    return pd.DataFrame(
        {
            "image_id": np.repeat(ids, len(names)),
            "label": np.tile(np.asarray(names, dtype=object), len(ids)),
            "value": pd.array(np.asarray(matrix, float).ravel(), dtype="Float64").round().astype("Int8"),
        }
    )


def patient_split(patients: pd.Series, fractions: dict[str, float], seed: int) -> pd.Series:
    """Assign each patient (not image) to a split with the given image shares (seeded)."""
    counts = patients.value_counts().sort_index()
    order = np.random.default_rng(seed).permutation(len(counts))
    cum = np.cumsum(counts.to_numpy()[order]) / counts.sum()
    names, bounds = list(fractions), np.cumsum(list(fractions.values()))
    which = np.searchsorted(bounds, cum - 1e-12)
    assign = dict(zip(counts.index[order], [names[min(k, len(names) - 1)] for k in which]))
    return patients.map(assign)


def with_sources(images: pd.DataFrame, sources: dict[str, object]) -> pd.DataFrame:
    """``<field>_source`` = ``sources[field]`` (e.g. ``"csv:Data_Entry_2017.csv"``, or a Series of
    one source per row) where ``field`` has a value, missing where it has none.

    >>> with_sources(pd.DataFrame({"sex": ["F", None]}), {"sex": "csv:a.csv"}).sex_source.tolist()
    ['csv:a.csv', None]
    """
    for name, source in sources.items():
        images[f"{name}_source"] = sourced(images[name], source)
    return images


def with_age_bins(images: pd.DataFrame) -> pd.DataFrame:
    """``age_bin`` of each image's age (:func:`~cxrxai.labels.age_bin`; missing where the age is),
    each distinct age binned once (a full CheXpert list holds 223,414 rows and 90-odd ages).

    >>> with_age_bins(pd.DataFrame({"age": [19.0, None, 80.0, 19.0]})).age_bin.tolist()[::2]
    ['0-20', '80+']
    """
    ages = images["age"]
    bins = {a: age_bin(a) for a in pd.unique(ages[ages.notna()])}
    images["age_bin"] = ages.map(lambda a: bins[a] if pd.notna(a) else None)
    return images


def name_list(value) -> list[str]:
    """A list option as typed on a command line: ``A,B``, ``[A,B]``, ``["A", "B"]`` or a list.

    >>> name_list("Effusion,Nodule"), name_list("[Effusion, Nodule]"), name_list(["Mass"])
    (['Effusion', 'Nodule'], ['Effusion', 'Nodule'], ['Mass'])
    """
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    text = str(value).strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    names = [part.strip().strip("'\"").strip() for part in text.split(",")]
    if not all(names):
        raise DataError(f"cannot read a list of names from {value!r}; write A,B or [A,B]")
    return names


def unit_interval(frame: pd.DataFrame, columns: list[str], source: str) -> np.ndarray:
    """``frame[columns]`` as floats in [0, 1] (probabilities, thresholds); the first bad cell —
    blank, text, or outside — is a :class:`DataError` naming ``source``, the row (as a spreadsheet
    counts it) and the column."""
    values = frame[columns].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    bad = ~((values >= 0) & (values <= 1))  # NaN, blanks and text fail both comparisons
    if bad.any():
        i, j = (int(v[0]) for v in np.nonzero(bad))
        value = shown(frame[columns[j]].iloc[i])
        raise DataError(f"{source}, row {i + 2}: {columns[j]} = {value}; must be a number in [0, 1] with no "
                        "blanks (nothing was stored)")
    return values
