"""The pretraining stage's plan: each variant's model preset and settings, the model it
continues from, and the size and launch of its job.

Plain dict functions (no torch: the workflow imports this module while it builds the job
graph). A preset's `resources` size the job (selectlab.resources shape: GPUs and CPU cores per
node, memory per node, minutes, nodes); they are never part of the job's parameters, so resizing
a job does not retrain a finished model.
"""

from __future__ import annotations

from selectlab import layout
from selectlab.config import deep_merge
from selectlab.mates.schedule import stage_schedule
from selectlab.resources import job_shape, schema_default
from selectlab.selection.resolve import (
    mates_settings,
    parse_stage_name,
    variant_entry,
)


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


def resolve_pretrain(config: dict, name: str) -> dict:
    """Training settings and model preset for one variant: the defaults, then its family's,
    then its own (each overriding the one before)."""
    preset = preset_name(config, name)
    settings = deep_merge(deep_merge(config["pretrain"], family_pretrain(config, name)),
                          variant_entry(config, name).get("pretrain", {}))
    settings.pop("preset")
    settings.pop("init_from", None)
    # One model seed for every variant (the run's), so two rows differ only in their data; the
    # selection seed is the variant's own (selection.resolve.variant_seed).
    settings.setdefault("seed", int(config["seed"]))
    stage = parse_stage_name(config, name)
    if stage:
        # A MATES stage trains on its share of the run's schedule (selectlab.mates.schedule).
        variant, k = stage
        run = resolve_pretrain(config, variant)["settings"]
        settings |= stage_schedule(run, k, mates_settings(config, variant)["stages"])
    # A preset's job resources size the cluster job, not the model: resizing a job must not
    # change the job's params and so retrain a finished model.
    model = {k: v for k, v in config["models"]["presets"][preset].items() if k != "resources"}
    return {"preset_name": preset, "preset": model, "settings": settings}


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
    preset = config["models"]["presets"][preset_name(config, name)]
    return job_shape(schema_default("config.schema.yaml", "$defs", "job_resources"),
                     preset.get("resources"))
