"""`keep_variants:` a run of some rows of a larger config, written as overrides of it.

A rung of the scale ladder (config/ladder/) reuses config/paper.yaml and names the rows it
trains; Snakemake merges the two files (`--configfile config/paper.yaml config/ladder/X.yaml`),
and dictionaries cannot delete keys, so `keep_variants` does the deleting: every variant not
named is dropped, except those a kept one builds on (a curriculum's `of`, a continued
pre-training's `init_from`), and so is everything that pointed at a dropped one: table rows,
instruction comparisons, Meta-rater searches no kept variant uses. Applied after the variant
grids are expanded, so a grid's rows are kept by their expanded names.
"""

from __future__ import annotations

import copy

KEY = "keep_variants"


def dependencies(variant: dict) -> list[str]:
    """The variants one variant's selection or training builds on."""
    found = [variant.get("params", {}).get("of"), variant.get("pretrain", {}).get("init_from")]
    return [name for name in found if name]


def closure(variants: dict, names: list[str]) -> list[str]:
    unknown = sorted(set(names) - set(variants))
    if unknown:
        raise ValueError(f"{KEY} names variants the config does not have: {unknown}")
    kept: list[str] = []
    todo = list(names)
    while todo:
        name = todo.pop(0)
        if name not in kept:
            kept.append(name)
            todo += dependencies(variants[name])
    return kept


def prune_tables(protocols: dict, kept: set[str]) -> None:
    for protocol in protocols.values():
        for spec in protocol.get("tables", {}).values():
            if "variants" in spec:
                spec["variants"] = [v for v in spec["variants"] if v in kept]


def prune_instruct(instruct: dict, kept: set[str]) -> None:
    comparisons = instruct.get("comparisons", {})
    for name in list(comparisons):
        spec = comparisons[name]
        spec["variants"] = [v for v in spec["variants"] if v in kept]
        if spec["reference"] not in kept or not spec["variants"]:
            del comparisons[name]


def keep_variants(config: dict) -> dict:
    """The config with only the kept variants and what refers to them; unchanged without
    `keep_variants`."""
    if KEY not in config:
        return config
    out = copy.deepcopy(config)
    names = closure(out["variants"], list(out.pop(KEY)))
    baseline = out.get("evaluation", {}).get("baseline")
    if baseline and baseline not in names:
        raise ValueError(f"{KEY} must keep evaluation.baseline ({baseline!r}): every table "
                         "is read against it")
    kept = set(names)
    out["variants"] = {name: v for name, v in out["variants"].items() if name in kept}
    prune_tables(out.get("evaluation", {}).get("protocols", {}), kept)
    if "instruct" in out:
        prune_instruct(out["instruct"], kept)
    searches = out.get("metarater", {}).get("searches")
    if searches is not None:
        used = {v.get("params", {}).get("search") for v in out["variants"].values()}
        out["metarater"]["searches"] = {k: s for k, s in searches.items() if k in used}
    return out
