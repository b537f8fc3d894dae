"""Variants declared as grids, where a paper varies one factor (or a few) over a fixed design.

An entry of `variants:` with a `grid` key is a grid, not a variant:

    qurating_criteria:                      # the grid's own name (no variant is called this)
      grid:                                 # axes; the first varies slowest
        criterion: [writing_style, educational_value]
        mode: {top: {tau: 0}, t2: {tau: 2.0}}
      name: "{criterion}_{mode}"
      variant: {family: qurating, method: rating_sample, label: "{criterion.label} {mode}",
                params: {score: "qurater.{criterion}", tau: "{mode.tau}"}}

An axis lists its levels, either as plain values (each is a level's name) or as a mapping from
a level's name to its attributes. In `name` and anywhere in the `variant` template, `{axis}` is
the level's name and `{axis.key}` one of its attributes; `{axis.label}`, unless the level sets
it, is the name with spaces for underscores and a capital first letter. A string that is exactly
one placeholder takes the value itself (a number stays a number, a list a list); placeholders
inside a longer string are written into it. The grid expands, where it stands, into one variant
per combination of levels, so the expanded order is the config's order.

An entry with a `rerun` key re-runs rows declared above it under other settings, where a paper
repeats another paper's rows on its own pool (DataMan's baselines are QuRating's rows re-run on
DataPajama):

    dataman_baselines:
      rerun: [uniform, educational_value_t2]  # variants (or grid variants) above this entry
      name: "{variant}_datapajama"
      with: {family: dataman_baseline, label: "{label} (DataPajama)"}  # replaces these keys

A row that refers to another variant (a curriculum's `of`, `init_from`, `shared_from`) cannot
be re-run alone and is refused.

`expand_variants` is called once when a configuration is loaded (the Snakefile, and
`selectlab.config.load_config`), so every resolver sees plain variants only.
"""

from __future__ import annotations

import copy
import itertools
import re

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?\}")


def is_grid(entry: object) -> bool:
    return isinstance(entry, dict) and "grid" in entry


def is_rerun(entry: object) -> bool:
    return isinstance(entry, dict) and "rerun" in entry


def expand_rerun(key: str, spec: dict, earlier: dict[str, dict]) -> dict[str, dict]:
    """Copies of the listed variants (declared before this entry), renamed and overridden."""
    copies: dict[str, dict] = {}
    for source in spec["rerun"]:
        if source not in earlier:
            raise ValueError(f"rerun {key!r}: {source!r} is not a variant declared above it")
        original = earlier[source]
        if original.get("method") == "curriculum" or "shared_from" in original or \
                "init_from" in original.get("pretrain", {}):
            raise ValueError(f"rerun {key!r}: {source!r} refers to another variant; re-run that "
                             "one and declare this row by hand")
        name = spec["name"].replace("{variant}", source)
        changes = copy.deepcopy(spec["with"])
        if "label" in changes:  # `{label}`: the row's own label
            changes["label"] = changes["label"].replace("{label}", original.get("label", source))
        copies[name] = copy.deepcopy(original) | changes | {"rerun_of": source}
    return copies


def default_label(level: object) -> str:
    text = str(level).replace("_", " ")
    return text[:1].upper() + text[1:]


def axis_levels(grid: str, axis: str, spec: object) -> list[tuple[object, dict]]:
    """(name, attributes) of each level of one axis."""
    if isinstance(spec, list) and spec:
        return [(level, {}) for level in spec]
    if isinstance(spec, dict) and spec:
        return [(level, dict(attributes or {})) for level, attributes in spec.items()]
    raise ValueError(f"grid {grid!r}: axis {axis!r} needs a non-empty list or mapping of levels")


def level_value(grid: str, choice: dict, axis: str, key: str | None) -> object:
    if axis not in choice:
        raise ValueError(f"grid {grid!r}: no axis {axis!r} (axes: {sorted(choice)})")
    level, attributes = choice[axis]
    if key is None:
        return level
    if key in attributes:
        return copy.deepcopy(attributes[key])
    if key == "label":
        return default_label(level)
    raise ValueError(f"grid {grid!r}: level {level!r} of axis {axis!r} has no {key!r}")


def fill(grid: str, template: object, choice: dict) -> object:
    """`template` with every placeholder replaced by the chosen levels (mapping keys kept)."""
    if isinstance(template, dict):
        return {key: fill(grid, value, choice) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(grid, value, choice) for value in template]
    if not isinstance(template, str):
        return template
    whole = PLACEHOLDER.fullmatch(template)
    if whole:
        return level_value(grid, choice, *whole.groups())
    return PLACEHOLDER.sub(lambda m: str(level_value(grid, choice, *m.groups())), template)


def expand_grid(grid: str, spec: dict) -> dict[str, dict]:
    """The variants one grid stands for, in axis order (the first axis varies slowest)."""
    axes = {axis: axis_levels(grid, axis, levels) for axis, levels in spec["grid"].items()}
    variants: dict[str, dict] = {}
    for levels in itertools.product(*axes.values()):
        choice = dict(zip(axes, levels, strict=True))
        name = fill(grid, spec["name"], choice)
        if not isinstance(name, str) or name in variants:
            raise ValueError(f"grid {grid!r}: `name` {spec['name']!r} gives {name!r} twice or "
                             "not as text; name every axis in it")
        variants[name] = fill(grid, spec["variant"], choice)
    return variants


def grid_variants(variants: dict) -> dict[str, dict]:
    """Only the variants the grids and reruns of a `variants:` section expand into."""
    expanded = expand_variants(variants)
    return {name: expanded[name] for name in expanded
            if name not in variants or is_grid(variants[name]) or is_rerun(variants[name])}


def expand_variants(variants: dict) -> dict:
    """The `variants:` section with each grid and rerun replaced, where it stands, by its
    variants."""
    expanded: dict[str, dict] = {}
    for key, entry in variants.items():
        produced = expand_grid(key, entry) if is_grid(entry) else \
            expand_rerun(key, entry, expanded) if is_rerun(entry) else {key: entry}
        for name, variant in produced.items():
            if name in expanded or (name != key and name in variants):
                raise ValueError(f"variant {name!r} is named twice (grid {key!r} and another "
                                 "entry of `variants:`)")
            expanded[name] = variant
    return expanded
