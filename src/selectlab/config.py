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

from selectlab.plugins.loading import anchored

INCLUDE = "include"


def read_config_file(path: str | Path) -> dict:
    """One config file as written, its `include:` paths and plugins' .py files made absolute
    (each is relative to the file that names it), so a copy written elsewhere still finds them."""
    with open(path) as handle:
        config = yaml.safe_load(handle) or {}
    here = Path(path).resolve().parent
    if INCLUDE in config:
        config[INCLUDE] = [str(here / name) for name in config[INCLUDE]]
    for entry in plugin_entries(config).values():
        entry["module"] = anchored(entry["module"], here)
    return config


def plugin_entries(config: dict) -> dict[tuple[str, str], dict]:
    """The config's plugin entries that name a module (selectlab.plugins), by (section, name):
    score families of kind plugin and selection methods."""
    found = {}
    families = (config.get("annotate") or {}).get("families") or {}
    methods = (config.get("selection") or {}).get("methods") or {}
    for section, entries in (("annotate.families", families), ("selection.methods", methods)):
        for name, entry in entries.items():
            if isinstance(entry, dict) and isinstance(entry.get("module"), str) and (
                    section == "selection.methods" or entry.get("kind") == "plugin"):
                found[(section, name)] = entry
    return found


def plugin_files(config: dict) -> list[str]:
    """The .py files of your own families and methods: inputs of the jobs that read them."""
    from selectlab.plugins.loading import module_files

    return sorted({path for entry in plugin_entries(config).values()
                   for path in module_files(entry)})


def anchor_plugin_modules(config: dict, paths: list[str | Path]) -> None:
    """Plugins' relative .py paths in the top-level files (as Snakemake read them) made
    relative to the file that names them, as `read_config_file` does for included files."""
    entries = plugin_entries(config)
    for path in paths:
        with open(path) as handle:
            written = plugin_entries(yaml.safe_load(handle) or {})
        here = Path(path).resolve().parent
        for key, entry in written.items():
            if key in entries and entries[key]["module"] == entry["module"]:
                entries[key]["module"] = anchored(entry["module"], here)


def file_with_includes(path: str | Path) -> dict:
    """One included file over what it includes in turn, each file read once."""
    written = read_config_file(path)
    merged: dict = {}
    for name in written.pop(INCLUDE, []):
        merged = deep_merge(merged, file_with_includes(name))
    return deep_merge(merged, written)


def included_settings(paths: list[str | Path]) -> dict:
    """The settings that the files' `include:` lists name, each merged over the ones before,
    includes of includes first. A config file keeps the settings a reader needs to see its rows
    (config/paper.yaml) and includes the papers' fixed protocols, raters and job sizes."""
    merged: dict = {}
    for path in paths:
        for name in read_config_file(path).get(INCLUDE, []):
            merged = deep_merge(merged, file_with_includes(name))
    return merged


def with_includes(config: dict, paths: list[str | Path]) -> dict:
    """`config` (the files at `paths` merged, as Snakemake merges them, plus any --config
    overrides) on top of what their `include:` lists name, the `include` key itself gone."""
    merged = deep_merge(included_settings(paths), config)
    merged.pop(INCLUDE, None)
    anchor_plugin_modules(merged, paths)
    return merged


def read_with_includes(path: str | Path) -> dict:
    """One config file over what it includes, as written otherwise (grids not expanded)."""
    return with_includes(read_config_file(path), [path])


def load_config(path: str | Path) -> dict:
    """A configuration file as the workflow sees it: its includes merged under it and variant
    grids expanded into variants (the Snakefile does the same after validating the file)."""
    from selectlab.selection.grids import expand_variants

    config = read_with_includes(path)
    if isinstance(config, dict) and "variants" in config:
        config["variants"] = expand_variants(config["variants"])
    return config


def load_workflow_config(paths: list[str | Path], schema_dir: str | Path) -> dict:
    """The config a run of `snakemake --configfile A B ...` sees: each file merged into the
    ones before it (as Snakemake merges them) over what they include, validated with the
    schema's defaults filled in, grids expanded and a `keep_variants` subset applied, as the
    Snakefile does."""
    from selectlab.schema import validate_config
    from selectlab.selection.grids import expand_variants, grid_variants
    from selectlab.variant_subset import keep_variants

    config: dict = {}
    for path in paths:
        config = deep_merge(config, read_config_file(path))
    config = with_includes(config, paths)
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
