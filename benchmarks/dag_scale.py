"""How planning the full-scale workflow scales with the size of the SlimPajama listing.

For each listing size, a fake SlimPajama training split (empty `chunk*/example_train_*.jsonl.zst`
files: planning only lists them) and config/paper.yaml pointed at it, then `snakemake all
--dry-run` in a fresh process, timed from start to exit. config/paper.yaml groups the listed
files into shards of `corpus.slimpajama.group_size` files (64). Every run plans every paper row
and the 1,280 Meta-rater proxies, so what grows with the listing is tokenisation, the pools' cuts
and annotation (each family in each pool it annotates) plus the rules that read every shard.
Prints wall seconds, shards, jobs planned, milliseconds per job, the planner's peak resident
memory and each time's ratio to the first (smallest) run. The last default size is
SlimPajama-627B's whole training split (59,166 files).

Also timed once: importing the slurm executor plugin, which Snakemake does on every run. It
asks `scontrol` for the cluster's settings; where slurm's tools are installed but no controller
answers (this machine) that waits out a 9-second timeout, included in every row.

Target (the full-scale issue): 4,000 shards plan in under a minute on 2 cores. `--group-size 1`
makes every listed file its own shard: the stress case. By default each run keeps
config/paper.yaml's own job sizes (`paper`: tokenisation and pool cuts ten shards a job; the
families whose shard is GPU-hours one 64-file shard a job, `auto`, the others ten:
config/paper/annotation.yaml). `--shards-per-job` sets both `corpus.shards_per_job` (tokenisation
and pool cuts) and `annotate.shards_per_job` (annotation of every pool) to 1, 10, 100 or auto
(jobs of about 64 raw files, so 100 single-file shards or one 64-file shard a job), one run each;
a family's own shards_per_job still wins. A job takes that many shards, each still with its own
files, and later jobs list one meta sidecar per such job (docs/cluster.md). Each row also prints
its time less the plugin's import (the wait above), what a submit host whose controller answers
would see.

Usage: python benchmarks/dag_scale.py [--files 100 1000 4000 59166] [--group-size 64]
                                      [--shards-per-job paper 1 10 100 auto]
  the target: python benchmarks/dag_scale.py --files 4000 --group-size 1 --shards-per-job 1 10 100
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from selectlab.config import read_with_includes
from selectlab.shard_jobs import resolve_per_job

REPO = Path(__file__).resolve().parents[1]
TARGET_SHARDS, TARGET_SECONDS = 4000, 60.0
FILES_PER_CHUNK = 5917  # SlimPajama-627B: 59,166 training files in chunk1..chunk10
PAPER = read_with_includes(REPO / "config" / "paper.yaml")


def fake_listing(root: Path, files: int, group_size: int,
                 shards_per_job: int | str | None) -> dict:
    """`files` empty SlimPajama training files, and the paper config reading them."""
    for split, count in (("train", files), ("validation", 2), ("test", 2)):
        for index in range(count):
            chunk = root / "slimpajama" / split / f"chunk{index // FILES_PER_CHUNK + 1}"
            chunk.mkdir(parents=True, exist_ok=True)
            (chunk / f"example_{split}_{index}.jsonl.zst").touch()
    config = copy.deepcopy(PAPER)
    slimpajama = config["corpus"]["slimpajama"]
    for split in ("train", "validation", "test"):
        slimpajama[f"{split}_dir"] = str(root / "slimpajama" / split)
    slimpajama["group_size"] = group_size
    if shards_per_job is not None:  # None: the paper config's own (a family may set its own)
        config["corpus"]["shards_per_job"] = shards_per_job
        config["annotate"]["shards_per_job"] = shards_per_job
    # One empty file per DSIR target set (planning only globs them).
    targets = config["annotate"]["families"]["dsir"]["targets"]
    for name in targets:
        target = root / "dsir_targets" / name / "part-0.jsonl"
        target.parent.mkdir(parents=True)
        target.touch()
        targets[name] = str(target.parent / "*.jsonl")
    # MATES's reference set (LAMBADA at full scale) is an input of its probe jobs.
    (root / "lambada.jsonl").touch()
    config["mates"]["reference"] = str(root / "lambada.jsonl")
    return config


def plan(root: Path) -> tuple[float, int, float]:
    """(wall seconds, jobs planned, peak RSS in GB) of one dry run of the `all` target."""
    command = [sys.executable, "-m", "snakemake", "all", "--dry-run", "--quiet", "rules",
               "--snakefile", str(REPO / "Snakefile"), "--directory", str(root),
               "--configfile", str(root / "config.yaml")]
    started = time.perf_counter()
    with open(root / "plan.out", "w") as out:
        process = subprocess.Popen(command, cwd=root, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    text = (root / "plan.out").read_text()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"dry run failed in {root}:\n{text[-3000:]}")
    total = re.search(r"^total\s+(\d+)$", text, re.MULTILINE)
    return seconds, int(total.group(1)), usage.ru_maxrss / 1024**2


def slurm_plugin_import_seconds() -> float:
    """Seconds a fresh interpreter takes to import the slurm executor plugin."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import snakemake_executor_plugin_slurm"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def per_job_arg(text: str) -> int | str | None:
    return None if text == "paper" else text if text == "auto" else int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, nargs="+", default=[100, 1000, 4000, 59166],
                        help="training files in the fake listing, one run each")
    parser.add_argument("--group-size", type=int,
                        default=PAPER["corpus"]["slimpajama"]["group_size"],
                        help="listed files per shard (default: config/paper.yaml's)")
    parser.add_argument("--shards-per-job", type=per_job_arg, nargs="+", default=[None],
                        help="corpus and annotate .shards_per_job (1, 10, 100, auto), one run "
                             "each; `paper` (the default): config/paper.yaml's own settings")
    args = parser.parse_args()
    plugin_seconds = slurm_plugin_import_seconds()
    print(f"slurm executor plugin import: {plugin_seconds:.1f} s (part of every row)", flush=True)
    baseline = None
    for files in args.files:
        for per_job in args.shards_per_job:
            with tempfile.TemporaryDirectory(prefix=f"dag{files}-") as tmp:
                root = Path(tmp)
                config = fake_listing(root, files, args.group_size, per_job)
                (root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
                (root / "report").symlink_to(REPO / "report")  # captions, as in the repository
                seconds, jobs, rss_gb = plan(root)
            baseline = baseline or seconds
            shards = -(-files // args.group_size)
            shown = ("paper" if per_job is None else per_job if per_job != "auto"
                     else f"auto={resolve_per_job(per_job, args.group_size)}")
            line = (f"{files:>6} files  {shards:>5} shards  {shown:>4} shards/job  "
                    f"{seconds:6.1f} s  {jobs:>6} jobs  {1000 * seconds / jobs:5.2f} ms/job  "
                    f"peak RSS {rss_gb:4.2f} GB  ratio {seconds / baseline:5.2f}  "
                    f"less the plugin's import {seconds - plugin_seconds:6.1f} s")
            if shards == TARGET_SHARDS:
                met = "met" if seconds < TARGET_SECONDS else "NOT met"
                line += f"  (target < {TARGET_SECONDS:.0f} s: {met})"
            print(line, flush=True)


if __name__ == "__main__":
    main()
