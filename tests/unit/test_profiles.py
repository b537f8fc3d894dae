"""Execution profiles and what the slurm executor plugin makes of the workflow's resources.

A dry run of a paper-shaped config (an 18M proxy on one GPU, a 1.3B model on 8 GPUs, a 7B model
on 4 nodes) through profiles/slurm gives each job's resources; the plugin's own functions then
turn them into the sbatch options and partition a real submission would use.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from snakemake_executor_plugin_slurm.partitions import get_best_partition, read_partition_file
from snakemake_executor_plugin_slurm.submit_string import get_submit_command
from snakemake_executor_plugin_slurm.utils import set_gres_string

from selectlab.train.launch import torchrun_command
from selectlab.train.resolve import resolve_pretrain

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "profiles"
PRESETS = {
    "proxy18m": {"hidden_size": 256, "num_layers": 2, "num_heads": 4,
                 "resources": {"gpu": 1, "cpus": 4, "mem_mb": 16000, "runtime": 60}},
    "llama1b3": {"hidden_size": 2048, "num_layers": 24, "num_heads": 16, "fsdp": True,
                 "resources": {"gpu": 8, "gpu_model": "a100", "cpus": 64,
                               "mem_mb": 480000, "runtime": 2880}},
    "llama7b": {"hidden_size": 4096, "num_layers": 32, "num_heads": 32, "num_kv_heads": 8,
                "fsdp": True, "resources": {"gpu": 8, "gpu_model": "h100", "cpus": 96,
                                            "mem_mb": 960000, "runtime": 4320, "nodes": 4}},
}
VARIANT_PRESET = {"proxy": "proxy18m", "big": "llama1b3", "huge": "llama7b"}


def profile(name: str) -> dict:
    return yaml.safe_load((PROFILES / name / "config.yaml").read_text())


def sizing_config() -> dict:
    config = yaml.safe_load((REPO / ".test" / "config.yaml").read_text())
    config["run"] = "sizing"
    config["models"]["presets"].update(PRESETS)
    # A global batch that splits over the 64 GPUs of a 7B job's micro-batches.
    config["variants"] = {name: {"family": "baseline", "method": "uniform",
                                 "pretrain": {"preset": preset, "global_batch_sequences": 256}}
                          for name, preset in VARIANT_PRESET.items()}
    config["evaluation"]["baseline"] = "proxy"
    config["evaluation"]["gpu"] = 1
    config.pop("instruct")  # its comparisons name the replaced variants
    return config


def parse_value(text: str):
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def dry_run(tmp: Path, targets: list[str]) -> subprocess.CompletedProcess:
    """`snakemake --dry-run` of `targets` through profiles/slurm, for tmp/config.yaml."""
    # Snakemake checks that apptainer exists before it plans; a stand-in answers the check.
    stub = tmp / "bin" / "apptainer"
    stub.parent.mkdir(exist_ok=True)
    stub.write_text("#!/bin/sh\necho 'apptainer version 1.3.4'\n")
    stub.chmod(0o755)
    env = os.environ | {"PATH": f"{stub.parent}:{Path(sys.executable).parent}:{os.environ['PATH']}",
                        # A dry run has no executor settings: the plugin's variable names the
                        # partition file for the plan-time GPU memory check.
                        "SNAKEMAKE_SLURM_PARTITIONS": str(PROFILES / "slurm" / "partitions.yaml")}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *targets, "--snakefile", str(REPO / "Snakefile"),
         "--directory", str(tmp), "--profile", str(PROFILES / "slurm"), "--dry-run",
         "--configfile", str(tmp / "config.yaml")],
        cwd=tmp, env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> dict[tuple[str, str], SimpleNamespace]:
    """(rule, variant or '') -> resources, threads and shell command of a slurm-profile dry run."""
    tmp = tmp_path_factory.mktemp("sizing")
    (tmp / "config.yaml").write_text(yaml.safe_dump(sizing_config()))
    result = dry_run(tmp, ["results/sizing/tables/main.csv"])
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    jobs, current = {}, None
    for line in (result.stdout + result.stderr).splitlines():
        if re.match(r"^(local)?rule \w+:$", line):
            current = SimpleNamespace(rule=line.split()[-1].rstrip(":"), variant="", threads=1,
                                      resources={}, shell="")
        elif current and line.startswith("    wildcards: "):
            match = re.search(r"variant=(\w+)", line)
            current.variant = match.group(1) if match else line.split(": ", 1)[1]
        elif current and line.startswith("    threads: "):
            current.threads = int(line.split(": ")[1])
        elif current and line.startswith("    resources: "):
            pairs = line.split(": ", 1)[1].split(", ")
            current.resources = {k: parse_value(v) for k, v in (p.split("=", 1) for p in pairs)}
            jobs[(current.rule, current.variant)] = current
        elif current and line.startswith("Shell command: "):
            current.shell = line.split(": ", 1)[1]
    return jobs


class Resources(dict):
    """A job's resources as the plugin reads them: `.get(...)` and attribute access."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError as error:
            raise AttributeError(name) from error


