"""Which pool each variant selects from (selectlab.corpus.pools), and what that asks of the run.

A variant's pool is its own `pool`, else its family's in `corpus.pool_by_family`, else `full`
(the tokenized shards, one document a unit). A pool other than `full` is cut into pool shards;
the score families its variants read annotate them (annotate.families.*.pools), and selection
and packing read them.
"""

from __future__ import annotations

from selectlab import layout
from selectlab.corpus.pools import FULL, FULL_POOL, PoolSpec, pool_shard
from selectlab.corpus.resolve import pool_settings
from selectlab.selection.resolve import selection_params, selection_raters, variant_entry

__all__ = ["FULL"]

# Methods that read what is prepared once over the full pool (percentile ranks, MATES' own
# proxy runs); they select from `full` only.
FULL_POOL_METHODS = ("mean_rating", "intersection", "metarater", "mates")


def pool_specs(config: dict) -> dict[str, PoolSpec]:
    """The configured pools besides `full` (checked by the corpus stage's resolver)."""
    return {name: PoolSpec(**spec) for name, spec in pool_settings(config).items()}


def variant_pool(config: dict, name: str) -> str:
    entry = variant_entry(config, name)
    pool = entry.get("pool") or config["corpus"].get("pool_by_family", {}).get(
        entry.get("family"), FULL)
    if pool != FULL and pool not in config["corpus"].get("pools", {}):
        raise ValueError(f"variant {name!r}: unknown pool {pool!r}; configured: "
                         f"{sorted(config['corpus'].get('pools', {}))} and {FULL!r}")
    return pool


def variant_pool_spec(config: dict, name: str) -> PoolSpec:
    pool = variant_pool(config, name)
    return pool_specs(config)[pool] if pool != FULL else FULL_POOL


def pool_shards(shards: list[str], pool: str) -> list[str]:
    return [pool_shard(shard, pool) for shard in shards]


def ready_file(root: str, pool: str) -> str:
    """The file that stands for every shard of a pool and lists them: the read report for
    `full`, the pool's report (written after all its pool shards) for any other."""
    return layout.read_report(root) if pool == FULL else layout.pool_report(root, pool)


def pool_ready(config: dict, root: str, name: str) -> str:
    """The ready file of a variant's pool."""
    return ready_file(root, variant_pool(config, name))


def pool_problems(config: dict) -> list[str]:
    """Each variant whose inputs cannot come from its pool, one line each (config check)."""
    from selectlab.annotate.resolve import family_pools

    problems = []
    for name, entry in config["variants"].items():
        try:
            pool = variant_pool(config, name)
        except ValueError as error:
            problems.append(str(error))
            continue
        where = f"variants.{name} (pool {pool})"
        if pool != FULL and entry["method"] in FULL_POOL_METHODS:
            problems.append(f"{where}: method {entry['method']} reads what is prepared over the "
                            "full pool only (ranks, proxy runs); select it from `full`")
        for family in selection_raters(config, name):
            if family in config["annotate"]["families"] and \
                    pool not in family_pools(config, family):
                problems.append(f"{where}: reads {family}, which annotates only "
                                f"{family_pools(config, family)}; add {pool!r} to "
                                f"annotate.families.{family}.pools")
        of = selection_params(config, name).get("of") if entry["method"] == "curriculum" \
            else None
        if of in config["variants"] and variant_pool(config, of) != pool:
            problems.append(f"{where}: reorders {of!r}, which selects from pool "
                            f"{variant_pool(config, of)!r}")
    return problems
