"""The `instruct:` config section: schema rules and what each job is given."""

from __future__ import annotations

import copy

import pytest
from conftest import REPO

from selectlab import layout
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
        "pattern": "chunk*/example_*.jsonl.zst", "group_size": 4, "heldout_tokens_per_split": 10000}
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


def test_job_shapes_layer_the_stage_resources_over_the_schema_default(config):
    config["instruct"]["sft"]["resources"] = {"gpu": 1, "gpu_model": "a100", "cpus": 8}
    config["instruct"]["judge"].pop("resources", None)
    assert resolve.job_shape_of(config, "sft") == {"gpu": 1, "gpu_model": "a100", "cpus": 8,
                                                   "mem_mb": 4000, "runtime": 60, "nodes": 1}
    assert resolve.job_shape_of(config, "judge") == {"gpu": 0, "cpus": 1, "mem_mb": 4000,
                                                     "runtime": 60, "nodes": 1}
    validate(config)
    config["instruct"]["generate"]["resources"] = {"nodes": 2}  # one process, one node
    from snakemake.exceptions import WorkflowError

    with pytest.raises(WorkflowError):
        validate(config)


def test_inputs_and_archive_files_are_layout_paths(config):
    root = layout.run_dir("x")
    spec = resolve.comparisons(config)["qurating"]
    assert resolve.comparison_answers(config, root, "qurating") == [
        f"results/x/instruct/answers/{name}.parquet"
        for name in [spec["reference"], *spec["variants"]]]
    shards = {"shard_00000": ["results/x/corpus/raw/shard_00000.jsonl.zst"]}
    assert resolve.corpus_inputs(config, shards, root, ["validation", "test"]) == [
        "results/x/corpus/raw/shard_00000.jsonl.zst",
        "results/x/corpus/heldout/validation.jsonl.zst", "results/x/corpus/heldout/test.jsonl.zst"]
    archived = resolve.archive_files(config, root)
    assert archived[0] == "results/x/instruct/data/split.json"
    assert {f"results/x/instruct/sft/{name}/sft_log.csv"
            for name in resolve.fine_tuned_variants(config)} <= set(archived)
    assert "results/x/instruct/judgments/qurating/summary.csv" in archived
    config["instruct"]["data"] = {"kind": "sharegpt", "path": "/data/sharegpt.json",
                                  "train_pairs": 10, "eval_instructions": 5}
    assert resolve.corpus_inputs(config, shards, root, ["test"]) == []
    config.pop("instruct")
    assert resolve.archive_files(config, root) == []


def test_the_report_plan_lists_the_win_rates_only_with_comparisons(config):
    from selectlab.report import plan

    # After the papers' own tables (which the report leads with), the results, then the win
    # rates.
    report = plan.report_plan(config)
    results = report.report_tables()[len(report.lead_tables()):]
    assert results[:len(plan.TABLES) + 1] == [*plan.TABLES, "winrate"]
    assert "winrate" in plan.report_plan(config).paper_tables()
    assert "winrate" in plan.report_plan(config).report_figures()
    assert plan.table_caption("winrate") == "winrate_table"
    assert plan.figure_caption("winrate") == "winrate"
    assert plan.heading("winrate").startswith("Instruction following")
    config.pop("instruct")
    without = plan.report_plan(config)
    assert "winrate" not in without.report_tables() + without.paper_tables()
    assert "winrate" not in without.report_figures()
