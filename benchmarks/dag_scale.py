"""How planning the full-scale workflow scales with the number of shards.

For each shard count, a fake SlimPajama listing (empty `chunk*/example_train_*.jsonl.zst` files:
planning only lists them) and config/paper.yaml pointed at it, then `snakemake all --dry-run`
in a fresh process, timed from start to exit. Every run plans all 76 paper rows and the 1,280
Meta-rater proxies, so what grows with the shards is tokenisation and annotation (9 families)
plus the rules that read every shard. Prints wall seconds, jobs planned, milliseconds per job,
the planner's peak resident memory and each time's ratio to the first (smallest) run.

Target (the full-scale issue): 4,000 shards plan in under a minute on 2 cores.

Usage: python benchmarks/dag_scale.py [--shards 100 1000 4000] [--group-size 1]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
TARGET_SHARDS, TARGET_SECONDS = 4000, 60.0
FILES_PER_CHUNK = 500


def fake_listing(root: Path, shards: int, group_size: int) -> dict:
    """Empty SlimPajama files for `shards` shards, and the paper config reading them."""
    for split, count in (("train", shards * group_size), ("validation", 2), ("test", 2)):
        for index in range(count):
            chunk = root / "slimpajama" / split / f"chunk{index // FILES_PER_CHUNK + 1}"
            chunk.mkdir(parents=True, exist_ok=True)
            (chunk / f"example_{split}_{index}.jsonl.zst").touch()
    math = root / "automathtext" / "part-0.jsonl.zst"
    math.parent.mkdir()
    math.touch()
    config = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    slimpajama = config["corpus"]["slimpajama"]
    for split in ("train", "validation", "test"):
        slimpajama[f"{split}_dir"] = str(root / "slimpajama" / split)
    slimpajama["group_size"] = group_size
    config["annotate"]["families"]["dsir"]["targets"]["math"] = str(math.parent / "*.jsonl.zst")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, nargs="+", default=[100, 1000, 4000])
    parser.add_argument("--group-size", type=int, default=1, help="raw files per shard")
    args = parser.parse_args()
    baseline = None
    for shards in args.shards:
        with tempfile.TemporaryDirectory(prefix=f"dag{shards}-") as tmp:
            root = Path(tmp)
            config = fake_listing(root, shards, args.group_size)
            (root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
            (root / "report").symlink_to(REPO / "report")  # captions, as in the repository
            seconds, jobs, rss_gb = plan(root)
        baseline = baseline or seconds
        line = (f"{shards:>6} shards  {seconds:7.1f} s  {jobs:>7} jobs  "
                f"{1000 * seconds / jobs:5.2f} ms/job  peak RSS {rss_gb:4.2f} GB  "
                f"ratio {seconds / baseline:5.2f}")
        if shards == TARGET_SHARDS:
            met = "met" if seconds < TARGET_SECONDS else "NOT met"
            line += f"  (target < {TARGET_SECONDS:.0f} s: {met})"
        print(line, flush=True)


if __name__ == "__main__":
    main()
