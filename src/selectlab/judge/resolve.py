"""Resolving the validated `judge:` config section into what one judge job needs.

Plain dict functions, used by the workflow's rules (as JSON `--params`, so a settings change
reruns exactly the affected jobs) and by hand alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from selectlab import layout
from selectlab.resources import job_shape, schema_default

PROTOCOL_NAMES = ("qurating", "dataman", "prrc", "fineweb_edu", "wanjuan")
LOCAL_MODEL_KINDS = ("transformers", "vllm")
DEFAULT_MAX_FAILURE_RATE = 0.05
SIMULATED_NOTE = "Ratings derived from the SIMULATED judge (offline default), not an LLM."
THROUGHPUT_KEYS = ("batch_size",)


def judge_seed(config: dict) -> int:
    return int(config["judge"].get("seed", config["seed"]))


def candidate_shards(shards: Sequence[str], max_shards: int | None) -> list[str]:
    """The shards judge samples are drawn from: all, or `max_shards` spread evenly over them."""
    shards = list(shards)
    if not max_shards or max_shards >= len(shards):
        return shards
    step = len(shards) / max_shards
    return [shards[int(i * step)] for i in range(max_shards)]


def configured_protocols(config: dict) -> list[str]:
    """The protocols this config judges: the three papers' always, the classifier-style ones
    (`fineweb_edu`, `wanjuan`) only where the config asks for them."""
    return [name for name in PROTOCOL_NAMES if name in config["judge"]["protocols"]]


def resolve_sample(config: dict, protocol: str) -> dict:
    """What `selectlab judge sample` needs for one protocol."""
    settings = config["judge"]["protocols"][protocol]
    keys = ("documents", "pairs", "snippet_tokens") if protocol == "qurating" else (
        "documents", "max_text_tokens")
    return {"protocol": protocol, "seed": judge_seed(config),
            "max_doc_chars": config["corpus"]["reader"]["max_doc_chars"],
            "settings": {key: settings[key] for key in keys}}


def resolve_run(config: dict, protocol: str) -> dict:
    """What `selectlab judge run` needs for one protocol (sampling-only keys left out)."""
    judge = config["judge"]
    sampling = {"documents", "pairs", "snippet_tokens", "max_text_tokens"}
    settings = {k: v for k, v in judge["protocols"][protocol].items() if k not in sampling}
    backend = {k: v for k, v in judge["backend"].items() if k not in THROUGHPUT_KEYS}
    resolved = {"protocol": protocol, "seed": judge_seed(config), "backend": backend,
                "settings": settings,
                "max_failure_rate": judge.get("max_failure_rate", DEFAULT_MAX_FAILURE_RATE)}
    if is_simulated(config):
        resolved["simulated"] = judge["simulated"]
    return resolved


def resolve_throughput(config: dict) -> dict:
    """The backend's batch size (`selectlab judge run --throughput`): how many queries go out
    together changes speed, not answers (the cache keys leave it out too), so it is kept out
    of the job's params and changing it reruns nothing."""
    backend = config["judge"]["backend"]
    return {key: backend[key] for key in THROUGHPUT_KEYS if key in backend}


def is_simulated(config: dict) -> bool:
    return config["judge"]["backend"]["kind"] == "simulated"


def job_shape_of_judge(config: dict) -> dict:
    """The judge job's size: `judge.resources` over the schema's default; only local-model
    backends (transformers, vLLM: tensor parallel over `gpu`) ask for GPUs."""
    judge = config["judge"]
    shape = job_shape(schema_default("judge.schema.yaml", "$defs", "resources"),
                      judge.get("resources"))
    if judge["backend"]["kind"] not in LOCAL_MODEL_KINDS:
        shape["gpu"] = 0
    return shape


def ground_truth_inputs(config: dict, root: str) -> list[str]:
    """The corpus's recorded damage: read by the simulated judge only."""
    return [layout.ground_truth(root)] if is_simulated(config) else []


def notes(config: dict) -> list[str]:
    """Lines every table and figure built on these judgments must carry."""
    return [SIMULATED_NOTE] if is_simulated(config) else []
