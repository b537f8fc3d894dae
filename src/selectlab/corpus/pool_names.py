"""Names of selection pools, without the libraries that cut them (selectlab.corpus.pools): the
planning and command-line modules that only name a pool import this, not pandas and pyarrow."""

from __future__ import annotations

FULL = "full"  # the tokenized shards themselves: every document, one unit each
POOL_SEPARATOR = "__"  # pool shard = {shard}__{pool}; shard names never hold two underscores


def pool_shard(shard: str, pool: str) -> str:
    return shard if pool == FULL else f"{shard}{POOL_SEPARATOR}{pool}"
