"""One resource shape for every job: defaults from the schema, config entries over them, and
the Snakemake / slurm-plugin form of single-node, GPU and multi-node jobs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import workflow_rule_names

from selectlab import resources as res
from selectlab.config import load_config
from selectlab.evaluate.resolve import eval_shape
from selectlab.evaluate.sizing import eval_size
from selectlab.raters.resolve import resources as rater_shape
from selectlab.selection.resolve import selection_job_shape
from selectlab.train.launch import node_launcher
from selectlab.train.resolve import pretrain_shape

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def config() -> dict:
    return load_config(REPO / ".test" / "config.yaml")


def test_defaults_come_from_the_schema_and_config_entries_replace_only_their_keys(config):
    assert res.shape_default() == {"gpu": 0, "cpus": 1, "mem_mb": 2000, "runtime": 60,
                                   "nodes": 1}
    assert res.rule_shape(config, "select") == {"gpu": 0, "cpus": 1, "mem_mb": 8000,
                                                "runtime": 120, "nodes": 1}
    config["resources"] = {"select": {"mem_mb": 16000}}
    assert res.rule_shape(config, "select")["mem_mb"] == 16000
    assert res.rule_shape(config, "select")["runtime"] == 120
    assert res.rule_shape(config, "tokenize_shard")["cpus"] == 2


def test_every_rule_sized_by_name_has_a_schema_default():
    text = "\n".join(path.read_text() for path in (REPO / "rules").glob("*.smk"))
    sized = set(re.findall(r'rule_(?:threads|resources)\("(\w+)"', text))
    rules = workflow_rule_names()
    listed = set(res._schema(res.RESOURCES_SCHEMA)["properties"])
    assert sized and sized <= rules
    # Evaluation rules are listed too: their defaults sit under the sizes derived from the model;
    # so are selection's, under selection.memory_mb and the pool (both below).
    derived = set(re.findall(r'selection_job_shape\(config, "(\w+)"\)', text))
    assert derived == {"select", "rank_scores"} and derived <= rules
    assert listed == sized | derived | {"eval_perplexity", "eval_icl"}


def test_cpu_job_is_threads_and_memory_only():
    resources = res.as_snakemake(res.job_shape({"cpus": 2, "mem_mb": 8000}))
    assert res.present(resources) == {"mem_mb": 8000, "runtime": 60, "nodes": 1, "gpu": 0}


def test_one_node_gpu_job_asks_per_job_with_cores_per_gpu():
    shape = res.job_shape({"gpu": 8, "gpu_model": "a100", "cpus": 64, "mem_mb": 480000})
    assert res.present(res.as_snakemake(shape)) == {
        "mem_mb": 480000, "runtime": 60, "nodes": 1, "gpu": 8, "gpu_model": "a100",
        "cpus_per_gpu": 8}
    # Fewer cores than GPUs still asks for one core per GPU.
    assert res.as_snakemake(res.job_shape({"gpu": 4, "cpus": 2}))["cpus_per_gpu"] == 1


def test_multi_node_job_asks_per_node_and_runs_its_command_once():
    shape = res.job_shape({"gpu": 8, "gpu_model": "h100", "cpus": 96, "nodes": 4})
    assert res.present(res.as_snakemake(shape, multi_node=True)) == {
        "mem_mb": 2000, "runtime": 60, "nodes": 4, "gpu": 0, "gres": "gpu:h100:8",
        "cpus_per_gpu": 12, "tasks": 4, "tasks_per_gpu": 0, "mpi": "srun"}
    assert node_launcher(shape, image="train.sif", apptainer_args="--nv", home="/w") == (
        "srun --nodes=4 --ntasks=4 --ntasks-per-node=1 --cpus-per-task=96 --kill-on-bad-exit=1 "
        "apptainer exec --home /w --nv train.sif ")
    assert node_launcher(res.job_shape({"gpu": 8})) == ""


def test_stage_shapes_layer_their_config_over_their_schema_defaults(config):
    config["raters"]["defaults"]["resources"] = {"gpu": 1, "mem_mb": 9000}
    config["raters"]["prrc"] = {"resources": {"runtime": 99}}
    assert rater_shape(config, "prrc") == {"gpu": 1, "cpus": 2, "mem_mb": 9000, "runtime": 99,
                                           "nodes": 1}
    preset = config["models"]["presets"][config["pretrain"]["preset"]]
    preset.pop("resources", None)
    name = next(iter(config["variants"]))
    assert pretrain_shape(config, name) == {"gpu": 0, "cpus": 2, "mem_mb": 8000, "runtime": 240,
                                            "nodes": 1}
    # Evaluation: the rule's cores, the time and memory its model and tokens need...
    sized = eval_size(config, name, "icl")
    assert eval_shape(config, "eval_icl", name) == {"gpu": 0, "cpus": 2, "nodes": 1} | sized
    assert sized["runtime"] == 30 and 4000 <= sized["mem_mb"] < 4100
    # ...and the config's entry for the rule over both.
    config["resources"] = {"eval_icl": {"runtime": 600, "cpus": 4}}
    assert eval_shape(config, "eval_icl", name) == {"gpu": 0, "cpus": 4, "nodes": 1,
                                                    "mem_mb": sized["mem_mb"], "runtime": 600}


def test_selection_jobs_ask_for_the_memory_they_stream_within(config):
    config["selection"]["memory_mb"] = 3000
    assert selection_job_shape(config, "select") == {"gpu": 0, "cpus": 1, "mem_mb": 3000,
                                                     "runtime": 120, "nodes": 1}
    assert selection_job_shape(config, "rank_scores")["mem_mb"] == 3000
    assert selection_job_shape(config, "rank_scores")["runtime"] == 240
    config["resources"] = {"select": {"mem_mb": 16000, "runtime": 30}}
    assert selection_job_shape(config, "select")["mem_mb"] == 16000
    assert selection_job_shape(config, "select")["runtime"] == 30
    assert selection_job_shape(config, "rank_scores")["mem_mb"] == 3000


def test_an_evaluation_on_a_gpu_takes_one_gpus_share_of_the_preset(config):
    preset = config["models"]["presets"][config["pretrain"]["preset"]]
    preset["resources"] = {"gpu": 8, "gpu_model": "a100", "cpus": 64, "mem_mb": 480000}
    config["evaluation"]["gpu"] = 1
    name = next(iter(config["variants"]))
    sized = eval_size(config, name, "perplexity")
    assert eval_shape(config, "eval_perplexity", name) == {
        "gpu": 1, "gpu_model": "a100", "cpus": 8, "nodes": 1} | sized
    # Its memory follows the model, not the preset's 60 GB a GPU.
    assert 4000 <= sized["mem_mb"] < 4100 and sized["runtime"] == 30


def test_only_pretraining_spans_nodes_and_other_rules_declare_single_node_keys():
    # Any other rule's command runs once on the first node: several nodes are refused...
    shape = res.job_shape({"gpu": 1, "nodes": 2})
    with pytest.raises(ValueError, match="nodes: 2 is for pretraining only"):
        res.as_snakemake(shape)
    # ...so such rules declare no multi-node resource (Snakemake evaluates every declared one
    # of every job while planning), and every resource a one-node shape sets is among them.
    single = set(res.snakemake_keys(multi_node=False))
    assert single.isdisjoint({"gres", "tasks", "tasks_per_gpu", "mpi"})
    one_node = res.job_shape({"gpu": 2, "gpu_model": "a100", "cpus": 8})
    assert set(res.present(res.as_snakemake(one_node))) <= single
    assert set(res.snakemake_keys(multi_node=True)) == set(res.SNAKEMAKE_KEYS)
