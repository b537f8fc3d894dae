"""annotate.shards_per_job: an annotation job's stats files and shape, and which batch sizes stay
out of the job's params (which shards share a job: test_shard_jobs.py)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import yaml

from selectlab.annotate import resolve

REPO = Path(__file__).resolve().parents[2]
TEST = yaml.safe_load((REPO / ".test" / "config.yaml").read_text())


def test_a_batch_job_keeps_one_shards_memory_and_adds_up_their_time():
    family = next(iter(TEST["annotate"]["families"]))
    one, ten = resolve.resources(TEST, family), resolve.resources(TEST, family, 10)
    assert ten == one | {"runtime": 10 * one["runtime"]}


def test_stats_files_one_per_batch_and_one_per_shard_alone_in_each_pool():
    shards = [f"group_{i:05d}" for i in range(11)]
    config = {"annotate": {"shards_per_job": 10,
                           "families": {"a": {"kind": "signals"}, "b": {"kind": "signals"}}}}
    kinds = resolve.family_job_kinds(config, ["a", "b"], ("annotate", "annotate_batch"),
                                     shards, "any")
    assert resolve.stats_files("r", [("a", "full"), ("b", "qurating")], kinds) == [
        "r/logs/annotate/a/group_00010.json", "r/logs/annotate/a/group_0000_batch.json",
        "r/logs/annotate/b/group_00010__qurating.json",
        "r/logs/annotate/b/group_0000__qurating_batch.json"]


def test_a_familys_own_files_per_job_gives_it_its_own_batch_rule():
    shards = [f"group_{i:05d}" for i in range(11)]
    # 64-file shards: `auto` aims at 64 files a job (one shard), `light` at 640 (ten shards).
    config = {"corpus": {"mode": "slimpajama", "slimpajama": {"group_size": 64}},
              "annotate": {"shards_per_job": "auto", "families": {
                  "light": {"kind": "signals", "files_per_job": 640},
                  "heavy": {"kind": "signals"}}}}
    kinds = resolve.family_job_kinds(config, ["light", "heavy"], ("annotate", "annotate_batch"),
                                     shards, "[a-z0-9_]+")
    assert [kind.rule for kind in kinds["light"]] == ["annotate", "annotate_batch10"]
    assert resolve.stats_files("r", [("light", "full"), ("heavy", "full")], kinds) == [
        "r/logs/annotate/light/group_00010.json", "r/logs/annotate/light/group_0000_batch.json",
        *(f"r/logs/annotate/heavy/{shard}.json" for shard in shards)]
    (alone, alone_families), (batch, batch_families) = resolve.rule_kinds(kinds, "[a-z0-9_]+")
    # Every shard runs alone for `heavy`, so the one-shard rule takes any numbered shard (not a
    # batch's `group_0000_batch`), any family.
    assert (alone.rule, alone_families) == ("annotate", ["light", "heavy"])
    assert re.fullmatch(alone.pattern, "group_00007")
    assert not re.fullmatch(alone.pattern, "group_0000_batch")
    assert (batch.rule, batch.pattern, batch_families) == ("annotate_batch10", "group_0000",
                                                            ["light"])
    assert resolve.resolve_family(config, "light") == {"kind": "signals"}  # not a parameter


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
