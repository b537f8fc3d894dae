"""The corpus stage's plan: which shards exist and which raw files each reads, and what the
corpus, held-out and tokenizer jobs need.

Plain functions of the validated config, used while the workflow builds its graph.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

from selectlab import layout, shard_jobs

SPLITS = ("validation", "test")
DEFAULT_DAMAGED_FILE_POLICY = "stop"
# A held-out split that evaluation never reads: the reference set of MATES probes
# (selectlab.mates.plan), written by the embedded build when configured.
REFERENCE_SPLIT = "reference"


def embedded_shard_names(num_shards: int) -> list[str]:
    return [f"shard_{i:05d}" for i in range(num_shards)]


def slimpajama_shard_groups(directory: str | Path, pattern: str, group_size: int,
                            limit: int | None = None) -> dict[str, list[str]]:
    """Group the sorted raw files into shards of `group_size` files each.

    One annotation job then covers a group, which keeps the DAG at thousands of jobs, not
    hundreds of thousands, at full scale.
    """
    files = sorted(glob.glob(str(Path(directory) / pattern)))
    if limit:
        files = files[:limit]
    if not files:
        raise ValueError(f"no files match {pattern!r} under {directory}")
    return {
        f"group_{start // group_size:05d}": files[start:start + group_size]
        for start in range(0, len(files), group_size)
    }


def shard_files(config: dict, root: str) -> dict[str, list[str]]:
    """Shard name -> the raw files it reads, for either corpus mode."""
    corpus = config["corpus"]
    if corpus["mode"] == "embedded":
        return {name: [layout.raw_shard(root, name)]
                for name in embedded_shard_names(corpus["num_shards"])}
    slimpajama = corpus["slimpajama"]
    return slimpajama_shard_groups(slimpajama["train_dir"], slimpajama["pattern"],
                                   slimpajama["group_size"], slimpajama.get("max_files"))


def reference_split_configured(config: dict) -> bool:
    corpus = config["corpus"]
    return corpus["mode"] == "embedded" and bool(
        corpus["embedded"]["heldout_docs_per_source"].get(REFERENCE_SPLIT))


def built_heldout_splits(config: dict) -> list[str]:
    """The held-out splits the embedded build writes: the reported ones, and the unreported
    reference split when configured."""
    return list(SPLITS) + ([REFERENCE_SPLIT] if reference_split_configured(config) else [])


def build_params(config: dict) -> dict:
    """What `selectlab corpus build` needs (the embedded corpus)."""
    corpus = config["corpus"]
    return {"embedded": corpus["embedded"], "set_names": corpus["set_names"],
            "num_shards": corpus["num_shards"]}


def build_stats_inputs(config: dict, root: str) -> list[str]:
    """The embedded corpus's build record, whose declared inputs (packages, versions,
    checksums) the provenance records; a SlimPajama pool has none."""
    return [layout.corpus_build_stats(root)] if config["corpus"]["mode"] == "embedded" else []


def heldout_params(config: dict, split: str) -> dict:
    """What `selectlab corpus heldout` needs for one SlimPajama split."""
    slimpajama = config["corpus"]["slimpajama"]
    return {"directory": slimpajama[f"{split}_dir"], "pattern": slimpajama["pattern"],
            "tokens_per_split": slimpajama["heldout_tokens_per_split"],
            "max_doc_chars": max_doc_chars(config),
            "on_damaged_file": damaged_file_policy(config), "seed": config["seed"]}


def max_doc_chars(config: dict) -> int:
    return config["corpus"]["reader"]["max_doc_chars"]


def id_root(config: dict, raw_files: list[str]) -> str:
    """Where the ids of records without one are taken relative to, for a job reading
    `raw_files` (one shard's, or several).

    Every job that reads raw shards and matches documents by id (tokenisation, annotation, the
    judge sample) names such records relative to the same root, so their ids agree: the
    SlimPajama split directory (`train_dir`), or the directory all embedded shards lie in.
    """
    corpus = config["corpus"]
    if corpus["mode"] == "slimpajama":
        return str(corpus["slimpajama"]["train_dir"])
    return os.path.dirname(raw_files[0])


def job_kinds(config: dict, rules: tuple[str, str], shards: list[str],
              any_shard: str) -> list[shard_jobs.JobKind]:
    """The forms of a tokenisation or pool-cut rule: one shard a job, and batches of
    corpus.shards_per_job shards (selectlab.shard_jobs)."""
    return shard_jobs.job_kinds(rules, shards, shards_per_job(config, "corpus"),
                                "corpus.shards_per_job", any_shard)


def files_per_shard(config: dict) -> int:
    """Raw files a shard reads: SlimPajama's group size; an embedded shard is one file."""
    corpus = config["corpus"]
    return int(corpus["slimpajama"]["group_size"]) if corpus["mode"] == "slimpajama" else 1


def shards_per_job(config: dict, section: str, files_per_job: int | None = None) -> int:
    """`corpus.shards_per_job` or `annotate.shards_per_job`, `auto` resolved by the files a
    shard reads and the section's `files_per_job` (or the one given: a family's)
    (selectlab.shard_jobs.resolve_per_job)."""
    value = config[section].get("shards_per_job", 1)
    if value != "auto":
        return int(value)
    files = files_per_job or config[section].get("files_per_job", shard_jobs.FILES_PER_JOB)
    return shard_jobs.resolve_per_job(value, files_per_shard(config), int(files))


def damaged_file_policy(config: dict) -> str:
    """`stop` (the default) or `quarantine` a truncated or corrupt raw file (selectlab.shards)."""
    return config["corpus"]["reader"].get("on_damaged_file", DEFAULT_DAMAGED_FILE_POLICY)


def pool_settings(config: dict) -> dict[str, dict]:
    """corpus.pools: each selection pool's name, unit, sequence length and share, checked (what
    a pool shard is cut with; its `about` text changes nothing)."""
    from selectlab.corpus.pools import pool_spec

    return {name: pool_spec(name, settings).to_dict()
            for name, settings in config["corpus"].get("pools", {}).items()}
