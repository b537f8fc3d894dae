# Shared helpers: paths, shard listing, per-job config resolution. Logic lives in selectlab.
import os

from selectlab import config as cfg
from selectlab.corpus import reading

RUN = f"results/{config['run']}"
LOGS = f"{RUN}/logs"
SHARD_FILES = cfg.shard_files(config, RUN)
ID_ROOT = reading.id_root(config, RUN)
SHARDS = list(SHARD_FILES)
VARIANTS = list(config["variants"])
SPLITS = ["validation", "test"]
CONTAINERS = {
    "cpu": "containers/cpu.sif",
    "train": "containers/train.sif",
    "vllm": "containers/vllm.sif",
} | config.get("containers", {})


# `variant` also matches the generated Meta-rater proxies (selected, trained, perplexity only).
wildcard_constraints:
    shard="[A-Za-z0-9_]+",
    variant="|".join(VARIANTS + cfg.proxy_name_patterns(config)),
    split="validation|test",


def json_param(value):
    """A config section as compact JSON, so a change to it reruns exactly its jobs."""
    return cfg.as_json(value)


def names_pattern(names):
    """A wildcard regex matching exactly these names; with none, one that matches nothing."""
    return "|".join(names) if names else "(?!)"


def raw_shard_files(wildcards):
    return SHARD_FILES[wildcards.shard]


def final_targets():
    targets = [
        f"{RUN}/tables/main.md",
        f"{RUN}/report/report.html",
        f"{RUN}/archive/selectlab-{config['run']}.tar.gz",
    ] + expand(
        f"{RUN}/judgments/{{protocol}}/{{name}}",
        protocol=judge_cfg.configured_protocols(config),
        name=["labels.parquet", "summary.csv"],
    )
    return targets + annotation_targets() + rater_targets() + analysis_targets()


def parent_dir(name):
    """A params function: the directory of output `name` (keeps paths derived from outputs)."""
    return lambda wildcards, output: os.path.dirname(output[name])


def selection_sidecars(wildcards):
    """Throughput tables of the score families a variant's selection reads.

    Each is written after every shard of its family, so it stands for all of them.
    """
    raters = cfg.selection_raters(config, wildcards.variant)
    return expand(f"{RUN}/attributes/{{rater}}/throughput.csv", rater=raters)


def init_model(wildcards):
    """The final model of the variant this one continues pretraining from, if any."""
    parent = cfg.init_variant(config, wildcards.variant)
    return [f"{RUN}/models/{parent}/final"] if parent else []


def report_params():
    return {
        "descriptions": cfg.report_descriptions(config),
        "baseline": config["evaluation"]["baseline"],
        "group_order": cfg.icl_group_order(config),
        "notes": judge_notes(),
    }


# Judge stage (rules/judge.smk).
from selectlab.judge import resolve as judge_cfg

JUDGE_SHARDS = judge_cfg.candidate_shards(
    SHARDS, config["judge"].get("sample", {}).get("max_shards")
)


def judge_notes():
    """Caveats every table carries: a simulated judge is not an LLM."""
    return judge_cfg.notes(config)


def judge_ground_truth():
    """The corpus's recorded damage: input of the simulated judge only."""
    if judge_cfg.is_simulated(config):
        return [f"{RUN}/corpus/ground_truth.parquet"]
    return []


# Cluster sizing (docs/cluster.md). A pretraining job is sized by its model preset's
# `resources`, evaluation jobs by `evaluation.gpu` and the same preset. Resources returned as None
# are dropped by Snakemake, so the slurm plugin only sees what a job really asks for.
from snakemake.settings.types import DeploymentMethod

USES_APPTAINER = (
    DeploymentMethod.APPTAINER in workflow.deployment_settings.deployment_method
)


def preset_resource(variant, key, default=None):
    """One of models.presets[<the variant's preset>].resources."""
    preset = config["models"]["presets"][cfg.preset_name(config, variant)]
    return preset.get("resources", {}).get(key, default)


def pretrain_nodes(variant):
    return preset_resource(variant, "nodes", 1)


def pretrain_gpu(variant):
    """GPUs per node of a variant's pretraining job."""
    return preset_resource(variant, "gpu", 0)


def pretrain_gpu_resources(variant):
    """gpu/gpu_model/gres/cpus_per_gpu of the pretraining job, as the slurm plugin reads them.

    One node asks with `gpu` (sbatch --gpus, a count for the whole job); several nodes ask with
    `gres` (sbatch --gres, a count per node), so each node gets the same number of GPUs.
    """
    gpus, model = pretrain_gpu(variant), preset_resource(variant, "gpu_model")
    if pretrain_nodes(variant) > 1:
        gres = ":".join(["gpu", *([model] if model else []), str(gpus)])
        request = {"gpu": 0, "gpu_model": None, "gres": gres}
    else:
        request = {"gpu": gpus, "gpu_model": model if gpus else None, "gres": None}
    cpus = preset_resource(variant, "cpus_per_gpu")
    return request | {"cpus_per_gpu": cpus if gpus else None}


def pretrain_mpi_resources(variant):
    """tasks/tasks_per_gpu/mpi for multi-node jobs (None on one node).

    With `mpi` set the plugin runs the rule's command in the batch script instead of wrapping
    it in `srun -n1`, and the command starts one task per node itself. On GPU jobs the plugin
    turns `tasks` into --ntasks-per-gpu unless tasks_per_gpu is 0, hence the 0.
    """
    nodes = pretrain_nodes(variant)
    if nodes <= 1:
        return {"tasks": None, "tasks_per_gpu": None, "mpi": None}
    return {"tasks": nodes, "tasks_per_gpu": 0, "mpi": "srun"}


