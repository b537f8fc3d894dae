"""The tests-only workflow through `snakemake --profile profiles/slurm` on a real single-node
SLURM cluster with two fake GPUs, against a local run of the same configuration.

One module-scoped scenario feeds every test:
1. a local reference run (`--profile profiles/local`), in a directory of its own;
2. the SLURM run (profiles/slurm, then tests/integration/slurm/profile for this cluster) until
   the first pretraining job is queued; then Snakemake is killed with SIGKILL and the jobs it
   left on the cluster are cancelled, as when the submitting machine goes down;
3. `--unlock` and the same command again with `--rerun-incomplete`; the pretraining job of
   `uniform` is killed with `scancel` after a few seconds, and the pretraining job of
   `uniform_plus50` (a bigger model, trained for about a minute) reaches its time limit: once
   it logs its first step, its limit is cut to a minute or two from now, so SLURM sends the
   profile's warning signal (`--signal=URG@600`) at its next time-limit check (every 30 s),
   the job saves a pre-emption checkpoint and exits, and Snakemake's retry resumes it.
Pretraining and evaluation ask for one GPU each (the model preset's `resources`,
`evaluation.gpu`), so four evaluations and two pretrainings compete for two GPUs. apptainer is
replaced by a recording stand-in (slurm/bin/apptainer) that runs each command on the host.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from slurm_harness import (
    ACTIVE,
    SLURM_DIR,
    Poller,
    cancel,
    file_mtimes,
    finished_jobids,
    missing_binaries,
    printed_jobs,
    queue,
    start_cluster,
    stop_cluster,
    wait_until_idle,
)

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
VARIANTS = ["uniform", "uniform_plus50"]
SCANCELLED, TIMED_OUT = VARIANTS
GPU_RULES = {"pretrain", "eval_perplexity", "eval_icl"}
SCANCEL_AFTER_S = 3.0


def small_config(run: str, gpus: bool) -> dict:
    """The tests-only config cut to two variants and fewer steps; on GPUs when `gpus`."""
    config = yaml.safe_load((REPO / ".test" / "config.yaml").read_text())
    config["run"] = run
    config["variants"] = {name: config["variants"][name] for name in VARIANTS}
    # The papers' tables name variants this cut drops; tables/main is what the test compares.
    config["evaluation"].pop("protocols", None)
    config["selection"]["budget_tokens"] = 10000
    config["pretrain"]["checkpoint_every"] = 3
    config["evaluation"]["perplexity"]["max_tokens_per_source"] = 1000
    config["evaluation"]["icl"]["local_tasks"]["items_per_source"] = 4
    # The job that reaches its time limit: ~90 steps of a 6-layer model, about a minute here;
    # its only checkpoints are the pre-emption one and the last.
    config["models"]["presets"]["slow"] = {"hidden_size": 384, "num_layers": 6, "num_heads": 6,
                                           "tie_embeddings": True}
    config["variants"][TIMED_OUT]["budget_tokens"] = 60000
    config["variants"][TIMED_OUT]["pretrain"] = {"preset": "slow", "checkpoint_every": 1000}
    # One core a training job in both runs: Snakemake sets OMP_NUM_THREADS to a job's threads,
    # and training with another thread count reorders float sums, which 90 steps amplify to
    # ~1e-3 in the loss.
    for preset in ("tiny", "slow"):
        config["models"]["presets"][preset]["resources"] = {"cpus": 1}
    if gpus:
        # 20 minutes: longer than the profile's 10-minute warning, which would otherwise arrive
        # as soon as a job starts.
        for preset in ("tiny", "slow"):
            config["models"]["presets"][preset]["resources"] = {
                "gpu": 1, "cpus": 1, "mem_mb": 2000, "runtime": 20}
        config["evaluation"]["gpu"] = 1
    return config


def prepare(workdir: Path, config: dict) -> list[str]:
    """A working directory with the config; the snakemake command line for its tables."""
    workdir.mkdir(parents=True)
    (workdir / "report").symlink_to(REPO / "report")  # captions are read relative to it
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    # --notemp keeps the packed sequences (temporary in a normal run) for the comparison below.
    return [sys.executable, "-m", "snakemake", f"results/{config['run']}/tables/main.csv",
            "--snakefile", str(REPO / "Snakefile"), "--configfile", "config.yaml", "--notemp"]


def environment(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env["PATH"] = os.pathsep.join([str(SLURM_DIR / "bin"), str(Path(sys.executable).parent),
                                   env["PATH"]])
    return env | extra


@dataclass
class Scenario:
    local: Path
    slurm: Path
    log_a: str
    log_b: str
    sbatch_a: list[str]
    sbatch_b: list[str]
    shim: list[list[str]]
    snapshots: list
    finished_outputs: set[str]
    finished_before_kill: dict[str, int]
    cancelled: object
    timed_out: object
    final_jobs: dict


@pytest.fixture(scope="module")
def cluster():
    missing = missing_binaries()
    if missing:
        pytest.skip(f"SLURM is not installed (missing {', '.join(missing)}); "
                    "scripts/bootstrap.sh --test installs slurm-wlm and munge")
    if os.geteuid() != 0:
        pytest.skip("the test cluster's daemons run as root")
    start_cluster()
    yield
    stop_cluster()


def run_until_pretraining_is_queued(command, workdir, env, out_path) -> list:
    """Phase A: SIGKILL Snakemake once it has queued a pretraining job; cancel what it left."""
    with open(out_path, "w") as out:
        snakemake = subprocess.Popen(command, cwd=workdir, env=env, stdout=out,
                                     stderr=subprocess.STDOUT)

        def kill_at_pretrain(snap):
            if snakemake.poll() is None and any(j.rule == "pretrain" for j in snap.jobs.values()):
                snakemake.kill()

        with Poller(kill_at_pretrain) as poller:
            snakemake.wait(timeout=600)
    assert snakemake.returncode == -9, "Snakemake finished before any pretraining job was queued"
    cancel([j.id for j in queue().values() if j.state in ACTIVE])
    wait_until_idle()
    return poller.snapshots


def shorten_time_limit(job_id: int, running_s: float) -> None:
    """Cut a running job's limit to a minute or two from now (whole minutes from its start)."""
    minutes = math.ceil((running_s + 5) / 60) + 1
    subprocess.run(["scontrol", "update", f"JobId={job_id}", f"TimeLimit={minutes}"],
                   check=True, capture_output=True, timeout=20)


