"""Generic helpers for the workflow's configuration: loading it, and passing sections to jobs.

What one job of a stage needs is resolved by that stage's resolver (`corpus.resolve`,
`judge.resolve`, `raters.resolve`, `annotate.resolve`, `analysis.plan`, `selection.resolve`,
`train.resolve`, `evaluate.resolve`, `report.plan`); where its files live, by `layout`; its
size, by `resources`. The workflow passes each job only its own resolved section (as JSON
`params`), so Snakemake's parameter-change detection reruns exactly the jobs whose settings
changed.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml


def load_config(path: str | Path) -> dict:
    """A configuration file as the workflow sees it: variant grids expanded into variants (the
    Snakefile does the same after validating the file)."""
    from selectlab.selection.grids import expand_variants

    with open(path) as handle:
        config = yaml.safe_load(handle)
    if isinstance(config, dict) and "variants" in config:
        config["variants"] = expand_variants(config["variants"])
    return config


def load_workflow_config(paths: list[str | Path], schema_dir: str | Path) -> dict:
    """The config a run of `snakemake --configfile A B ...` sees: each file merged into the
    ones before it (as Snakemake merges them), validated with the schema's defaults filled in,
    grids expanded and a `keep_variants` subset applied, as the Snakefile does."""
    from selectlab.schema import validate_config
    from selectlab.selection.grids import expand_variants, grid_variants
    from selectlab.variant_subset import keep_variants

    config: dict = {}
    for path in paths:
        with open(path) as handle:
            config = deep_merge(config, yaml.safe_load(handle) or {})
    schema = Path(schema_dir) / "config.schema.yaml"
    validate_config(config, schema)
    validate_config(grid_variants(config["variants"]),
                    Path(schema_dir) / "variant_set.schema.yaml", "a variant of a grid")
    config["variants"] = expand_variants(config["variants"])
    return keep_variants(config)


def as_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def deep_merge(base: dict, override: dict) -> dict:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
