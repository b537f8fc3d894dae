"""The `instruct:` config section: schema rules and what each job is given."""

from __future__ import annotations

import copy

import pytest
from conftest import REPO

from selectlab.config import load_config
from selectlab.instruct import resolve

SCHEMA = REPO / "config" / "schema" / "config.schema.yaml"


def validate(config: dict) -> None:
    from snakemake.utils import validate as snakemake_validate

    snakemake_validate(copy.deepcopy(config), str(SCHEMA), set_default=False)


@pytest.fixture(params=["config/config.yaml", ".test/config.yaml"])
def config(request) -> dict:
    return load_config(REPO / request.param)


def as_slimpajama(config: dict) -> dict:
    real = copy.deepcopy(config)
    real["corpus"]["mode"] = "slimpajama"
    real["corpus"]["slimpajama"] = {
        "train_dir": "/data/train", "validation_dir": "/data/val", "test_dir": "/data/test",
        "pattern": "chunk*/example_*.jsonl.zst", "group_size": 4, "heldout_docs_per_source": 10}
    real["judge"]["backend"] = {"kind": "vllm", "model": "/models/judge-70b"}
    return real


def test_shipped_configs_fine_tune_uniform_and_judge_with_the_reference_judge(config):
    validate(config)
    assert resolve.configured(config)
    assert "uniform" in resolve.fine_tuned_variants(config)
    assert resolve.judge_notes(config) == [resolve.REFERENCE_JUDGE_NOTE]
    for name in resolve.fine_tuned_variants(config):
        sft = resolve.resolve_sft(config, name)
        assert sft == resolve.resolve_sft(config, "uniform")  # the same SFT for every variant
        assert "resources" not in sft["settings"]


def test_the_default_config_has_a_qurating_and_a_dataman_row():
    config = load_config(REPO / "config" / "config.yaml")
    families = {config["variants"][v]["family"] for v in resolve.fine_tuned_variants(config)}
    assert {"baseline", "qurating"} <= families and families & {"dataman", "dataman_level"}
    specs = resolve.comparisons(config)
    assert specs["qurating"]["reference"] == "uniform"
    assert specs["dataman"]["reference"] == "educational_value_t2"


def test_offline_stand_ins_are_forbidden_with_slimpajama(config):
    from snakemake.exceptions import WorkflowError

    real = as_slimpajama(config)
    with pytest.raises(WorkflowError):
        validate(real)  # the embedded instruction set and the reference judge
    real["instruct"]["data"] = {"kind": "sharegpt", "path": "/data/sharegpt.json",
                                "train_pairs": 10000, "eval_instructions": 1000}
    with pytest.raises(WorkflowError):
        validate(real)  # still the reference judge
    real["instruct"]["judge"]["backend"] = {"kind": "openai", "model": "gpt-4-0314",
                                            "base_url": "https://api.openai.com/v1"}
    validate(real)
    assert resolve.judge_notes(real) == []
    assert resolve.resolve_data(real)["path"] == "/data/sharegpt.json"


@pytest.mark.parametrize("change", [
    {"judge": {"backend": {"kind": "simulated", "model": "x"}}},
    {"judge": {"backend": {"kind": "reference", "temperature": 0.2}}},
    {"judge": {"backend": {"kind": "vllm"}}},  # no model
    {"chat_template": {"prompt": "no placeholder"}},
    {"data": {"kind": "sharegpt", "train_pairs": 10, "eval_instructions": 5}},  # no path
    {"generate": {"backend": "openai", "max_new_tokens": 8}},
])
def test_invalid_sections_are_rejected(config, change):
    from snakemake.exceptions import WorkflowError

    config["instruct"] |= change
    with pytest.raises(WorkflowError):
        validate(config)


def test_bad_comparisons_and_lengths_are_clear_errors(config):
    broken = copy.deepcopy(config)
    broken["instruct"]["comparisons"]["extra"] = {"reference": "uniform", "variants": ["nope"]}
    with pytest.raises(ValueError, match="no variant 'nope'"):
        resolve.fine_tuned_variants(broken)
    broken["instruct"]["comparisons"]["extra"]["variants"] = ["uniform"]
    with pytest.raises(ValueError, match="both the reference and a variant"):
        resolve.comparisons(broken)
    long = copy.deepcopy(config)
    long["instruct"]["sft"]["max_seq_len"] = config["pretrain"]["seq_len"] * 2
    with pytest.raises(ValueError, match="exceeds the context"):
        resolve.resolve_sft(long, "uniform")
    long["instruct"]["generate"]["max_new_tokens"] = long["instruct"]["sft"]["max_seq_len"]
    with pytest.raises(ValueError, match="no room for prompts"):
        resolve.resolve_data(long)


def test_data_params_carry_the_corpus_readers_resource_paths(config):
    config = copy.deepcopy(config)
    config["corpus"]["embedded"]["sources"]["web"]["gcide_path"] = "/opt/gcide"
    config["corpus"]["embedded"]["sources"]["code"]["stdlib_dir"] = "/opt/py/lib"
    data = resolve.resolve_data(config)
    assert data["resources"] == {"gcide_path": "/opt/gcide", "stdlib_dir": "/opt/py/lib"}
    assert data["max_prompt_tokens"] == (config["instruct"]["sft"]["max_seq_len"]
                                         - config["instruct"]["generate"]["max_new_tokens"])