def rerun_with_interruptions(command, workdir, env, out_path) -> tuple[list, object, object]:
    """Phase B: rerun; `scancel` one pretraining job once it has run a few seconds, and bring
    the other's time limit near once it has started training."""
    seen_running: dict[int, float] = {}
    cancelled, timed_out = [], []
    train_log = workdir / "results" / "slurm" / "logs" / "pretrain" / f"{TIMED_OUT}.log"

    def interrupt_pretraining(snap):
        for job in snap.jobs.values():
            if job.rule != "pretrain" or job.state != "RUNNING":
                continue
            seen_running.setdefault(job.id, snap.time)
            running_s = snap.time - seen_running[job.id]
            variant = job.comment.split("_wildcards_")[1]
            if variant == SCANCELLED and not cancelled and running_s >= SCANCEL_AFTER_S:
                cancel([job.id])
                cancelled.append(job)
            # A log older than this job is an earlier attempt's (phase A).
            elif (variant == TIMED_OUT and not timed_out and train_log.is_file()
                  and train_log.stat().st_mtime > seen_running[job.id] - 1
                  and re.search(r"^step 1/", train_log.read_text(), re.M)):
                shorten_time_limit(job.id, running_s)
                timed_out.append(job)

    with open(out_path, "w") as out, Poller(interrupt_pretraining) as poller:
        rerun = subprocess.run(command, cwd=workdir, env=env, stdout=out,
                               stderr=subprocess.STDOUT, timeout=2400)
    assert rerun.returncode == 0, Path(out_path).read_text()[-5000:]
    return (poller.snapshots, cancelled[0] if cancelled else None,
            timed_out[0] if timed_out else None)


