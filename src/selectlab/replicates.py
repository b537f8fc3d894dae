"""Replicates: k runs of one selection variant, each with its own selection and model seed.

`replicates: k` at the top of the config (default 1, as the papers ran each selection once)
or on a variant gives k runs: the variant itself and `{variant}__rep{i}` for i = 1 .. k-1.
Replicate i selects with its own seed: derived from its own name like every variant's
(selectlab.selection.resolve.variant_seed), or `replicate_seed(seed, i)` of a variant with a set
`seed`. Its model trains with `model_seed`: the run's seed for replicate 0 of every variant (so
the rows of one replicate differ only in their data), `replicate_seed(run seed, i)` for
replicate i; a set `pretrain.seed` is shifted the same way. A replicate that reorders or
continues another variant (a curriculum's `of`, a continued pre-training's `init_from`) uses
that variant's replicate i when it has one, so each replicate is a whole independent chain.
The tables report the mean of a variant's replicates and a 95% interval over them.
"""

from __future__ import annotations

import copy

REPLICATE_MARK = "__rep"
SEED_STRIDE = 7919  # a prime: replicate seeds of neighbouring base seeds do not collide


# A MATES variant's stages are generated from the configured variant's name
# (selectlab.selection.resolve), so a replicate of it would have none: it runs once whatever
# the run's `replicates`, and asking it for more is an error.
UNREPLICATED_METHODS = ("mates",)


def replicate_count(config: dict, variant: str) -> int:
    entry = config["variants"][variant]
    if entry["method"] in UNREPLICATED_METHODS:
        if int(entry.get("replicates", 1)) > 1:
            raise ValueError(f"variant {variant!r}: a {entry['method']} variant runs once; "
                             f"it cannot have {entry['replicates']} replicates")
        return 1
    return int(entry.get("replicates", config.get("replicates", 1)))


def replicate_name(variant: str, index: int) -> str:
    return variant if index == 0 else f"{variant}{REPLICATE_MARK}{index}"


def replicate_names(config: dict, variant: str) -> list[str]:
    """The variant itself first, then its other replicates."""
    return [replicate_name(variant, i) for i in range(replicate_count(config, variant))]


def parse_replicate_name(name: str) -> tuple[str, int] | None:
    """(variant, index) of a `{variant}__rep{i}` name (i >= 1), or None for any other name."""
    base, mark, index = name.rpartition(REPLICATE_MARK)
    if not mark or not base or not index.isdigit() or int(index) < 1:
        return None
    return base, int(index)


def base_variant(name: str) -> str:
    parsed = parse_replicate_name(name)
    return parsed[0] if parsed else name


def replicate_seed(seed: int, index: int) -> int:
    return (int(seed) + SEED_STRIDE * index) % 2**31


def model_seed(config: dict, name: str) -> int:
    """The seed a model trains with unless its variant sets one: the run's, shifted for
    replicate i >= 1 (the same for every variant's replicate i)."""
    parsed = parse_replicate_name(name)
    index = parsed[1] if parsed and parsed[0] in config["variants"] else 0
    return replicate_seed(int(config["seed"]), index)


def all_replicate_names(config: dict) -> list[str]:
    """Every replicate beyond the first of every configured variant, in config order."""
    return [name for variant in config["variants"]
            for name in replicate_names(config, variant)[1:]]


def replicate_entry(config: dict, name: str) -> dict | None:
    """A replicate's variant entry, or None when `name` names no configured replicate."""
    parsed = parse_replicate_name(name)
    if parsed is None or parsed[0] not in config["variants"]:
        return None
    variant, index = parsed
    if index >= replicate_count(config, variant):
        raise ValueError(f"variant {variant!r} has {replicate_count(config, variant)} "
                         f"replicate(s); {name!r} is not one of them")
    entry = copy.deepcopy(config["variants"][variant])
    if "seed" in entry:  # else the replicate's selection seed derives from its own name
        entry["seed"] = replicate_seed(entry["seed"], index)
    params, pretrain = entry.get("params", {}), entry.get("pretrain", {})
    if "seed" in pretrain:
        pretrain["seed"] = replicate_seed(pretrain["seed"], index)
    for holder, key in ((params, "of"), (pretrain, "init_from")):
        other = holder.get(key)
        if other in config["variants"] and index < replicate_count(config, other):
            holder[key] = replicate_name(other, index)
    return entry
