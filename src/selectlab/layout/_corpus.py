"""Paths of the corpus, its tokens and its annotation sidecars."""

from __future__ import annotations

import os

from selectlab.layout._outputs import table
from selectlab.layout._paths import EXT, FAMILY, SHARD, SPLIT, _under, path


# ---- corpus ----------------------------------------------------------------------------------
@path
def raw_shard(root: str, shard: str = SHARD) -> str:
    """An embedded-corpus training shard (SlimPajama's files are read where they lie)."""
    return _under(root, "corpus", "raw", f"{shard}.jsonl.zst")


@path
def heldout(root: str, split: str = SPLIT) -> str:
    return _under(root, "corpus", "heldout", f"{split}.jsonl.zst")


@path
def dsir_target(root: str) -> str:
    """The embedded corpus's DSIR target split (`pool:` targets), apart from held-out and
    training documents."""
    return _under(root, "corpus", "dsir_target.jsonl.zst")


@path
def ground_truth(root: str) -> str:
    return _under(root, "corpus", "ground_truth.parquet")


@path
def corpus_build_stats(root: str) -> str:
    return _under(root, "corpus", "build_stats.json")


@path
def shard_read_report(root: str, shard: str = SHARD) -> str:
    return _under(root, "corpus", "reports", f"{shard}.json")


@path
def quarantine(root: str, shard: str = SHARD) -> str:
    return _under(root, "corpus", "quarantine", f"{shard}.jsonl")


@path
def tokens(root: str, shard: str = SHARD) -> str:
    return _under(root, "corpus", "tokens", f"{shard}.npy")


def tokens_dir(root: str) -> str:
    return os.path.dirname(tokens(root))


@path
def tokenizer(root: str) -> str:
    return _under(root, "tokenizer")


@path
def read_report(root: str) -> str:
    """The per-shard read reports as one table; selection waits on it for every shard."""
    return table(root, "read_report", "csv")


@path
def pool_report(root: str, pool: str = "{pool}") -> str:
    """A pool's units and tokens per pool shard and source (selectlab.corpus.pools); selection
    from the pool waits on it for every pool shard."""
    return _under(root, "corpus", "pools", f"{pool}.json")


# ---- sidecars (annotation) -------------------------------------------------------------------
@path
def meta_sidecar(root: str, shard: str = SHARD) -> str:
    return sidecar(root, "meta", shard)


@path
def sidecar(root: str, family: str = FAMILY, shard: str = SHARD) -> str:
    return _under(root, "attributes", family, f"{shard}.parquet")


def attributes_dir(root: str) -> str:
    return _under(root, "attributes")


@path
def annotation_stats(root: str, family: str = FAMILY, shard: str = SHARD) -> str:
    """One annotation job's throughput record, beside its log."""
    return _under(root, "logs", "annotate", family, f"{shard}.json")


@path
def annotation_batch_stats(root: str, family: str = FAMILY, batch: str = "{batch}") -> str:
    """The throughput records of one job of annotate.shards_per_job shards (a JSON list)."""
    return _under(root, "logs", "annotate", family, f"{batch}_batch.json")


@path
def family_throughput(root: str, family: str = FAMILY, ext: str = EXT) -> str:
    return _under(root, "attributes", family, f"throughput.{ext}")
