"""The store's schema, versioned: ``MIGRATIONS[v]`` takes a store from version v-1 to v.

A store records its version in ``meta('schema_version')``. Writers migrate older stores
forward on open; readers refuse stores from a newer version (:class:`SchemaVersionError`) and
read older ones as they are (a missing table reads as "not computed yet").

Since v6 the localization scores are long (``localization_scores``: one row per scored map,
reader and metric), so a newly registered metric needs no migration: it is a new ``metric`` name.
"""

from __future__ import annotations

__all__ = [
    "LOCALIZATION_FIELDS",
    "LOCALIZATION_KEY",
    "METRIC_TABLES",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "TABLES",
    "WIDE_METRICS",
]

_V1 = [
    """CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)""",
    """CREATE TABLE datasets (
        dataset VARCHAR PRIMARY KEY, source VARCHAR NOT NULL, root VARCHAR, description VARCHAR,
        labels VARCHAR[], config VARCHAR, created_at TIMESTAMP DEFAULT current_timestamp)""",
    """CREATE TABLE images (
        image_id VARCHAR PRIMARY KEY, dataset VARCHAR NOT NULL, path VARCHAR, generator_key VARCHAR,
        patient_id VARCHAR, sex VARCHAR, age DOUBLE, age_bin VARCHAR, view VARCHAR, split VARCHAR,
        width INTEGER, height INTEGER)""",
    """CREATE TABLE labels (
        image_id VARCHAR NOT NULL, label VARCHAR NOT NULL, value TINYINT,
        PRIMARY KEY (image_id, label))""",
    # kind: 'mask' (mask_rle at mask_height × mask_width), 'box' (x, y, w, h), 'point' (x, y).
    # reader: who drew it — 'gt' for the reference standard; a second reader is a human benchmark.
    """CREATE TABLE annotations (
        image_id VARCHAR NOT NULL, label VARCHAR NOT NULL, reader VARCHAR NOT NULL,
        instance INTEGER NOT NULL, kind VARCHAR NOT NULL,
        x DOUBLE, y DOUBLE, w DOUBLE, h DOUBLE,
        mask_rle VARCHAR, mask_height INTEGER, mask_width INTEGER,
        PRIMARY KEY (image_id, label, reader, instance, kind))""",
    """CREATE TABLE models (
        model_id VARCHAR PRIMARY KEY, arch VARCHAR NOT NULL, labels VARCHAR[] NOT NULL,
        input_size INTEGER, explained_output VARCHAR, spec VARCHAR NOT NULL,
        weights_path VARCHAR, weights_sha256 VARCHAR, created_at TIMESTAMP DEFAULT current_timestamp)""",
    """CREATE TABLE predictions (
        model_id VARCHAR NOT NULL, image_id VARCHAR NOT NULL, label VARCHAR NOT NULL,
        logit REAL, prob REAL NOT NULL, PRIMARY KEY (model_id, image_id, label))""",
    """CREATE TABLE thresholds (
        model_id VARCHAR NOT NULL, label VARCHAR NOT NULL, threshold DOUBLE NOT NULL,
        method VARCHAR NOT NULL, criterion DOUBLE, split VARCHAR,
        PRIMARY KEY (model_id, label))""",
    # A saliency map at the explainer's native resolution. kind: 'pixel' (input resolution),
    # 'cam' (feature-map resolution), 'occlusion_grid' (window scores, rebuilt per pixel from params).
    """CREATE TABLE maps (
        model_id VARCHAR NOT NULL, image_id VARCHAR NOT NULL, label VARCHAR NOT NULL,
        method VARCHAR NOT NULL, params_key VARCHAR NOT NULL, params VARCHAR NOT NULL,
        target VARCHAR NOT NULL, kind VARCHAR NOT NULL, height INTEGER NOT NULL, width INTEGER NOT NULL,
        "values" FLOAT[] NOT NULL, seconds DOUBLE, device VARCHAR,
        created_at TIMESTAMP DEFAULT current_timestamp,
        PRIMARY KEY (model_id, image_id, label, method, params_key))""",
]

