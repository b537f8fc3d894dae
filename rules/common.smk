# Shared by all stages: the run directory, the containers, the global wildcard constraints, the
# helpers every stage uses, and the final targets. Each stage's own names (constants and input
# lambdas) sit at the top of its .smk; the logic lives in selectlab: `layout` (every path), the
# stage resolvers (what a job reads and its params) and `resources` (every job's size).
import functools
import os

from snakemake.settings.types import DeploymentMethod

from selectlab import config as cfg
from selectlab import layout
from selectlab import resources as res
from selectlab import shard_jobs
from selectlab.selection import resolve as select_cfg

RUN = layout.run_dir(config["run"])
CONTAINERS = {
    "cpu": "containers/cpu.sif",
    "train": "containers/train.sif",
    "vllm": "containers/vllm.sif",
} | config.get("containers", {})
USES_APPTAINER = (
    DeploymentMethod.APPTAINER in workflow.deployment_settings.deployment_method
)


# `variant` also matches the generated Meta-rater proxies (selected, trained, perplexity only)
# and the stages of MATES variants (selected and trained).
# A tokenized shard's name never holds two underscores in a row: `{shard}__{pool}` names the
# shard's part of a selection pool (selectlab.corpus.pools), which rules read as a shard.
BASE_SHARD = "[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*"


wildcard_constraints:
    shard="[A-Za-z0-9_]+",
    variant=select_cfg.variant_name_pattern(config),
    split="validation|test",


def json_param(value):
    """A config section as compact JSON, so a change to it reruns exactly its jobs."""
    return cfg.as_json(value)


names_pattern = shard_jobs.names_pattern


def parent_dir(name):
    """A params function: the directory of output `name` (keeps paths derived from outputs;
    its first file, if several)."""
    return lambda wildcards, output: os.path.dirname(
        output[name][0] if isinstance(output[name], list) else output[name]
    )


def parent_dir_of_input(name):
    """A params function: the directory of input `name` (its first file, if several)."""
    return lambda wildcards, input: os.path.dirname(
        input[name][0] if isinstance(input[name], list) else input[name]
    )


def optional_flag(flag, name):
    """A params function: `flag <files>` when input `name` has files, else nothing."""
    return lambda wildcards, input: f"{flag} {input[name]}" if input[name] else ""


def caption(stem):
    """A report caption file, as `report()` wants it: relative to this rules/ directory."""
    return os.path.join("..", layout.caption(stem))


# Job sizes (selectlab.resources): threads are the shape's `cpus`, resources its Snakemake and
# slurm-plugin form. A rule of fixed size reads resources.<rule> over the schema's default; a
# rule whose jobs differ passes per_job(its stage resolver's shape of the wildcards).
def rule_threads(rule):
    return res.rule_shape(config, rule)["cpus"]


def rule_resources(rule):
    return res.present(res.as_snakemake(res.rule_shape(config, rule)))


def per_job(shape_of):
    """`shape_of(wildcards)`, resolved once per job however often a rule asks for it."""
    cached = functools.cache(lambda key: shape_of(dict(key)))
    return lambda wildcards: cached(tuple(wildcards.items()))


def job_threads(shape_of):
    return lambda wildcards: shape_of(wildcards)["cpus"]


def job_resources(shape_of, multi_node=False):
    """resources: of a rule whose jobs differ in size (`shape_of` from per_job); `multi_node`
    for the one rule whose jobs may span nodes (pretrain)."""
    snakemake_form = per_job(
        lambda wildcards: res.as_snakemake(shape_of(wildcards), multi_node)
    )
    return {
        name: lambda wildcards, name=name: snakemake_form(wildcards)[name]
        for name in res.snakemake_keys(multi_node)
    }


def batch_paths(kind, path_of, tail=""):
    """The paths `path_of(RUN, shard)` of each shard of a job of `kind` (selectlab.shard_jobs),
    patterns of its `{batch}` wildcard; `tail` names a pool's part of the shards."""
    return [path_of(RUN, f"{{batch}}{suffix}{tail}") for suffix in kind.suffixes]


def batch_rule_resources(rule, kind):
    """resources: of a fixed-size per-shard rule, for a job of `kind`: one shard's memory, the
    time of all its shards."""
    shape = res.rule_shape(config, rule)
    return res.present(res.as_snakemake(res.for_shards(shape, len(kind.suffixes))))


def slurm_partition_file():
    """The slurm profile's partition file; None for other executors and inside a job.

    Read from the executor's settings, which Snakemake sets after parsing the workflow (so
    only resource functions, evaluated while the plan is built, see it) and not at all in a
    dry run; there the plugin's own variable SNAKEMAKE_SLURM_PARTITIONS names the file.
    """
    settings = workflow.executor_settings
    path = getattr(settings, "partition_config", None) or os.environ.get(
        "SNAKEMAKE_SLURM_PARTITIONS"
    )
    return str(path) if path else None


def final_targets():
    """What `all` builds: the main table, the report, the archive, and each stage's targets.
    The report's tables are named too: Snakemake does not rebuild a missing intermediate file
    whose consumers are up to date (snakemake/snakemake#1978), so a table whose job failed and
    was removed would otherwise stay missing after the next, "nothing to be done" run.
    """
    return (
        [
            layout.table(RUN, "main", "md"),
            layout.html_report(RUN),
            layout.archive(RUN),
        ]
        + expand(layout.table(RUN), name=REPORT.report_tables(), ext=["csv", "md"])
        + JUDGE_TARGETS
        + ANNOTATION_TARGETS
        + RATER_TARGETS
        + ANALYSIS_TARGETS
        + COST_TARGETS
    )
