"""In-context-learning evaluation with lm-evaluation-harness, in one process per model.

The model is loaded once into lm-eval's `HFLM` and `simple_evaluate` is called once per distinct
shot count (lm-eval's `num_fewshot` applies to a whole call), all seeds pinned to `seed`. Local
tasks (`include_path` set) are indexed without lm-eval's ~15k built-in configs, which saves ~5 s,
and their JSON data goes through an HF datasets cache in a temporary directory, so nothing lands
in ~/.cache. Built-in benchmarks (`include_path=None`, full scale) use the normal cache, where
their downloads live.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from selectlab.evaluate.perplexity import canonical_dtype
from selectlab.flops import ForwardTokens, cost_record, inference_flops, module_shape

log = logging.getLogger(__name__)

# Headline metric, in order of preference; exact-match tasks (nq_open) report it under "acc".
HEADLINE_METRICS = ("acc_norm", "acc", "exact_match")
# acc and exact_match stderrs are analytic; bootstrap only serves other metrics, keep it cheap.
BOOTSTRAP_ITERS = 1000


def finite_or_none(value: object) -> float | None:
    """lm-eval writes "N/A" (or NaN) where it has no stderr; JSON gets null instead."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def metrics_by_name(task_result: dict) -> dict[str, tuple[float | None, float | None]]:
    """`{"acc,none": .5, "acc_stderr,none": .1}` -> `{"acc": (.5, .1)}`; the first filter
    lm-eval reports for a metric wins (e.g. nq_open's `remove_whitespace`)."""
    metrics: dict[str, tuple[float | None, float | None]] = {}
    for key, value in task_result.items():
        if "," not in key:
            continue
        metric, filter_name = key.split(",", 1)
        if metric.endswith("_stderr") or metric in metrics:
            continue
        stderr = task_result.get(f"{metric}_stderr,{filter_name}")
        metrics[metric] = (finite_or_none(value), finite_or_none(stderr))
    return metrics


def sample_count(name: str, results: dict) -> int:
    """Documents evaluated for a task, or summed over a group's subtasks (e.g. mmlu)."""
    counts = results.get("n-samples", {})
    if name in counts:
        return int(counts[name]["effective"])
    children = results.get("group_subtasks", {}).get(name, [])
    return sum(sample_count(child, results) for child in children)


def task_entry(task: dict, results: dict) -> dict:
    """One `icl.json` task record from lm-eval's results of the call that ran it."""
    name = task["name"]
    metrics = metrics_by_name(results["results"][name])
    headline = next((m for m in HEADLINE_METRICS if m in metrics), None)
    if headline is None:
        raise ValueError(f"{name}: lm-eval reported none of {HEADLINE_METRICS}: {sorted(metrics)}")
    acc, acc_stderr = metrics.get("acc") or metrics.get("exact_match") or (None, None)
    acc_norm, acc_norm_stderr = metrics.get("acc_norm", (None, None))
    return {
        "group": task.get("group", name),
        "shots": int(task["shots"]),
        "metric": headline,
        "acc": acc,
        "acc_stderr": acc_stderr,
        "acc_norm": acc_norm,
        "acc_norm_stderr": acc_norm_stderr,
        "n": sample_count(name, results),
    }


def tasks_by_shots(tasks: list[dict]) -> dict[int, list[dict]]:
    names = [t["name"] for t in tasks]
    if len(names) != len(set(names)):
        raise ValueError("a task appears twice in the ICL task list")
    by_shots: dict[int, list[dict]] = {}
    for task in tasks:
        by_shots.setdefault(int(task["shots"]), []).append(task)
    return dict(sorted(by_shots.items()))


@contextlib.contextmanager
def private_datasets_cache() -> Iterator[Path]:
    """Point HF datasets' cache at a temporary directory for the duration of the block.

    datasets reads these module attributes at call time, so patching them works even when the
    library was imported before (the environment variables would not).
    """
    import datasets.config as ds_config

    names = ("HF_DATASETS_CACHE", "DOWNLOADED_DATASETS_PATH", "EXTRACTED_DATASETS_PATH")
    saved = {name: getattr(ds_config, name) for name in names}
    with tempfile.TemporaryDirectory(prefix="selectlab-hf-datasets-") as tmp:
        root = Path(tmp)
        ds_config.HF_DATASETS_CACHE = root
        ds_config.DOWNLOADED_DATASETS_PATH = root / "downloads"
        ds_config.EXTRACTED_DATASETS_PATH = root / "downloads" / "extracted"
        try:
            yield root
        finally:
            for name, value in saved.items():
                setattr(ds_config, name, value)


def run_icl(
    model_dir: str | Path,
    tasks: list[dict],
    *,
    include_path: Path | None,
    batch_size: int,
    seed: int,
    dtype: str,
    device: str,
    limit: int | None,
    max_length: int | None = None,
) -> dict:
    """Evaluate one model on `tasks` (`[{"name", "group", "shots"}]`); returns `icl.json`.

    `max_length` defaults to the model's `max_position_embeddings`; longer prompts are cut from
    the left by lm-eval.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if include_path is not None:
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    dtype = canonical_dtype(dtype)
    model = HFLM(pretrained=str(model_dir), batch_size=batch_size, device=device, dtype=dtype,
                 softmax_dtype="float32", max_length=max_length)
    started, fed = time.perf_counter(), ForwardTokens(model)
    if include_path is None:
        manager = TaskManager()
        cache = contextlib.nullcontext()
    else:
        manager = TaskManager(include_path=str(include_path), include_defaults=False)
        cache = private_datasets_cache()

    entries: dict[str, dict] = {}
    with cache:
        for shots, group in tasks_by_shots(tasks).items():
            log.info("lm-eval: %d tasks at %d shots", len(group), shots)
            results = lm_eval.simple_evaluate(
                model=model,
                tasks=[t["name"] for t in group],
                num_fewshot=shots,
                batch_size=batch_size,
                device=device,
                limit=limit,
                task_manager=manager,
                log_samples=False,
                bootstrap_iters=BOOTSTRAP_ITERS,
                random_seed=seed,
                numpy_random_seed=seed,
                torch_random_seed=seed,
                fewshot_random_seed=seed,
            )
            for task in group:
                entries[task["name"]] = task_entry(task, results)
    return {
        "tasks": dict(sorted(entries.items())),
        "lm_eval": {
            "version": lm_eval.__version__,
            "seeds": dict.fromkeys(("random", "numpy", "torch", "fewshot"), seed),
            "batch_size": batch_size,
            "dtype": dtype,
            "limit": limit,
        },
        "cost": icl_cost(model, fed.tokens, time.perf_counter() - started, device),
    }


def icl_cost(model, tokens: int, seconds: float, device: str) -> dict:
    """Inference FLOPs over every token lm-eval fed the model (selectlab.flops)."""
    shape = module_shape(model.model, model.max_length)
    return cost_record("inference", inference_flops(shape, tokens), seconds=seconds,
                       gpus=int(str(device).startswith("cuda")), device=str(device),
                       shape=shape, tokens=tokens)