# Version 2: per-case metric tables (issue "metrics and statistics").
_V2 = [
    # One row per stored map × reference reader. Conventions: iou = true-positive slice (NaN unless
    # both masks are non-empty); iou_full = FP/FN score 0; iou_gated = iou_full after the
    # probability gate (mask emptied when prob < the label's threshold); hit = pointing game on the
    # upsampled map; pla = the thesis's centre-of-best-cell hit on the native map.
    """CREATE TABLE localization (
        model_id VARCHAR NOT NULL, image_id VARCHAR NOT NULL, label VARCHAR NOT NULL, method VARCHAR NOT NULL,
        params_key VARCHAR NOT NULL, reader VARCHAR NOT NULL,
        prob DOUBLE, gt_positive BOOLEAN, predicted BOOLEAN,
        iou DOUBLE, iou_full DOUBLE, iou_gated DOUBLE, hit DOUBLE, pla DOUBLE, roc_auc DOUBLE, pr_auc DOUBLE,
        ap DOUBLE, pred_area DOUBLE, gt_area DOUBLE,
        PRIMARY KEY (model_id, image_id, label, method, params_key, reader))""",
    """CREATE TABLE geometry (
        image_id VARCHAR NOT NULL, label VARCHAR NOT NULL, reader VARCHAR NOT NULL, dominant VARCHAR NOT NULL,
        instances INTEGER, size DOUBLE, elongation DOUBLE, irrectangularity DOUBLE,
        PRIMARY KEY (image_id, label, reader, dominant))""",
    # kind: randomization (step = layer group, ssim to the original map), repeatability /
    # reproducibility (other_model), threshold (degradation threshold of a method, image_id '*').
    """CREATE TABLE trust (
        model_id VARCHAR NOT NULL, method VARCHAR NOT NULL, kind VARCHAR NOT NULL, image_id VARCHAR NOT NULL,
        label VARCHAR NOT NULL, step VARCHAR NOT NULL, step_index INTEGER, other_model VARCHAR NOT NULL,
        data_range DOUBLE NOT NULL, ssim DOUBLE,
        PRIMARY KEY (model_id, method, kind, image_id, label, step, other_model, data_range))""",
    # Cases an adapter or a precompute left out, and why (file, row, message).
    """CREATE TABLE problems (
        dataset VARCHAR NOT NULL, stage VARCHAR NOT NULL, file VARCHAR, "row" INTEGER, image_id VARCHAR,
        problem VARCHAR NOT NULL)""",
    """CREATE TABLE fidelity (
        model_id VARCHAR NOT NULL, image_id VARCHAR NOT NULL, label VARCHAR NOT NULL, method VARCHAR NOT NULL,
        params_key VARCHAR NOT NULL, region INTEGER, faithfulness DOUBLE,
        audc_black DOUBLE, auic_black DOUBLE, audc_random_black DOUBLE, audc_mean DOUBLE, auic_mean DOUBLE,
        audc_random_mean DOUBLE, audc_diff_black DOUBLE, audc_diff_mean DOUBLE,
        audc_diff_mean_normalized DOUBLE,
        deletion_black FLOAT[], deletion_random_black FLOAT[], insertion_black FLOAT[],
        deletion_mean FLOAT[], deletion_random_mean FLOAT[], insertion_mean FLOAT[],
        PRIMARY KEY (model_id, image_id, label, method, params_key))""",
]

