"""One resource shape for every job, and what Snakemake and the slurm plugin make of it.

A job's *shape* is `{gpu, cpus, mem_mb, runtime, nodes}` (and optionally `gpu_model`):
GPUs per node, CPU cores per node, memory per node in MB, wall-clock minutes, nodes. Each
stage's resolver builds the shapes of its jobs from layers, later ones winning:

    SHAPE_DEFAULT  <  the rule's default  <  the config's own entry for it

The defaults are written once, in the schema (`default:` of config/schema/resources.schema.yaml
and of each stage's `resources` definition); `schema_default` reads them from there, so the
numbers live in one place whether or not a config has been validated.

`as_snakemake` turns a shape into a rule's `threads` and `resources` as the slurm executor
plugin reads them (docs/cluster.md): `gpu` + `gpu_model` on one node (sbatch --gpus), GPUs per
node through `gres` on several nodes, with the plugin's `mpi` mode so the rule's command runs
once on the batch node and starts one task per node itself. Resources that do not apply are
None, which Snakemake drops.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

from selectlab.schema import read_schema

SHAPE_KEYS = ("gpu", "cpus", "mem_mb", "runtime", "nodes")
# What Snakemake sees: every key a shape can turn into (None where it does not apply).
SINGLE_NODE_KEYS = ("mem_mb", "runtime", "nodes", "gpu", "gpu_model", "cpus_per_gpu")
SNAKEMAKE_KEYS = SINGLE_NODE_KEYS + ("gres", "tasks", "tasks_per_gpu", "mpi")
SCHEMA_DIR = Path(__file__).resolve().parents[2] / "config" / "schema"
RESOURCES_SCHEMA = "resources.schema.yaml"


@functools.cache
def _schema(name: str) -> dict:
    """A schema file, read once per process (the config's validation shares the copy)."""
    path = SCHEMA_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: job resources take their defaults from "
                                "the repository's config/schema/ (run from a checkout)")
    return read_schema(path)


def schema_default(schema: str, *keys: str):
    """The `default:` of the schema node at `keys` (e.g. "$defs", "shape") of a schema file
    (a copy: callers may change it)."""
    node = _schema(schema)
    for key in keys:
        node = node[key]
    return copy.deepcopy(node["default"])


def shape_default() -> dict:
    """What a job asks for where nothing else says: one CPU core, no GPU, one node."""
    return schema_default(RESOURCES_SCHEMA, "$defs", "shape")


def job_shape(*layers: dict | None) -> dict:
    """The shape default overlaid with `layers` in order (None entries and values skipped)."""
    shape = shape_default()
    for layer in layers:
        shape.update({k: v for k, v in (layer or {}).items() if v is not None})
    return shape


def rule_shape(config: dict, rule: str, *derived: dict) -> dict:
    """A job of `rule`: the schema's default for the rule, then what the stage derives for
    this job (`derived`), then the config's `resources.<rule>`."""
    rule_default = schema_default(RESOURCES_SCHEMA, "properties", rule)
    return job_shape(rule_default, *derived, (config.get("resources") or {}).get(rule))


def for_shards(shape: dict, shards: int) -> dict:
    """A job of `shards` shards (corpus or annotate .shards_per_job): one shard's memory, the
    time of all of them."""
    return shape | {"runtime": shape["runtime"] * shards}


def cpus_per_gpu(shape: dict) -> int | None:
    """A GPU job's CPU cores per GPU: its cores per node split over the node's GPUs."""
    return max(1, shape["cpus"] // shape["gpu"]) if shape["gpu"] else None


def snakemake_keys(multi_node: bool) -> tuple[str, ...]:
    """The resources a rule declares. Only pretraining starts one task per node; the other
    rules leave out the multi-node keys, because Snakemake evaluates every declared resource
    of every job while planning, None or not (a fifth of a paper-scale plan's time)."""
    return SNAKEMAKE_KEYS if multi_node else SINGLE_NODE_KEYS


def as_snakemake(shape: dict, multi_node: bool = False) -> dict:
    """The job's `resources` in Snakemake's and the slurm plugin's terms (threads: `cpus`).
    `nodes > 1` is refused unless the rule runs one task per node (`multi_node`: pretraining),
    since any other command would run on the first node only."""
    gpus, nodes, model = shape["gpu"], shape["nodes"], shape.get("gpu_model")
    if nodes > 1 and not multi_node:
        raise ValueError(f"nodes: {nodes} is for pretraining only (one task per node); "
                         "this job runs one command on one node: set nodes: 1")
    resources = dict.fromkeys(SNAKEMAKE_KEYS)
    resources.update(mem_mb=shape["mem_mb"], runtime=shape["runtime"], nodes=nodes,
                     cpus_per_gpu=cpus_per_gpu(shape))
    if nodes > 1:
        # --gres counts GPUs per node (--gpus would count for the whole job and could split
        # unevenly); with `mpi` the plugin runs the command in the batch script instead of
        # `srun -n1`, and `tasks_per_gpu: 0` stops it deriving --ntasks-per-gpu from `tasks`.
        gres = ":".join(["gpu", *([model] if model else []), str(gpus)])
        resources.update(gpu=0, gres=gres, tasks=nodes, tasks_per_gpu=0, mpi="srun")
    else:
        resources.update(gpu=gpus, gpu_model=model if gpus else None)
    return resources


def present(resources: dict) -> dict:
    """Only the resources that apply (a rule's static `resources:` cannot hold None)."""
    return {k: v for k, v in resources.items() if v is not None}