def sbatch(job: SimpleNamespace) -> tuple[str, str]:
    """The plugin's sbatch options for a planned job, and the partition it would pick."""
    fake = SimpleNamespace(name=job.rule, threads=job.threads, resources=Resources(job.resources))
    partitions = read_partition_file(PROFILES / "slurm" / "partitions.yaml")
    partition = get_best_partition(partitions, fake, logging.getLogger("test"))
    params = {"run_uuid": "run", "slurm_logfile": "log", "comment_str": f"rule_{job.rule}",
              "account": "", "partition": f" -p {partition}", "workdir": "/work"}
    settings = SimpleNamespace(requeue=False, no_requeue=False, qos=None, reservation=None)
    return get_submit_command(fake, params, settings=settings) + set_gres_string(fake), partition


def test_slurm_profile_submits_to_slurm_in_apptainer_with_gpus_and_retries():
    slurm = profile("slurm")
    assert slurm["executor"] == "slurm"
    assert slurm["software-deployment-method"] == "apptainer"
    assert "--nv" in slurm["apptainer-args"].split()
    assert slurm["retries"] >= 1 and slurm["latency-wait"] >= 30
    assert slurm["rerun-incomplete"] is True
    partitions = read_partition_file(PROFILES / "slurm" / slurm["slurm-partition-config"])
    gpus = {p.name: p.limits.max_gpu for p in partitions}
    assert any(gpus.values()) and not all(gpus.values())


def test_no_profile_sizes_a_rule():
    # Every rule is sized by the workflow (config/schema/resources.schema.yaml and the stage
    # sections); a workflow profile (profiles/default) would win key by key over --profile.
    assert not (PROFILES / "default").exists()
    for name in ("slurm", "local"):
        assert "set-resources" not in profile(name), name


def test_local_profile_runs_on_this_machine_without_containers():
    local = profile("local")
    assert local["cores"] == "all"
    assert "executor" not in local and "software-deployment-method" not in local


def test_bigger_models_ask_for_more_gpus_time_and_memory(planned):
    proxy, big = planned[("pretrain", "proxy")].resources, planned[("pretrain", "big")].resources
    assert (proxy["gpu"], big["gpu"]) == (1, 8)
    assert big["runtime"] > proxy["runtime"] and big["mem_mb"] > proxy["mem_mb"]
    assert big["gpu_model"] == "a100" and "gpu_model" not in proxy
    for variant in VARIANT_PRESET:
        for rule in ("eval_perplexity", "eval_icl"):
            assert planned[(rule, variant)].resources["gpu"] == 1


def test_sbatch_options_per_job(planned):
    call, partition = sbatch(planned[("pretrain", "proxy")])
    assert partition == "gpu" and "--gpus=1" in call and "--cpus-per-gpu=4" in call
    call, partition = sbatch(planned[("pretrain", "big")])
    assert partition == "gpu" and "--gpus=a100:8" in call and "--cpus-per-gpu=8" in call
    assert "-t 2880" in call and "--mem 480000" in call and "--ntasks-per-gpu" not in call
    assert "--signal=URG@600" in call  # the warning a pre-empted job checkpoints on
    call, partition = sbatch(planned[("eval_icl", "big")])
    assert partition == "gpu" and "--gpus=a100:1" in call
    # Sized from the 1.3B model (fp32 weights, 4 GB base; selectlab.evaluate.sizing).
    assert "--mem 8664" in call and "--signal=URG@600" in call
    for rule in ("tokenize_shard", "select", "pack", "tables"):
        job = next(job for (name, _), job in planned.items() if name == rule)
        call, partition = sbatch(job)
        assert partition == "cpu" and "--gpus" not in call and "--gres" not in call
    # Rules of fixed size take it from the schema's default for the rule.
    assert "--mem 2000 " in sbatch(planned[("tables", "")])[0]