#: The localization metrics stored as columns of the ``localization`` table from v2 to v5.
WIDE_METRICS = (
    "iou", "iou_full", "iou_gated", "hit", "pla", "roc_auc", "pr_auc", "ap", "pred_area", "gt_area"
)
#: What a localization row holds besides its key and (until v5) its scores.
LOCALIZATION_FIELDS = ("prob", "gt_positive", "predicted")
_METRIC_COLUMNS = ", ".join((*LOCALIZATION_FIELDS, *WIDE_METRICS))
_V3 = [
    # ``source`` says what was scored: an explainer's map, a baseline (Arun et al.'s average mask,
    # a random map) or a second reader (the human benchmark); ``method`` is its name. Until v2 the
    # method column held ``baseline:<name>`` and ``reader:<name>``.
    """CREATE TABLE localization_v3 (
        model_id VARCHAR NOT NULL, image_id VARCHAR NOT NULL, label VARCHAR NOT NULL,
        source VARCHAR NOT NULL DEFAULT 'explainer', method VARCHAR NOT NULL,
        params_key VARCHAR NOT NULL, reader VARCHAR NOT NULL,
        prob DOUBLE, gt_positive BOOLEAN, predicted BOOLEAN,
        iou DOUBLE, iou_full DOUBLE, iou_gated DOUBLE, hit DOUBLE, pla DOUBLE, roc_auc DOUBLE, pr_auc DOUBLE,
        ap DOUBLE, pred_area DOUBLE, gt_area DOUBLE,
        CHECK (source IN ('explainer', 'baseline', 'reader')),
        PRIMARY KEY (model_id, image_id, label, source, method, params_key, reader))""",
    f"""INSERT INTO localization_v3 (
            model_id, image_id, label, source, method, params_key, reader, {_METRIC_COLUMNS})
        SELECT model_id, image_id, label,
               CASE WHEN method LIKE 'baseline:%' THEN 'baseline' WHEN method LIKE 'reader:%' THEN 'reader'
                    ELSE 'explainer' END,
               regexp_replace(method, '^(baseline|reader):', ''), params_key, reader, {_METRIC_COLUMNS}
        FROM localization""",
    "DROP TABLE localization",
    "ALTER TABLE localization_v3 RENAME TO localization",
]

# Version 4: the planted-shortcut analysis ("model or method?"). One row per model × case ×
# explainer, the map computed on the case *with* the marker; ``role`` is 'shortcut' (the model
# trained where the marker goes with the label) or 'control' (the same architecture without it);
# ``prob_without`` is the label's probability on the same case rendered without the marker (the
# model's own reliance on it); shares are of the positive attribution mass; ``thumb`` is the
# map at thumb_size² for display; ``generator_key`` + ``phantom_config`` re-render the case.
_V4 = [
    """CREATE TABLE shortcut (
        model_id VARCHAR NOT NULL, role VARCHAR NOT NULL, image_id VARCHAR NOT NULL, label VARCHAR NOT NULL,
        method VARCHAR NOT NULL, params_key VARCHAR NOT NULL, gt_positive BOOLEAN, prob DOUBLE,
        prob_without DOUBLE, marker_share DOUBLE, lesion_share DOUBLE, zone_area DOUBLE, lesion_area DOUBLE,
        peak_on_marker BOOLEAN,
        thumb FLOAT[], thumb_size INTEGER, generator_key VARCHAR, phantom_config VARCHAR,
        CHECK (role IN ('shortcut', 'control')),
        PRIMARY KEY (model_id, image_id, label, method, params_key))"""
]

# Version 5: where each value came from ("never silently wrong", issue 25). Per image, the source
# of sex, age and view (``csv:<file>``, ``dicom:<Tag>``, ``derived:<rule>``; missing when the value
# is missing) and what the reader did to the film (bit depth and rescaling, EXIF orientation,
# channel conversion). ``label_matches``: which model output scores which dataset label, and how
# (exact, alias, case), plus the outputs and labels that matched nothing (the other side missing).
_V5 = [
    "ALTER TABLE images ADD COLUMN sex_source VARCHAR",
    "ALTER TABLE images ADD COLUMN age_source VARCHAR",
    "ALTER TABLE images ADD COLUMN view_source VARCHAR",
    "ALTER TABLE images ADD COLUMN decode_note VARCHAR",
    """CREATE TABLE label_matches (
        dataset VARCHAR NOT NULL, model_id VARCHAR NOT NULL, model_output VARCHAR, dataset_label VARCHAR,
        how VARCHAR NOT NULL,
        CHECK (how IN ('exact', 'alias', 'case', 'unmatched output', 'unmatched label')))""",
]

