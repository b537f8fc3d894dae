"""The pretraining stage's plan: each variant's model preset and settings, the model it
continues from, and the size, launch and GPU memory of its job.

Plain dict functions (no torch: the workflow imports this module while it builds the job
graph). What a variant learns is its job's params (`resolve_pretrain`): a change retrains it.
How the job runs is not: a preset's `resources` size the job (selectlab.resources shape: GPUs
and CPU cores per node, memory per node, minutes, nodes), and the launch settings (micro-batch,
activation checkpointing, FSDP) reach `selectlab pretrain --launch` as resources, which
Snakemake does not compare when deciding what to rerun; the checkpoint hash leaves them out
too (train/checkpoints.py), so resizing a preset resumes its models instead of retraining them.

At plan time every pretraining job's peak GPU memory (train/memory.py) is checked against the
GPUs of each partition the slurm plugin could send it to (train/partitions.py).
"""

from __future__ import annotations

from selectlab import layout
from selectlab.config import deep_merge
from selectlab.mates.schedule import stage_schedule
from selectlab.papers.protocols import curve_fractions, paper_tables
from selectlab.replicates import model_seed, replicate_names
from selectlab.resources import job_shape, schema_default
from selectlab.selection.mates_stages import mates_settings, parse_stage_name
from selectlab.selection.resolve import variant_entry
from selectlab.train.memory import Estimate, Launch, Shape, estimate
from selectlab.train.model import ModelPreset
from selectlab.train.partitions import check_fits

# How a pretraining job runs, not what it learns: kept out of the job's params.
LAUNCH_SETTINGS = ("micro_batch_sequences", "activation_checkpointing")
LAUNCH_PRESET_KEYS = ("resources", "fsdp")
# Meta-rater Appendix D: the LLaMA tokenizer, 32,000 entries. Used for pretrained tokenizers,
# whose size is not in the config.
PRETRAINED_VOCAB_SIZE = 32000


def family_pretrain(config: dict, name: str) -> dict:
    """The training settings `pretrain_by_family` gives the variant's family ({} if none):
    what one paper did for all its rows (DataMan's checkpoint merge, Meta-rater's batch and
    learning rate), between the run's defaults and the variant's own `pretrain`."""
    family = variant_entry(config, name)["family"]
    return (config.get("pretrain_by_family") or {}).get(family, {})


def preset_name(config: dict, name: str) -> str:
    """The model preset a variant trains (its own `pretrain.preset`, else its family's, else the
    default).

    Checked without merging the whole pretraining section: planning asks for it once per
    resource of every pretraining and evaluation job."""
    default = family_pretrain(config, name).get("preset", config["pretrain"]["preset"])
    preset = variant_entry(config, name).get("pretrain", {}).get("preset", default)
    presets = config["models"]["presets"]
    if preset not in presets:
        raise ValueError(f"variant {name!r}: unknown model preset {preset!r}; "
                         f"known: {sorted(presets)}")
    return preset


def snapshot_fractions(config: dict) -> dict[str, list[float]]:
    """Model (variant or replicate) -> the points of its training, as fractions of its tokens,
    at which it saves a snapshot: those of the curve figures it is a row of (Meta-rater
    Figure 1). Resolved for all models at once: the protocols are read once, not once per job."""
    fractions, tables = {}, paper_tables(config)
    for variant in config["variants"]:
        points = curve_fractions(config, variant, tables)
        if points:
            fractions |= dict.fromkeys(replicate_names(config, variant), points)
    return fractions


def preset(config: dict, name: str) -> dict:
    return config["models"]["presets"][preset_name(config, name)]


def merged_pretrain(config: dict, name: str) -> dict:
    """The `pretrain` section with the variant's family's overrides, then its own."""
    return deep_merge(deep_merge(config["pretrain"], family_pretrain(config, name)),
                      variant_entry(config, name).get("pretrain", {}))


def resolve_pretrain(config: dict, name: str, snapshots: list[float] | None = None) -> dict:
    """Training settings and model preset for one variant: the defaults, then its family's,
    then its own (each overriding the one before), with the points at which to save snapshots
    (`snapshot_fractions`), if any."""
    settings = merged_pretrain(config, name)
    for key in ("preset", "init_from", *LAUNCH_SETTINGS):
        settings.pop(key, None)
    # One model seed for every variant (the run's), so two rows differ only in their data; the
    # selection seed is the variant's own (selection.resolve.variant_seed). Replicate i of every
    # variant trains with the run's seed shifted for i (selectlab.replicates.model_seed).
    settings.setdefault("seed", model_seed(config, name))
    if snapshots:
        settings["snapshot_fractions"] = list(snapshots)
    stage = parse_stage_name(config, name)
    if stage:
        # A MATES stage trains on its share of the run's schedule (selectlab.mates.schedule).
        variant, k = stage
        run = resolve_pretrain(config, variant)["settings"]
        settings |= stage_schedule(run, k, mates_settings(config, variant)["stages"])
    # A preset's job resources and launch settings decide how the job runs, not the model:
    # resizing a job must not change the job's params and so retrain a finished model.
    model = {k: v for k, v in preset(config, name).items() if k not in LAUNCH_PRESET_KEYS}
    return {"preset_name": preset_name(config, name), "preset": model, "settings": settings}


