"""What test_slurm.py needs around the single-node test cluster: start and stop it, watch its
queue, and read what Snakemake printed.

The cluster (tests/integration/slurm/) is Debian's slurm-wlm with munge, one node with 8 CPUs
and 2 fake GPUs, no accounting database; squeue keeps finished jobs for 10 minutes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

SLURM_DIR = Path(__file__).resolve().parent / "slurm"
DAEMONS = ["munged", "slurmctld", "slurmd"]
CLIENTS = ["sbatch", "squeue", "scancel", "scontrol", "sinfo", "srun"]
ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED"}
SQUEUE_FIELDS = ["JobID", "State", "Reason", "Comment", "tres-per-job", "StartTime", "EndTime"]


def missing_binaries() -> list[str]:
    daemons = [d for d in DAEMONS if not (Path("/usr/sbin") / d).exists() and not shutil.which(d)]
    return daemons + [c for c in CLIENTS if not shutil.which(c)]


def start_cluster() -> None:
    # A cluster left over from an interrupted session would hold the ports.
    stop_cluster()
    subprocess.run(["bash", str(SLURM_DIR / "start_slurm.sh")], check=True,
                   capture_output=True, text=True, timeout=60)


def stop_cluster() -> None:
    subprocess.run(["bash", str(SLURM_DIR / "stop_slurm.sh")], capture_output=True, timeout=120)


@dataclass(frozen=True)
class Job:
    id: int
    state: str
    reason: str
    comment: str
    gpus: int
    start: str
    end: str

    @property
    def rule(self) -> str:
        """The rule from the plugin's comment `rule_<name>[_wildcards_<...>]`."""
        return self.comment.removeprefix("rule_").split("_wildcards_")[0]


@dataclass(frozen=True)
class Snapshot:
    time: float
    jobs: dict[int, Job]
    node: dict[str, int]

    def running_gpu_jobs(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.gpus and j.state == "RUNNING"]

    def pending_gpu_jobs(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.gpus and j.state == "PENDING"]


def queue() -> dict[int, Job]:
    fmt = ",".join(f"{name}:|" for name in SQUEUE_FIELDS)
    out = subprocess.run(["squeue", "-h", "-t", "all", "-O", fmt], capture_output=True,
                         text=True, timeout=20).stdout
    jobs = {}
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) < len(SQUEUE_FIELDS) or not parts[0].strip().isdigit():
            continue
        job_id, state, reason, comment, tres, start, end = (p.strip() for p in parts[:7])
        gpus = re.search(r"gpu(?::[\w.]+)?:(\d+)", tres)
        jobs[int(job_id)] = Job(int(job_id), state, reason, comment,
                                int(gpus.group(1)) if gpus else 0, start, end)
    return jobs


def node_allocation() -> dict[str, int]:
    out = subprocess.run(["scontrol", "show", "node", "localhost"], capture_output=True,
                         text=True, timeout=20).stdout
    values = {}
    for key in ("CPUAlloc", "CPUTot", "AllocMem", "RealMemory"):
        match = re.search(rf"\b{key}=(\d+)", out)
        values[key] = int(match.group(1)) if match else -1
    return values


def cancel(job_ids) -> None:
    if job_ids:
        subprocess.run(["scancel", *map(str, job_ids)], capture_output=True, timeout=20)


def wait_until_idle(timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while any(j.state in ACTIVE for j in queue().values()):
        if time.monotonic() > deadline:
            raise TimeoutError("jobs still queued on the test cluster")
        time.sleep(0.5)


@dataclass
class Poller:
    """Records the queue and the node's allocation twice a second in a background thread and
    hands every snapshot to `react` (which may kill or cancel things)."""

    react: object = None
    interval: float = 0.5
    snapshots: list[Snapshot] = field(default_factory=list)

    def __post_init__(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            snap = Snapshot(time.time(), queue(), node_allocation())
            self.snapshots.append(snap)
            if self.react is not None:
                self.react(snap)
            self._stop.wait(self.interval)

    def __enter__(self) -> Poller:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


@dataclass(frozen=True)
class PrintedJob:
    rule: str
    jobid: int
    outputs: tuple[str, ...]


def printed_jobs(log: str) -> dict[int, PrintedJob]:
    """The jobs Snakemake announced in its output, by jobid (rule, declared outputs)."""
    jobs, rule, outputs = {}, None, ()
    for line in log.splitlines():
        header = re.match(r"^(?:local)?rule (\w+):$", line)
        if header:
            rule, outputs = header.group(1), ()
        elif rule and line.startswith("    output: "):
            outputs = tuple(p.strip() for p in line.removeprefix("    output: ").split(","))
        elif rule and line.startswith("    jobid: "):
            jobid = int(line.split(":")[1])
            jobs[jobid] = PrintedJob(rule, jobid, outputs)
            rule = None
    return jobs


def finished_jobids(log: str) -> set[int]:
    return {int(m) for m in re.findall(r"^Finished jobid: (\d+)", log, flags=re.M)}


def file_mtimes(workdir: Path, outputs) -> dict[str, int]:
    """mtime_ns of every file an output names (directory outputs: every file inside)."""
    times = {}
    for output in outputs:
        path = workdir / output
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            times[str(file.relative_to(workdir))] = file.stat().st_mtime_ns
    return times