#: Key of a localization row (v3 on): one map, baseline or second reader against one reader.
LOCALIZATION_KEY = ("model_id", "image_id", "label", "source", "method", "params_key", "reader")
_KEY = ", ".join(LOCALIZATION_KEY)
_KEY_DDL = """model_id VARCHAR NOT NULL, image_id VARCHAR NOT NULL, label VARCHAR NOT NULL,
        source VARCHAR NOT NULL DEFAULT 'explainer', method VARCHAR NOT NULL,
        params_key VARCHAR NOT NULL, reader VARCHAR NOT NULL"""

# Version 6: localization scores long (issue 27), so a newly registered metric is scored into an
# existing store without a migration. A row of ``localization_scores`` says the metric was scored
# (``value`` NULL: scored, no value — e.g. a metric that needs a lesion on a case without one);
# its absence says it was not. Every wide metric column of v5 (one a user added too) becomes
# rows (NULLs included: v5 scored every metric of a row at once); ``localization`` keeps the
# per-map fields.
_V6 = [
    f"""CREATE TABLE localization_scores (
        {_KEY_DDL}, metric VARCHAR NOT NULL, value DOUBLE,
        PRIMARY KEY ({_KEY}, metric))""",
    f"""INSERT INTO localization_scores ({_KEY}, metric, value)
        SELECT {_KEY}, metric, value FROM localization
        UNPIVOT INCLUDE NULLS (value FOR metric IN
            (COLUMNS(* EXCLUDE ({_KEY}, prob, gt_positive, predicted))))""",
    f"""CREATE TABLE localization_v6 (
        {_KEY_DDL}, prob DOUBLE, gt_positive BOOLEAN, predicted BOOLEAN,
        CHECK (source IN ('explainer', 'baseline', 'reader')),
        PRIMARY KEY ({_KEY}))""",
    f"INSERT INTO localization_v6 SELECT {_KEY}, prob, gt_positive, predicted FROM localization",
    "DROP TABLE localization",
    "ALTER TABLE localization_v6 RENAME TO localization",
]

# Version 7: the clock a map's ``seconds`` were read from (issue 42): ``cpu`` (the process's CPU
# time over the pass, all threads: the computation's own time) or ``wall`` (wall-clock time, which
# counts time spent waiting on a busy machine). Every time stored before v7 is wall-clock time.
_V7 = [
    "ALTER TABLE maps ADD COLUMN timing VARCHAR",
    "UPDATE maps SET timing = 'wall' WHERE seconds IS NOT NULL",
]

# Version 8: race and insurance per image (issue 41), the Underdiagnosis paper's other groupings, as
# the source writes them (so far MIMIC-IV's admissions, joined by subject), with where each came from.
_V8 = [f"ALTER TABLE images ADD COLUMN {c} VARCHAR"
       for c in ("race", "insurance", "race_source", "insurance_source")]

MIGRATIONS: dict[int, list[str]] = {1: _V1, 2: _V2, 3: _V3, 4: _V4, 5: _V5, 6: _V6, 7: _V7, 8: _V8}
SCHEMA_VERSION = max(MIGRATIONS)

#: Meta key: JSON ``{model_id: model it serves}`` of models a build gives predictions and
#: Grad-CAM/Grad-CAM++ only (the demo's second DenseNet-121 training, there for the other's repeatability).
CAM_ONLY_META = "cam_only_models"
TABLES = (
    "meta",
    "datasets",
    "images",
    "labels",
    "annotations",
    "models",
    "predictions",
    "thresholds",
    "maps",
    "localization",
    "localization_scores",
    "geometry",
    "trust",
    "fidelity",
    "problems",
    "shortcut",
    "label_matches",
)
#: Tables filled by stages through the generic put_table / table methods.
METRIC_TABLES = ("localization", "geometry", "trust", "fidelity", "problems", "shortcut")
