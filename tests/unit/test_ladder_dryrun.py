"""Dry runs of the scale ladder's rungs (config/ladder/) through profiles/slurm: each is
config/paper.yaml with the rung's overrides merged in by Snakemake (two --configfile files), and
plans exactly its kept rows, three seeds each, with its proxies, and nothing of the dropped rows.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from selectlab.config import load_workflow_config
from selectlab.replicates import replicate_names
from tests.unit.test_paper_dryrun import (
    REPO,
    fake_slimpajama,
    paper_config,
    parse_jobs,
    planning_env,
)

RUNGS = sorted((REPO / "config" / "ladder").glob("*.yaml"))


def dry_run(tmp: Path, rung: Path):
    fake_slimpajama(tmp / "slimpajama")
    (tmp / "paper.yaml").write_text(yaml.safe_dump(paper_config(tmp), sort_keys=False))
    env = planning_env(tmp)
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "all", "--dry-run", "--snakefile",
         str(REPO / "Snakefile"), "--directory", str(tmp), "--profile",
         str(REPO / "profiles" / "slurm"), "--configfile", str(tmp / "paper.yaml"), str(rung)],
        cwd=tmp, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    config = load_workflow_config([tmp / "paper.yaml", rung], REPO / "config" / "schema")
    return config, parse_jobs(result.stdout + result.stderr)


@pytest.mark.parametrize("rung", RUNGS, ids=[r.stem for r in RUNGS])
def test_a_rung_plans_its_kept_rows_three_times_each(tmp_path, rung):
    config, jobs = dry_run(tmp_path, rung)
    kept = yaml.safe_load(rung.read_text())["keep_variants"]
    assert set(config["variants"]) == set(kept)  # none of them builds on a dropped row
    runs = {run for name in kept for run in replicate_names(config, name)}
    assert len(runs) == 3 * len(kept)
    trained = Counter(job.wildcards["variant"] for job in jobs if job.rule == "pretrain")
    proxies = {name for name in trained if "__proxy" in name}
    assert {name for name in trained if name not in proxies} == runs
    assert all(count == 1 for count in trained.values())
    searches = config["metarater"]["searches"]
    assert len(proxies) == sum(spec["proxies"] for spec in searches.values())
    evaluated = {job.wildcards["variant"] for job in jobs if job.rule == "eval_icl"}
    assert evaluated == runs
    # Every kept row is a table row; no table names a dropped one.
    for protocol in config["evaluation"]["protocols"].values():
        for spec in protocol.get("tables", {}).values():
            assert set(spec.get("variants", [])) <= set(kept)
    # The rung's model: its pretraining jobs ask for its preset's GPUs.
    preset = config["models"]["presets"][config["pretrain"]["preset"]]
    job = next(job for job in jobs if job.rule == "pretrain"
               and job.wildcards["variant"] == "uniform")
    assert job.resources["gpu"] == preset["resources"]["gpu"]