@pytest.fixture(scope="module")
def scenario(cluster, tmp_path_factory) -> Scenario:
    root = tmp_path_factory.mktemp("slurm")
    # The reference runs alongside: the SLURM run mostly waits for the scheduler.
    local_cmd = prepare(root / "local", small_config("local", gpus=False))
    with open(root / "local.out", "w") as local_out:
        local_run = subprocess.Popen(
            [*local_cmd, "--profile", str(REPO / "profiles" / "local")], cwd=root / "local",
            env=environment(), stdout=local_out, stderr=subprocess.STDOUT,
            start_new_session=True)
    workdir = root / "slurm"
    slurm_cmd = prepare(workdir, small_config("slurm", gpus=True)) + [
        "--profile", str(REPO / "profiles" / "slurm"), "--profile", str(SLURM_DIR / "profile")]
    logs = {name: workdir / name for name in ("a.out", "b.out", "a.sbatch", "b.sbatch", "shim")}
    env = environment(SBATCH_CALL_LOG=str(logs["a.sbatch"]), APPTAINER_SHIM_LOG=str(logs["shim"]))
    try:
        snapshots = run_until_pretraining_is_queued(slurm_cmd, workdir, env, logs["a.out"])
        log_a = logs["a.out"].read_text()
        announced = printed_jobs(log_a)
        finished_outputs = {o for i in finished_jobids(log_a) if i in announced
                            for o in announced[i].outputs}
        finished_before_kill = file_mtimes(workdir, finished_outputs)

        unlock = subprocess.run([*slurm_cmd, "--unlock"], cwd=workdir, env=env,
                                capture_output=True, text=True)
        assert unlock.returncode == 0, unlock.stderr[-3000:]
        env["SBATCH_CALL_LOG"] = str(logs["b.sbatch"])
        more, cancelled, timed_out = rerun_with_interruptions(
            [*slurm_cmd, "--rerun-incomplete"], workdir, env, logs["b.out"])
        local_run.wait(timeout=900)
        assert local_run.returncode == 0, (root / "local.out").read_text()[-5000:]
    finally:
        if local_run.poll() is None:
            os.killpg(local_run.pid, signal.SIGKILL)
        cancel([j.id for j in queue().values() if j.state in ACTIVE])
    return Scenario(
        local=root / "local" / "results" / "local", slurm=workdir / "results" / "slurm",
        log_a=log_a, log_b=logs["b.out"].read_text(),
        sbatch_a=logs["a.sbatch"].read_text().splitlines(),
        sbatch_b=logs["b.sbatch"].read_text().splitlines(),
        shim=[line.split("\t") for line in logs["shim"].read_text().splitlines()],
        snapshots=snapshots + more, finished_outputs=finished_outputs,
        finished_before_kill=finished_before_kill, cancelled=cancelled, timed_out=timed_out,
        final_jobs=queue())


def submitted_rule(sbatch_line: str) -> str:
    comment = sbatch_line.split("--comment ")[1].split()[0]
    return comment.removeprefix("rule_").split("_wildcards_")[0]


def test_gpu_rules_ask_for_gpus_and_cpu_rules_do_not(scenario):
    calls = scenario.sbatch_a + scenario.sbatch_b
    rules = {submitted_rule(call) for call in calls}
    assert GPU_RULES <= rules and {"build_corpus", "tokenize_shard", "select", "pack"} <= rules
    for call in calls:
        # Partition from the cluster's partitions file; no account (no slurmdbd here).
        assert " -p debug " in call and " -A " not in call
        if submitted_rule(call) in GPU_RULES:
            assert "--gpus=1" in call and "--cpus-per-gpu=1" in call
            # Pretraining asks for its preset's memory; evaluation is sized from the model
            # (selectlab.evaluate.sizing: 4 GB and the weights, at least half an hour).
            memory = int(re.search(r"--mem (\d+)", call).group(1))
            if submitted_rule(call) == "pretrain":
                assert memory == 2000
            else:
                assert 4000 <= memory < 4100 and " -t 30 " in call
            # On GPU jobs the plugin would turn `tasks` into --ntasks-per-gpu: never set.
            assert "--ntasks-per-gpu" not in call
        else:
            assert "--gpus" not in call and "--gres" not in call


def test_gpu_jobs_saw_their_gpu_and_ran_in_the_profiles_container(scenario):
    for rule in GPU_RULES:
        for variant in VARIANTS:
            log = (scenario.slurm / "logs" / rule / f"{variant}.log").read_text()
            assert any(line.split("CUDA_VISIBLE_DEVICES=")[1].split()[0] in {"0", "1"}
                       for line in log.splitlines() if "devices: CUDA_VISIBLE_DEVICES=" in line)
    assert scenario.shim, "no job went through apptainer"
    for _, image, options, visible, command in scenario.shim:
        assert "--nv" in options.split()  # profiles/slurm: apptainer-args "--nv"
        gpu_job = any(f"selectlab {verb}" in command
                      for verb in ("pretrain", "evaluate perplexity", "evaluate icl"))
        assert image == ("containers/train.sif" if "selectlab pretrain" in command
                         or "selectlab evaluate" in command else "containers/cpu.sif")
        assert (visible in {"0", "1"}) == gpu_job, command


def test_a_third_gpu_job_waited_for_a_gpu(scenario):
    assert max(len(s.running_gpu_jobs()) for s in scenario.snapshots) == 2
    waiting = [s for s in scenario.snapshots
               if len(s.running_gpu_jobs()) == 2
               and any(j.reason == "Resources" for j in s.pending_gpu_jobs())]
    assert waiting, "no GPU job was ever seen waiting while two others ran"
    # ... and it waited for GPUs: CPUs and memory were free at that moment.
    node = waiting[0].node
    assert node["CPUAlloc"] < node["CPUTot"] and node["AllocMem"] < node["RealMemory"]
    jobs = scenario.final_jobs
    waiter = next(j for j in waiting[0].pending_gpu_jobs() if j.reason == "Resources")
    started = jobs[waiter.id].start
    # It started only once one of the two GPU jobs running at that moment had ended.
    assert any(jobs[j.id].end <= started for j in waiting[0].running_gpu_jobs())


