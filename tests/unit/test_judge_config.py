"""The `judge:` config section: schema rules and what each job is given."""

from __future__ import annotations

import copy

import pytest
from conftest import REPO

from selectlab.config import load_config
from selectlab.judge import resolve

SCHEMA = REPO / "config" / "schema" / "config.schema.yaml"


def validate(config: dict) -> None:
    from snakemake.utils import validate as snakemake_validate

    snakemake_validate(copy.deepcopy(config), str(SCHEMA), set_default=False)


@pytest.fixture(params=["config/config.yaml", ".test/config.yaml"])
def config(request) -> dict:
    return load_config(REPO / request.param)


def test_shipped_configs_are_valid_and_use_the_simulated_judge(config):
    validate(config)
    assert config["judge"]["backend"]["kind"] == "simulated"
    assert resolve.notes(config) == [resolve.SIMULATED_NOTE]


def test_the_simulated_judge_is_forbidden_with_slimpajama(config):
    from snakemake.exceptions import WorkflowError

    real = copy.deepcopy(config)
    real.pop("instruct")  # its offline stand-ins are refused too (test_instruct_config.py)
    real["corpus"]["mode"] = "slimpajama"
    real["corpus"]["slimpajama"] = {
        "train_dir": "/data/train", "validation_dir": "/data/val", "test_dir": "/data/test",
        "pattern": "chunk*/example_*.jsonl.zst", "group_size": 4, "heldout_tokens_per_split": 10000}
    with pytest.raises(WorkflowError):
        validate(real)
    real["judge"]["backend"] = {"kind": "vllm", "model": "/models/judge-70b"}
    validate(real)
    assert resolve.notes(real) == []


@pytest.mark.parametrize("backend", [
    {"kind": "openai", "model": "judge", "base_url": "http://127.0.0.1:8000/v1",
     "api_key_env": "sk-live-abcdef"},  # a key where the variable's name belongs
    {"kind": "openai", "model": "judge"},  # no endpoint
    {"kind": "vllm"},  # no model
    {"kind": "gpt"},
    {"kind": "simulated", "temperature": 0.3},  # unknown key
])
def test_invalid_backends_are_rejected(config, backend):
    from snakemake.exceptions import WorkflowError

    config["judge"]["backend"] = backend
    with pytest.raises(WorkflowError):
        validate(config)


def test_resolved_params_hold_only_what_each_job_uses(config):
    sample = resolve.resolve_sample(config, "qurating")
    assert set(sample["settings"]) == {"documents", "pairs", "snippet_tokens"}
    assert set(resolve.resolve_sample(config, "prrc")["settings"]) == {"documents",
                                                                       "max_text_tokens"}
    run = resolve.resolve_run(config, "dataman")
    assert "documents" not in run["settings"] and run["settings"]["max_attempts"] >= 1
    assert run["simulated"] == config["judge"]["simulated"]
    config["judge"]["backend"] = {"kind": "openai", "model": "m", "base_url": "http://x/v1"}
    assert "simulated" not in resolve.resolve_run(config, "dataman")
    assert resolve.resolve_run(config, "prrc")["seed"] == config["seed"]


def test_the_backends_batch_size_is_throughput_not_a_param(config):
    before = resolve.resolve_run(config, "prrc")
    assert "batch_size" not in before["backend"]
    config["judge"]["backend"]["batch_size"] = 7
    assert resolve.resolve_run(config, "prrc") == before
    assert resolve.resolve_throughput(config) == {"batch_size": 7}


def test_gpus_only_for_local_model_backends(config):
    config["judge"]["resources"] = {"gpu": 4, "mem_mb": 64000}
    assert resolve.job_shape_of_judge(config)["gpu"] == 0  # simulated
    config["judge"]["backend"] = {"kind": "vllm", "model": "/m"}
    assert resolve.job_shape_of_judge(config) == {"gpu": 4, "cpus": 2, "mem_mb": 64000,
                                                  "runtime": 60, "nodes": 1}
    config["judge"]["backend"] = {"kind": "openai", "model": "m", "base_url": "http://x/v1"}
    assert resolve.job_shape_of_judge(config)["gpu"] == 0


def test_candidate_shards_spread_over_the_pool():
    shards = [f"group_{i:05d}" for i in range(10)]
    assert resolve.candidate_shards(shards, None) == shards
    assert resolve.candidate_shards(shards, 20) == shards
    assert resolve.candidate_shards(shards, 3) == ["group_00000", "group_00003", "group_00006"]