def test_multi_node_pretraining_gets_whole_nodes_and_one_launcher_per_node(planned):
    job = planned[("pretrain", "huge")]
    call, partition = sbatch(job)
    # --gres counts per node (--gpus would count for the whole job); one task per node, and no
    # --ntasks-per-gpu, which the plugin derives from `tasks` unless tasks_per_gpu is 0.
    assert partition == "gpu" and "--gres=gpu:h100:8" in call and "--gpus" not in call
    assert "--nodes=4" in call and "--ntasks=4" in call and "--ntasks-per-gpu" not in call
    assert "--cpus-per-gpu=12" in call
    # `mpi` makes the jobstep run the command in the batch script, not inside `srun -n1`.
    assert job.resources["mpi"] == "srun"
    assert job.shell.startswith(
        "srun --nodes=4 --ntasks=4 --ntasks-per-node=1 --cpus-per-task=96 --kill-on-bad-exit=1 "
        f"apptainer exec --home {job.shell.split('--home ')[1].split()[0]} --nv "
        "containers/train.sif selectlab pretrain ")
    assert "--gpus 8 --nodes 4" in job.shell
    assert planned[("pretrain", "big")].shell.startswith("selectlab pretrain ")


def test_resizing_a_job_does_not_change_the_models_parameters():
    config = sizing_config()
    before = resolve_pretrain(config, "big")
    config["models"]["presets"]["llama1b3"]["resources"] = {"gpu": 4, "runtime": 10}
    config["models"]["presets"]["llama1b3"]["fsdp"] = False
    config["pretrain"] |= {"micro_batch_sequences": 2, "activation_checkpointing": True}
    assert resolve_pretrain(config, "big") == before
    assert "resources" not in before["preset"] and "fsdp" not in before["preset"]
    assert "micro_batch_sequences" not in before["settings"]


def test_launch_settings_reach_the_command_as_resources_not_params(planned):
    job = planned[("pretrain", "big")]
    assert "--gpus 8 --nodes 1" in job.shell and '"fsdp":true' in job.shell
    assert '"micro_batch_sequences":8' in job.resources["launch"]
    # The estimated peak GPU memory of one process, checked against the partition's GPUs.
    assert 0 < job.resources["gpu_mem_mb"] < 81920
    assert "gpu_mem_mb" not in planned[("pretrain", "proxy")].resources or (
        planned[("pretrain", "proxy")].resources["gpu_mem_mb"] > 0)


def test_a_pretraining_job_that_cannot_fit_its_gpus_stops_the_plan(tmp_path):
    config = sizing_config()
    config["models"]["presets"]["llama7b"].update(hidden_size=8192, num_heads=64,
                                                  num_layers=80)
    config["pretrain"] |= {"seq_len": 4096, "micro_batch_sequences": 8}
    # Budgets of at least one global batch of these longer sequences (checked at plan time too).
    config["selection"]["budget_tokens"] = 2 * 256 * 4096
    for search in config["metarater"]["searches"].values():
        search["budget_tokens"] = 2 * 256 * 4096
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = dry_run(tmp_path, ["results/sizing/models/huge/final"])
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "variant 'huge' (preset 'llama7b'): one pretraining process needs about" in output
    assert "partition 'gpu'" in output


def test_launcher_uses_torchrun_on_every_gpu_of_a_node():
    argv = ["pretrain", "--gpus", "4"]
    assert torchrun_command(argv, gpus=1, nodes=1, env={}) is None
    assert torchrun_command(argv, gpus=4, nodes=1, env={"LOCAL_RANK": "0"}) is None
    assert torchrun_command(argv, gpus=4, nodes=1, env={}) == [
        "torchrun", "--standalone", "--nproc-per-node=4", "-m", "selectlab.cli", *argv]
    env = {"SLURM_LAUNCH_NODE_IPADDR": "10.0.0.7", "SLURM_JOB_ID": "123456"}
    command = torchrun_command(argv, gpus=8, nodes=4, env=env)
    assert command[:3] == ["torchrun", "--nnodes=4", "--nproc-per-node=8"]
    assert "--rdzv-backend=c10d" in command and "--rdzv-id=123456" in command
    assert "--rdzv-endpoint=10.0.0.7:23456" in command
    with pytest.raises(ValueError, match="srun"):
        torchrun_command(argv, gpus=8, nodes=4, env={})


@pytest.mark.parametrize("resources, valid", [
    ({"gpu": 8, "cpus": 96, "nodes": 4}, True),
    ({"gpu": 0, "nodes": 1}, True),
    ({"gpu": 8, "nodes": 4}, False),   # multi-node needs cpus for the launcher
    ({"cpus": 4, "nodes": 2}, False),  # and GPUs on every node
    ({"gpu": 1, "gpu_model": "'a100'"}, False),
    ({"gpus": 1}, False),
])
def test_schema_checks_preset_resources(resources, valid):
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    config = sizing_config()
    config["models"]["presets"]["llama7b"]["resources"] = resources
    if valid:
        validate(config, str(REPO / "config" / "schema" / "config.schema.yaml"))
    else:
        with pytest.raises(WorkflowError, match=r"instance\['models'\]\['presets'\]\['llama7b'\]"):
            validate(config, str(REPO / "config" / "schema" / "config.schema.yaml"))