def launch_settings(config: dict, name: str) -> dict:
    """`selectlab pretrain --launch`: micro-batch, activation checkpointing, FSDP."""
    settings = merged_pretrain(config, name)
    return {"micro_batch_sequences": int(settings["micro_batch_sequences"]),
            "activation_checkpointing": bool(settings.get("activation_checkpointing", False)),
            "fsdp": bool(preset(config, name).get("fsdp", False))}


def seq_len(config: dict, name: str) -> int:
    """The sequence length a variant trains on (packing and evaluation use it too): its own,
    else its family's, else the default."""
    default = family_pretrain(config, name).get("seq_len", config["pretrain"]["seq_len"])
    return int(variant_entry(config, name).get("pretrain", {}).get("seq_len", default))


def init_variant(config: dict, name: str) -> str | None:
    """The variant whose final model this variant continues from, if any."""
    return variant_entry(config, name).get("pretrain", {}).get("init_from")


def init_inputs(config: dict, root: str, name: str) -> list[str]:
    """The final model this variant continues pretraining from ([] when it starts fresh)."""
    parent = init_variant(config, name)
    return [layout.final_model(root, parent)] if parent else []


def pretrain_shape(config: dict, name: str) -> dict:
    """The pretraining job of a variant: its preset's `resources` over the schema's default."""
    return job_shape(schema_default("config.schema.yaml", "$defs", "job_resources"),
                     preset(config, name).get("resources"))


def world_size(config: dict, name: str) -> int:
    shape = pretrain_shape(config, name)
    return max(shape["gpu"], 1) * shape["nodes"]


def vocab_size(config: dict) -> int:
    tokenizer = config["tokenizer"]
    return int(tokenizer["vocab_size"]) if tokenizer["kind"] == "train_bpe" else (
        PRETRAINED_VOCAB_SIZE)


def model_shape(config: dict, name: str) -> Shape:
    """The architecture of a variant's model, as the memory estimate counts it."""
    model = ModelPreset.from_dict(preset(config, name))
    return Shape(hidden_size=model.hidden_size, num_layers=model.num_layers,
                 num_heads=model.num_heads, num_kv_heads=model.num_kv_heads or model.num_heads,
                 intermediate_size=model.mlp_width(), vocab_size=vocab_size(config),
                 tie_embeddings=model.tie_embeddings)


def launch_plan(config: dict, name: str) -> Launch:
    """How the variant's job splits its global batch over micro-batches and GPUs."""
    settings, launch = merged_pretrain(config, name), launch_settings(config, name)
    world, micro = world_size(config, name), launch["micro_batch_sequences"]
    batch = int(settings["global_batch_sequences"])
    if batch % (micro * world):
        raise ValueError(f"variant {name!r}: the global batch of {batch} sequences is not a "
                         f"multiple of micro_batch_sequences {micro} x {world} GPUs")
    return Launch(seq_len=int(settings["seq_len"]), micro_batch=micro, world_size=world,
                  accumulation_steps=batch // (micro * world), fsdp=launch["fsdp"],
                  activation_checkpointing=launch["activation_checkpointing"],
                  bf16=settings.get("dtype", "bf16") == "bf16")


def memory_estimate(config: dict, name: str) -> Estimate:
    return estimate(model_shape(config, name), launch_plan(config, name))


def checked_gpu_memory_mb(config: dict, name: str, partition_file: str | None) -> int | None:
    """A pretraining job's estimated peak GPU memory per process (MB), after checking it
    against every partition of `partition_file` that could run it (no check without one);
    None for a job without GPUs."""
    shape = pretrain_shape(config, name)
    if shape["gpu"] == 0:
        return None
    peak = memory_estimate(config, name)
    if partition_file:
        check_fits(f"variant {name!r} (preset {preset_name(config, name)!r})", peak,
                   launch_plan(config, name), shape, str(partition_file))
    return int(peak.peak_bytes // 2**20) + 1
