"""annotate.shards_per_job: which shards share an annotation job, and which batch sizes stay out
of the job's params."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from selectlab.annotate import resolve

REPO = Path(__file__).resolve().parents[2]
TEST = yaml.safe_load((REPO / ".test" / "config.yaml").read_text())


def test_full_batches_share_a_job_and_the_rest_run_alone():
    shards = [f"group_{i:05d}" for i in range(23)]
    batches, alone = resolve.shard_batches(shards, 10)
    assert batches == {"group_0000": shards[:10], "group_0001": shards[10:20]}
    assert alone == shards[20:]
    assert resolve.shard_batches(shards, 1) == ({}, shards)
    assert resolve.batch_suffixes(10) == [str(i) for i in range(10)]
    assert resolve.batch_suffixes(100)[:2] == ["00", "01"] and resolve.batch_suffixes(1) == [""]


def test_a_batch_job_keeps_one_shards_memory_and_adds_up_their_time():
    family = next(iter(TEST["annotate"]["families"]))
    one, ten = resolve.resources(TEST, family), resolve.resources(TEST, family, 10)
    assert ten == one | {"runtime": 10 * one["runtime"]}


def test_stats_files_one_per_batch_and_one_per_shard_alone():
    assert resolve.stats_files("r", ["a", "b"], ["group_0000"], ["group_00010"]) == [
        "r/logs/annotate/a/group_0000_batch.json", "r/logs/annotate/a/group_00010.json",
        "r/logs/annotate/b/group_0000_batch.json", "r/logs/annotate/b/group_00010.json"]


def test_a_batch_with_a_hole_is_not_a_batch():
    shards = [f"shard_{i:05d}" for i in range(10) if i != 4]
    assert resolve.shard_batches(shards, 10) == ({}, shards)


@pytest.mark.parametrize("per_job", [0, 2, 16, 1000 - 1])
def test_only_powers_of_ten(per_job):
    with pytest.raises(ValueError, match="must be 1, 10 or 100"):
        resolve.shard_batches(["shard_00000"], per_job)


def test_unnumbered_shards_cannot_be_batched():
    with pytest.raises(ValueError, match="does not end in 1 digits"):
        resolve.shard_batches(["shard_a"], 10)


def test_batch_sizes_are_throughput_not_params():
    config = copy.deepcopy(TEST)
    family = next(name for name, f in config["annotate"]["families"].items()
                  if "forward_batch_size" in f)
    before = resolve.resolve_family(config, family)
    config["annotate"]["batch_size"] = 7
    config["annotate"]["families"][family]["forward_batch_size"] = 3
    assert resolve.resolve_family(config, family) == before
    assert "forward_batch_size" not in before
    assert resolve.resolve_throughput(config, family) == {"batch_size": 7,
                                                          "forward_batch_size": 3}


def test_rater_forward_batch_size_is_throughput_not_a_param():
    from selectlab.raters import resolve as raters

    config = copy.deepcopy(TEST)
    rater = next(name for name in raters.configured_raters(config)
                 if "forward_batch_size" in raters.resolve_throughput(config, name))
    before = raters.rater_params(config, rater)
    config["raters"].setdefault(rater, {})["forward_batch_size"] = 5
    assert raters.rater_params(config, rater) == before
    assert raters.resolve_throughput(config, rater) == {"forward_batch_size": 5}