def pretrain_container(wildcards):
    # A multi-node command runs on the batch node and starts the container on every node
    # through srun (pretrain_launcher), because srun does not exist inside the container.
    return None if pretrain_nodes(wildcards.variant) > 1 else CONTAINERS["train"]


def pretrain_launcher(variant):
    """Command prefix that starts one `selectlab pretrain` per node; empty on one node."""
    nodes = pretrain_nodes(variant)
    if nodes <= 1:
        return ""
    cpus = preset_resource(variant, "cpus_per_gpu") * pretrain_gpu(variant)
    launcher = (
        f"{pretrain_mpi_resources(variant)['mpi']} --nodes={nodes} --ntasks={nodes}"
        f" --ntasks-per-node=1 --cpus-per-task={cpus} --kill-on-bad-exit=1 "
    )
    if USES_APPTAINER:
        args = workflow.deployment_settings.apptainer_args
        launcher += f"apptainer exec --home {os.getcwd()} {args} {CONTAINERS['train']} "
    return launcher


def eval_gpu():
    return config["evaluation"].get("gpu", 0)


def eval_mem_mb(variant):
    """One GPU's share of the preset's per-node pretraining memory."""
    return preset_resource(variant, "mem_mb", 8000) // max(pretrain_gpu(variant), 1)


def eval_gpu_resource(variant, key):
    """gpu_model / cpus_per_gpu of an evaluation job: the preset's, when it runs on a GPU."""
    return preset_resource(variant, key) if eval_gpu() else None


# Annotation stage (rules/annotate.smk).
from selectlab.annotate import resolve as annotate_cfg

ANNOTATE_FAMILIES = annotate_cfg.family_names(config)
DSIR_FAMILIES = annotate_cfg.families_of_kind(config, "dsir")


def annotation_targets():
    """Every family's sidecar of every shard, and the throughput table."""
    return expand(
        f"{RUN}/attributes/{{family}}/{{shard}}.parquet",
        family=ANNOTATE_FAMILIES,
        shard=SHARDS,
    ) + [f"{RUN}/tables/annotation_throughput.md"]


def annotate_fitted_inputs(wildcards):
    return annotate_cfg.fitted_inputs(config, RUN, wildcards.family)


def annotate_container(wildcards):
    return CONTAINERS[annotate_cfg.container_key(config, wildcards.family)]


def annotate_threads(wildcards):
    # Rule-based families are single-threaded Python; model families use both cores.
    return 2 if annotate_cfg.uses_model(config, wildcards.family) else 1


def annotate_resource(key):
    return lambda wildcards: annotate_cfg.resources(config, wildcards.family)[key]


def dsir_raw_shard_names(family):
    return annotate_cfg.dsir_raw_shards(config, family, SHARDS)


def dsir_raw_meta(wildcards):
    return expand(
        f"{RUN}/attributes/meta/{{shard}}.parquet",
        shard=dsir_raw_shard_names(wildcards.family),
    )


def dsir_shard_files(family):
    return {shard: SHARD_FILES[shard] for shard in dsir_raw_shard_names(family)}


def dsir_raw_files(wildcards):
    return [
        path for files in dsir_shard_files(wildcards.family).values() for path in files
    ]


def dsir_heldout(wildcards):
    if annotate_cfg.dsir_uses_heldout(config, wildcards.family):
        return [f"{RUN}/corpus/heldout/validation.jsonl.zst"]
    return []


# Selection stage (rules/select.smk, rules/metarater.smk).
def selection_upstream(wildcards):
    """Fitted Meta-rater weights or a curriculum's base selection, when the method reads one."""
    return cfg.selection_upstream(config, RUN, wildcards.variant)


def proxy_files(kind):
    """Input function: one `kind` file per proxy among the first N of a search."""
    pattern = {
        "manifest": f"{RUN}/selections/{{proxy}}/manifest.json",
        "perplexity": f"{RUN}/eval/{{proxy}}/perplexity.json",
    }[kind]
    return lambda w: expand(
        pattern, proxy=cfg.proxy_names(config, w.search, int(w.proxies))
    )


# Rater training (rules/raters.smk).
from selectlab.raters import resolve as raters_cfg

RATERS = raters_cfg.configured_raters(config)
RATER_TABLES = raters_cfg.table_names(config)


def rater_labels(wildcards):
    return raters_cfg.labels_input(config, RUN, wildcards.rater)


def rater_tokenizer(wildcards):
    return (
        [f"{RUN}/tokenizer"]
        if raters_cfg.needs_tokenizer(config, wildcards.rater)
        else []
    )


def rater_resource(key):
    return lambda wildcards: raters_cfg.resources(config, wildcards.rater)[key]


def rater_targets():
    """Every configured rater's card and the rater tables."""
    return expand(f"{RUN}/raters/{{rater}}/rater_card.json", rater=RATERS) + expand(
        f"{RUN}/tables/{{name}}.md", name=RATER_TABLES
    )


# Analysis of the annotated corpus (rules/analysis.smk).
from selectlab.analysis import plan as analysis_cfg

ANALYSIS = analysis_cfg.analysis_plan(config)
ANALYSIS_FIGURE_TABLES = ANALYSIS.figure_tables()


def analysis_targets():
    """The analysis figures and tables (the report shows them too)."""
    return expand(f"{RUN}/figures/{{name}}.png", name=ANALYSIS.figures()) + expand(
        f"{RUN}/tables/{{name}}.{{ext}}", name=ANALYSIS.tables(), ext=["csv", "md"]
    )
