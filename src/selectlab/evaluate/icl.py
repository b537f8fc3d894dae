"""In-context-learning evaluation with lm-evaluation-harness, in one process per model.

The model is loaded once into lm-eval's `HFLM` and `simple_evaluate` is called once per distinct
shot count (lm-eval's `num_fewshot` applies to a whole call), all seeds pinned to `seed`. Each
distinct (task, shots) setting is evaluated once, and with a cache directory only when this very
model has no result for it yet (`icl_cache`). Local
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

from selectlab.evaluate.icl_cache import (
    SettingCache,
    model_fingerprint,
    task_fingerprint,
    task_results,
)
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


def setting_entry(name: str, shots: int, results: dict) -> dict:
    """One `icl.json` settings record: every metric lm-eval reported for a (task, shots)."""
    metrics = metrics_by_name(results["results"][name])
    entry: dict = {"task": name, "shots": int(shots), "n": sample_count(name, results)}
    for metric in HEADLINE_METRICS:
        value, stderr = metrics.get(metric, (None, None))
        entry[metric], entry[f"{metric}_stderr"] = value, stderr
    return entry


def check_unique_names(tasks: list[dict]) -> None:
    names = [t["name"] for t in tasks]
    if len(names) != len(set(names)):
        raise ValueError("a task appears twice in the ICL task list")


def settings_by_shots(settings: list[tuple[str, int]]) -> dict[int, list[str]]:
    by_shots: dict[int, list[str]] = {}
    for task, shots in dict.fromkeys(settings):
        by_shots.setdefault(int(shots), []).append(task)
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
    settings: list[tuple[str, int]] = (),
    cache_dir: Path | None = None,
) -> dict:
    """Evaluate one model; returns `icl.json`.

    `tasks` (`[{"name", "group", "shots"}]`) are the overview table's tasks, reported under
    `tasks` by name; `settings` are further (task, shots) pairs the papers' protocols need.
    Every distinct (task, shots) is evaluated once (reported under `settings` as
    "task@shots"), and with `cache_dir` only when no cached result of this very model exists.
    `max_length` defaults to the model's `max_position_embeddings`; longer prompts are cut from
    the left by lm-eval.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if include_path is not None:
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    import lm_eval

    check_unique_names(tasks)
    wanted = [(t["name"], int(t["shots"])) for t in tasks] + [(n, int(s)) for n, s in settings]
    dtype = canonical_dtype(dtype)
    cache = SettingCache(cache_dir)
    fingerprint = model_fingerprint(model_dir) if cache_dir is not None else None

    def identity(task: str, shots: int) -> dict:
        return {"model": fingerprint, "shots": shots, "limit": limit, "seed": seed,
                "dtype": dtype, "max_length": max_length,
                "task": task_fingerprint(task, include_path, lm_eval.__version__)}

    found: dict[tuple[str, int], dict] = {}
    if cache_dir is not None:
        for task, shots in dict.fromkeys(wanted):
            cached = cache.get(task, shots, identity(task, shots))
            if cached is not None:
                found[(task, shots)] = cached
    missing = [setting for setting in dict.fromkeys(wanted) if setting not in found]
    # The job's cost is what it computed; settings reused from the cache cost it nothing here.
    cost = cost_record("inference", 0.0, seconds=0.0, gpus=0, device=str(device))
    if missing:
        computed, cost = evaluate_settings(model_dir, missing, include_path=include_path,
                                           batch_size=batch_size, seed=seed, dtype=dtype,
                                           device=device, limit=limit, max_length=max_length)
        for (task, shots), results in computed.items():
            cache.put(task, shots, identity(task, shots), results)
        found.update(computed)
    return {
        "tasks": dict(sorted(
            (t["name"], task_entry(t, found[(t["name"], int(t["shots"]))])) for t in tasks)),
        "settings": {f"{task}@{shots}": setting_entry(task, shots, found[(task, shots)])
                     for task, shots in sorted(dict.fromkeys(wanted))},
        "lm_eval": {
            "version": lm_eval.__version__,
            "seeds": dict.fromkeys(("random", "numpy", "torch", "fewshot"), seed),
            "batch_size": batch_size,
            "dtype": dtype,
            "limit": limit,
            "cached_settings": sorted(f"{t}@{s}" for t, s in found if (t, s) not in missing),
        },
        "cost": cost | {"evaluated_settings": len(missing)},
    }


def evaluate_settings(
    model_dir: str | Path,
    settings: list[tuple[str, int]],
    *,
    include_path: Path | None,
    batch_size: int,
    seed: int,
    dtype: str,
    device: str,
    limit: int | None,
    max_length: int | None,
) -> tuple[dict[tuple[str, int], dict], dict]:
    """lm-eval's results per (task, shots), and the cost of computing them: the model is loaded
    once, `simple_evaluate` runs once per distinct shot count (its `num_fewshot` applies to a
    whole call)."""
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    model = HFLM(pretrained=str(model_dir), batch_size=batch_size, device=device, dtype=dtype,
                 softmax_dtype="float32", max_length=max_length)
    started, fed = time.perf_counter(), ForwardTokens(model)
    if include_path is None:
        manager = TaskManager()
        cache = contextlib.nullcontext()
    else:
        manager = TaskManager(include_path=str(include_path), include_defaults=False)
        cache = private_datasets_cache()
    out: dict[tuple[str, int], dict] = {}
    with cache:
        for shots, names in settings_by_shots(settings).items():
            log.info("lm-eval: %d tasks at %d shots", len(names), shots)
            results = lm_eval.simple_evaluate(
                model=model,
                tasks=names,
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
            for name in names:
                out[(name, shots)] = task_results(name, results)
    return out, icl_cost(model, fed.tokens, time.perf_counter() - started, device)


def icl_cost(model, tokens: int, seconds: float, device: str) -> dict:
    """Inference FLOPs over every token lm-eval fed the model (selectlab.flops)."""
    shape = module_shape(model.model, model.max_length)
    return cost_record("inference", inference_flops(shape, tokens), seconds=seconds,
                       gpus=int(str(device).startswith("cuda")), device=str(device),
                       shape=shape, tokens=tokens)
