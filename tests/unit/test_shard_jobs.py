"""corpus.shards_per_job and annotate.shards_per_job: which shards share a job, and a plan where
tokenisation, pool cuts and annotation run 10 shards a job still gives every shard its own
tokens, meta sidecar, pool cuts and sidecars, each written by exactly one job."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml

from selectlab import shard_jobs
from selectlab.annotate import resolve as annotate_cfg
from tests.conftest import encode, record, write_jsonl_zst

REPO = Path(__file__).resolve().parents[2]
TEST = yaml.safe_load((REPO / ".test" / "config.yaml").read_text())
SETTING = "corpus.shards_per_job"


def test_full_batches_share_a_job_and_the_rest_run_alone():
    shards = [f"group_{i:05d}" for i in range(23)]
    batches, alone = shard_jobs.shard_batches(shards, 10, SETTING)
    assert batches == {"group_0000": shards[:10], "group_0001": shards[10:20]}
    assert alone == shards[20:]
    assert shard_jobs.shard_batches(shards, 1, SETTING) == ({}, shards)
    assert shard_jobs.batch_suffixes(10, SETTING) == [str(i) for i in range(10)]
    assert shard_jobs.batch_suffixes(100, SETTING)[:2] == ["00", "01"]
    assert shard_jobs.batch_suffixes(1, SETTING) == [""]


def test_job_kinds_name_each_jobs_shards():
    shards = [f"group_{i:05d}" for i in range(12)]
    alone, batch = shard_jobs.job_kinds(("tok", "tok_batch"), shards, 10, SETTING, "any")
    assert (alone.rule, alone.pattern, alone.batched) == ("tok", "group_00010|group_00011", False)
    assert alone.shards("group_00011") == ["group_00011"]
    assert (batch.rule, batch.pattern, batch.batched) == ("tok_batch", "group_0000", True)
    assert batch.shards("group_0000") == shards[:10]
    [only] = shard_jobs.job_kinds(("tok", "tok_batch"), shards, 1, SETTING, "any")
    assert (only.rule, only.pattern, len(only.members)) == ("tok", "any", 12)


def test_a_batch_with_a_hole_is_not_a_batch():
    shards = [f"shard_{i:05d}" for i in range(10) if i != 4]
    assert shard_jobs.shard_batches(shards, 10, SETTING) == ({}, shards)


@pytest.mark.parametrize("per_job", [0, 2, 16, 1000 - 1])
def test_only_powers_of_ten(per_job):
    with pytest.raises(ValueError, match=r"corpus\.shards_per_job must be 1, 10 or 100"):
        shard_jobs.shard_batches(["shard_00000"], per_job, SETTING)


def test_unnumbered_shards_cannot_be_batched():
    with pytest.raises(ValueError, match="does not end in 1 digits"):
        shard_jobs.shard_batches(["shard_a"], 10, SETTING)


def planned_jobs(tmp: Path, config: dict) -> list[dict]:
    """Rule, outputs and resources of each job of a dry run of `all` for `config`."""
    (tmp / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (tmp / "report").symlink_to(REPO / "report")
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "all", "--dry-run", "--snakefile",
         str(REPO / "Snakefile"), "--directory", str(tmp), "--configfile",
         str(tmp / "config.yaml")], cwd=tmp, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    jobs = []
    for line in result.stdout.splitlines():
        if re.match(r"^rule \w+:$", line):
            jobs.append({"rule": line.split()[1].rstrip(":"), "input": [], "output": [],
                         "resources": ""})
        elif jobs and line.startswith("    input: "):
            jobs[-1]["input"] = line.split(": ", 1)[1].split(", ")
        elif jobs and line.startswith("    output: "):
            jobs[-1]["output"] = line.split(": ", 1)[1].split(", ")
        elif jobs and line.startswith("    resources: "):
            jobs[-1]["resources"] = line.split(": ", 1)[1]
    return jobs


def runtime(job: dict) -> int:
    return int(re.search(r"runtime=(\d+)", job["resources"]).group(1))


def test_twelve_shards_ten_a_job_each_shard_keeps_its_own_outputs(tmp_path):
    config = copy.deepcopy(TEST)
    config["corpus"]["num_shards"] = 12
    config["corpus"]["shards_per_job"] = 10
    config["annotate"]["shards_per_job"] = 10
    jobs = planned_jobs(tmp_path, config)
    written = Counter(path for job in jobs for path in job["output"])
    assert max(written.values()) == 1  # no file is the output of two jobs
    shards = [f"shard_{i:05d}" for i in range(12)]
    pool = next(iter(config["corpus"]["pools"]))
    run = f"results/{config['run']}"
    for shard in shards:
        assert f"{run}/corpus/tokens/{shard}.npy" in written
        assert f"{run}/corpus/tokens/{shard}__{pool}.npy" in written
        for family in config["annotate"]["families"]:
            for where in annotate_cfg.family_pools(config, family):
                name = shard if where == "full" else f"{shard}__{where}"
                assert f"{run}/attributes/{family}/{name}.parquet" in written, (family, name)
    rules = Counter(job["rule"] for job in jobs)
    # One batch of shard_00000..09 and two shards alone, in every per-shard rule.
    assert rules["tokenize_batch"] == 1 and rules["tokenize_shard"] == 2
    assert rules["cut_pool_batch"] == 1 and rules["cut_pool"] == 2
    assert rules["annotate_pool_batch10"] * 2 == rules["annotate_pool"] > 0
    assert rules["annotate_batch10"] * 2 == rules["annotate"] > 0
    [batch] = [job for job in jobs if job["rule"] == "tokenize_batch"]
    [alone, _] = [job for job in jobs if job["rule"] == "tokenize_shard"]
    assert batch["output"][:10] == [f"{run}/corpus/tokens/{s}.npy" for s in shards[:10]]
    assert runtime(batch) == 10 * runtime(alone)
    # Later jobs list one meta sidecar per tokenisation or cut job they read: it is written with
    # the rest of that job's files, so it stands for them.
    for rule, meta in (("annotate_batch10", "shard_00000"), ("cut_pool_batch", "shard_00000"),
                       ("annotate_pool_batch10", f"shard_00000__{pool}")):
        for job in (job for job in jobs if job["rule"] == rule):
            metas = [path for path in job["input"] if "/attributes/meta/" in path]
            assert metas == [f"{run}/attributes/meta/{meta}.parquet"], (rule, metas)
    [report] = [job for job in jobs if job["rule"] == "read_report"]
    assert sorted(report["input"]) == sorted(
        f"{run}/attributes/meta/{shard}.parquet" for shard in ["shard_00000", *shards[10:]])


def test_a_familys_own_files_per_job_batches_only_its_jobs(tmp_path):
    config = copy.deepcopy(TEST)
    config["corpus"]["num_shards"] = 12
    # Single-file shards: jobs of about 10 raw files for two families, one shard for the rest.
    config["annotate"].update(shards_per_job="auto", files_per_job=1)
    config["annotate"]["families"]["qurater"]["files_per_job"] = 10  # it rates a pool only
    config["annotate"]["families"]["prrc"]["files_per_job"] = 10
    jobs = planned_jobs(tmp_path, config)
    assert max(Counter(path for job in jobs for path in job["output"]).values()) == 1
    run = f"results/{config['run']}"
    [prrc_batch] = [job for job in jobs if job["rule"] == "annotate_batch10"]
    assert prrc_batch["output"][:10] == [f"{run}/attributes/prrc/shard_{i:05d}.parquet"
                                         for i in range(10)]
    [pool_batch] = [job for job in jobs if job["rule"] == "annotate_pool_batch10"]
    assert "/attributes/qurater/shard_00000__qurating.parquet" in pool_batch["output"][0]
    alone = Counter(job["output"][0].split("/")[-2] for job in jobs if job["rule"] == "annotate")
    assert alone.pop("prrc") == 2 and set(alone.values()) == {12}  # the rest, one a job
    assert "qurater" not in alone and "signals" in alone
    assert runtime(prrc_batch) == 10 * runtime(next(
        job for job in jobs if job["rule"] == "annotate" and "/prrc/" in job["output"][0]))


def run_cli(*args: str) -> None:
    from selectlab.cli import main

    assert main(list(args)) == 0


def shard_outputs(out: Path, shards: list[str], pool: str = "") -> dict[str, list[str]]:
    tail = f"__{pool}" if pool else ""
    return {"tokens": [str(out / f"{s}{tail}.npy") for s in shards],
            "meta": [str(out / f"{s}{tail}.parquet") for s in shards],
            "report": [str(out / f"{s}.json") for s in shards],
            "quarantine": [str(out / f"{s}.jsonl") for s in shards]}


def encode_and_cut(out: Path, shard_files: dict[str, list[str]], tokenizer: Path) -> None:
    """`selectlab tokens encode` then `corpus cut-pool` of these shards, as one job each."""
    shards = list(shard_files)
    paths, cut = shard_outputs(out, shards), shard_outputs(out, shards, "seq")
    run_cli("tokens", "encode", "--shard-files", json.dumps(shard_files),
            "--tokenizer", str(tokenizer), "--max-doc-chars", "100000",
            "--id-root", str(out), "--out-tokens", *paths["tokens"], "--out-meta",
            *paths["meta"], "--report", *paths["report"], "--quarantine", *paths["quarantine"])
    run_cli("corpus", "cut-pool", "--params",
            json.dumps({"name": "seq", "unit": "sequence", "sequence_tokens": 32,
                        "share": 0.5}), "--tokens", *paths["tokens"],
            "--meta", *paths["meta"], "--tokenizer", str(tokenizer),
            "--out-tokens", *cut["tokens"], "--out-meta", *cut["meta"])


def test_a_job_of_two_shards_writes_what_two_jobs_of_one_write(tmp_path, tiny_tokenizer_dir,
                                                               sample_texts):
    shard_files = {}
    for index in range(2):
        records = [record(f"s{index}-{i}", text) for i, text in
                   enumerate(sample_texts[20 * index:20 * index + 20])]
        path = write_jsonl_zst(tmp_path / "raw" / f"part{index}.jsonl.zst", encode(records))
        shard_files[f"shard_0000{index}"] = [str(path)]
    encode_and_cut(tmp_path / "together", shard_files, tiny_tokenizer_dir)
    for shard, files in shard_files.items():
        encode_and_cut(tmp_path / "apart", {shard: files}, tiny_tokenizer_dir)
    for shard in shard_files:
        for name in (f"{shard}.npy", f"{shard}__seq.npy", f"{shard}.jsonl"):
            together = (tmp_path / "together" / name).read_bytes()
            assert together == (tmp_path / "apart" / name).read_bytes(), name
        for name in (f"{shard}.parquet", f"{shard}__seq.parquet"):
            together = pd.read_parquet(tmp_path / "together" / name)
            pd.testing.assert_frame_equal(together, pd.read_parquet(tmp_path / "apart" / name))
            assert len(together) > 0
        assert (json.loads((tmp_path / "together" / f"{shard}.json").read_text())
                == json.loads((tmp_path / "apart" / f"{shard}.json").read_text()))


def test_a_batch_job_with_too_few_output_paths_stops(tmp_path, tiny_tokenizer_dir):
    with pytest.raises(SystemExit, match="2 shards but 1 output paths"):
        run_cli("tokens", "encode", "--shard-files", json.dumps({"a": [], "b": []}),
                "--tokenizer", str(tiny_tokenizer_dir), "--max-doc-chars", "10",
                "--out-tokens", "x", "--out-meta", "m", "--report", "r", "--quarantine", "q")


def test_auto_batches_jobs_to_read_about_64_raw_files():
    from selectlab.corpus.resolve import shards_per_job
    from selectlab.shard_jobs import resolve_per_job

    assert [resolve_per_job("auto", files) for files in (1, 4, 8, 32, 64, 200)] == [
        100, 10, 10, 1, 1, 1]
    assert resolve_per_job(10, 64) == 10  # a number is kept as set
    paper = {"corpus": {"mode": "slimpajama", "slimpajama": {"group_size": 1}},
             "annotate": {"shards_per_job": "auto"}}
    assert shards_per_job(paper, "annotate") == 100
    paper["corpus"]["slimpajama"]["group_size"] = 64
    assert shards_per_job(paper, "annotate") == 1
    # files_per_job moves what auto aims at: ten 64-file shards, or a hundred single files.
    paper["annotate"]["files_per_job"] = 640
    assert shards_per_job(paper, "annotate") == 10
    paper["corpus"]["slimpajama"]["group_size"] = 1
    assert shards_per_job(paper, "annotate") == 100
