"""Which shards share a job, for the rules that run once per shard (tokenisation, pool cuts,
annotation): `shards_per_job` of them (1, 10 or 100), each shard still with its own outputs.

A job's outputs must be patterns of its wildcards, so a batch is the shards whose names differ
only in their last digits (`group_0004` holds `group_00040` ... `group_00049`): hence 10 or 100
shards per job. The shards of a last, incomplete batch run one per job. Fewer, larger jobs are
what keeps a plan of thousands of shards quick (benchmarks/dag_scale.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

BATCH_SIZES = (1, 10, 100)
# `auto`, unless `files_per_job` says otherwise: about this many raw files a job, the paper's
# 64-file shards (~0.7B tokens; about 1.5 H100-hours for the 1.3B QuRater,
# config/paper/annotation.yaml), whatever the files per shard.
FILES_PER_JOB = 64


def resolve_per_job(value: int | str, files_per_shard: int,
                    files_per_job: int = FILES_PER_JOB) -> int:
    """`shards_per_job` as set (1, 10, 100), or for `auto` the batch whose jobs read closest to
    `files_per_job` raw files: at 64, single-file shards go 100 a job, 64-file shards one."""
    if value != "auto":
        return int(value)
    return min(BATCH_SIZES, key=lambda n: abs(math.log(n * files_per_shard / files_per_job)))


def batch_suffixes(per_job: int, setting: str) -> list[str]:
    """The last digits that tell the shards of one job apart ("0".."9" for 10)."""
    width = len(str(per_job - 1))
    if per_job < 1 or (per_job > 1 and 10**width != per_job):
        raise ValueError(f"{setting} must be 1, 10 or 100, not {per_job}")
    return [f"{index:0{width}d}" for index in range(per_job)] if per_job > 1 else [""]


def shard_batches(shards: Sequence[str], per_job: int,
                  setting: str) -> tuple[dict[str, list[str]], list[str]]:
    """Jobs of `per_job` shards each, named by their shards' common prefix, and the shards that
    run one per job (those of a last, incomplete batch; all of them when `per_job` is 1)."""
    suffixes = batch_suffixes(per_job, setting)
    if per_job == 1:
        return {}, list(shards)
    width = len(suffixes[0])
    members: dict[str, list[str]] = {}
    for shard in shards:
        if not shard[-width:].isdigit():
            raise ValueError(f"shard {shard!r} does not end in {width} digits; "
                             f"{setting} needs numbered shards")
        members.setdefault(shard[:-width], []).append(shard)
    full = {prefix: names for prefix, names in members.items()
            if sorted(name[-width:] for name in names) == suffixes}
    return full, [shard for shard in shards if shard[:-width] not in full]


@dataclass(frozen=True)
class JobKind:
    """One of a per-shard rule's two forms: `rule` (its name), the `{batch}` wildcard's
    `pattern`, the `suffixes` that turn a batch name into its shards' names, and `members`
    (each job's batch name and its shards; a shard alone is its own batch)."""

    rule: str
    pattern: str
    suffixes: list[str]
    members: dict[str, list[str]]

    @property
    def batched(self) -> bool:
        return self.suffixes != [""]

    def shards(self, batch: str) -> list[str]:
        return self.members[batch]


def job_kinds(rules: tuple[str, str], shards: Sequence[str], per_job: int, setting: str,
              any_shard: str) -> list[JobKind]:
    """The forms of a per-shard rule, named `rules` (alone, batch): the first for shards that
    run alone (its pattern `any_shard` when none is batched), the second for full batches."""
    alone_rule, batch_rule = rules
    batches, alone = shard_batches(shards, per_job, setting)
    one_each = {shard: [shard] for shard in alone}
    if not batches:
        return [JobKind(alone_rule, any_shard, [""], one_each)]
    return [JobKind(alone_rule, names_pattern(alone), [""], one_each),
            JobKind(batch_rule, names_pattern(list(batches)),
                    batch_suffixes(per_job, setting), batches)]


def first_shards(kinds: Sequence[JobKind]) -> dict[str, str]:
    """Each shard's job's first shard, for the jobs of `kinds`."""
    return {shard: members[0] for kind in kinds for members in kind.members.values()
            for shard in members}


def standing_for(shards: Sequence[str], first: dict[str, str]) -> list[str]:
    """The shards whose files stand for all of `shards` as inputs of a later job: the first
    shard of each job that wrote them (`first_shards`), in order.

    A job writes all its shards' files together, so one of them is rewritten exactly when all
    are, and a missing one reruns the job that writes them all; listing one file per earlier
    job rather than per shard keeps a plan of thousands of shards small."""
    return list(dict.fromkeys(first[shard] for shard in shards))


def names_pattern(names: Sequence[str]) -> str:
    """A wildcard regex matching exactly these names; with none, one that matches nothing."""
    return "|".join(names) if names else "(?!)"
