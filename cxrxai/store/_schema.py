"""The store's schema, versioned: ``MIGRATIONS[v]`` takes a store from version v-1 to v.

A store records its version in ``meta('schema_version')``. Writers migrate older stores
forward on open; readers refuse stores from a newer version (:class:`SchemaVersionError`) and
read older ones as they are (a missing table reads as "not computed yet").
"""

from __future__ import annotations

__all__ = ["SCHEMA_VERSION", "MIGRATIONS", "TABLES"]

_V1 = [
    """CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)""",
    """CREATE TABLE datasets (
        dataset VARCHAR PRIMARY KEY, source VARCHAR NOT NULL, root VARCHAR, description VARCHAR,
        labels VARCHAR[], config VARCHAR, created_at TIMESTAMP DEFAULT current_timestamp)""",
    """CREATE TABLE images (
        image_id VARCHAR PRIMARY KEY, dataset VARCHAR NOT NULL, path VARCHAR, generator_key VARCHAR,
        patient_id VARCHAR, sex VARCHAR, age DOUBLE, age_bin VARCHAR, view VARCHAR, split VARCHAR,
        width INTEGER NOT NULL, height INTEGER NOT NULL)""",
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

MIGRATIONS: dict[int, list[str]] = {1: _V1}
SCHEMA_VERSION = max(MIGRATIONS)
TABLES = ("meta", "datasets", "images", "labels", "annotations", "models", "predictions", "thresholds", "maps")