def test_scancelled_job_was_resubmitted_and_the_workflow_completed(scenario):
    job = scenario.cancelled
    assert job is not None, "no pretraining job was seen running"
    assert scenario.final_jobs[job.id].state == "CANCELLED"
    same_job = [call for call in scenario.sbatch_b if f"--comment {job.comment} " in call]
    assert len(same_job) == 2  # the cancelled attempt and its retry
    variant = job.comment.split("_wildcards_")[1]
    assert (scenario.slurm / "models" / variant / "final" / "model.safetensors").is_file()
    assert (scenario.slurm / "tables" / "main.csv").is_file()


def test_a_job_at_its_time_limit_checkpointed_exited_and_its_retry_resumed(scenario):
    job = scenario.timed_out
    assert job is not None, f"the {TIMED_OUT} pretraining job was never seen training"
    # It left before SLURM ended it: FAILED (its own non-zero exit), not TIMEOUT.
    assert scenario.final_jobs[job.id].state == "FAILED"
    # The cut attempt and its retry; on a slow machine a retry may reach the warning of its own
    # 20-minute limit, save again and be retried once more.
    same_job = [call for call in scenario.sbatch_b if f"--comment {job.comment} " in call]
    assert len(same_job) >= 2 and all("--signal=URG@600" in call for call in same_job)
    # The failed attempt's log, shown by Snakemake, and the retry's log.
    preempted = re.findall(r"pre-empted at step (\d+) of (\d+)", scenario.log_b)
    assert preempted, "the pre-empted attempt's log was not shown"
    step, total = map(int, preempted[-1])
    log = (scenario.slurm / "logs" / "pretrain" / f"{TIMED_OUT}.log").read_text()
    assert f"resumed from step {step} of {total}" in log and 0 < step < total
    train_log = pd.read_csv(scenario.slurm / "models" / TIMED_OUT / "train_log.csv")
    assert train_log["step"].tolist() == list(range(1, total + 1))


def test_rerun_incomplete_did_not_redo_finished_jobs(scenario):
    finished = scenario.finished_before_kill
    assert any(path.endswith("tokenizer.json") for path in finished)
    workdir = scenario.slurm.parents[1]
    assert file_mtimes(workdir, finished) == finished
    rerun_outputs = {o for job in printed_jobs(scenario.log_b).values() for o in job.outputs}
    assert rerun_outputs and not rerun_outputs & scenario.finished_outputs
    assert "build_corpus" not in {submitted_rule(call) for call in scenario.sbatch_b}
    assert any(submitted_rule(call) == "pretrain" for call in scenario.sbatch_b)


def test_results_equal_the_local_run(scenario):
    local, slurm = scenario.local, scenario.slurm
    for variant in VARIANTS:
        selection = f"selections/{variant}/selection.parquet"
        pd.testing.assert_frame_equal(pd.read_parquet(slurm / selection),
                                      pd.read_parquet(local / selection))
        packed = f"selections/{variant}/train.npy"
        assert np.array_equal(np.load(slurm / packed), np.load(local / packed))
        for kind in ("perplexity", "icl"):
            ours = json.loads((slurm / "eval" / variant / f"{kind}.json").read_text())
            theirs = json.loads((local / "eval" / variant / f"{kind}.json").read_text())
            assert_close(ours, theirs)
    ours, theirs = pd.read_csv(slurm / "tables/main.csv"), pd.read_csv(local / "tables/main.csv")
    assert list(ours.columns) == list(theirs.columns) and len(ours) == len(VARIANTS)
    pd.testing.assert_frame_equal(ours, theirs, check_exact=False, rtol=1e-4, atol=1e-6)


# What a job's cost record measures on the machine it ran on (selectlab.flops.cost_record):
# compared by presence only; its FLOPs, tokens and model shape must match.
MEASURED_COST = {"seconds", "gpu_hours", "wall_hours"}


def assert_close(ours, theirs, path="") -> None:
    """Equal structure; numbers within a relative 1e-4 (thread scheduling may reorder sums)."""
    if isinstance(ours, dict):
        assert ours.keys() == theirs.keys(), path
        for key in ours:
            if path.endswith("/cost") and key in MEASURED_COST:
                continue
            assert_close(ours[key], theirs[key], f"{path}/{key}")
    elif isinstance(ours, float):
        assert ours == pytest.approx(theirs, rel=1e-4, abs=1e-9), path
    else:
        assert ours == theirs, path
