"""lm-eval in-process ICL evaluation on the offline tasks.

What is reliably true here, and asserted: the model trained on the Wikipedia-like source picks
the true continuation and the true cloze word of that source almost always (acc_norm >= 0.8; it
gets 1.0 on the fixture), far above both chance (0.25) and the random-init model. The random
model itself is only checked to be a valid accuracy, since with 20 items it can land well away
from 0.25 by luck.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest_eval import eval_world

from selectlab.evaluate.icl import (
    metrics_by_name,
    private_datasets_cache,
    run_icl,
    sample_count,
    task_entry,
    tasks_by_shots,
)
from selectlab.evaluate.icl_tasks import build_local_tasks

PARAMS = {"items_per_source": 20, "fewshot_per_source": 3, "shots": {"cloze": 2},
          "seed": 3, "context_words": 15, "continuation_words": 5, "cloze_context_words": 15}
ENTRY_KEYS = {"group", "shots", "metric", "acc", "acc_stderr", "acc_norm", "acc_norm_stderr", "n"}


def tree(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*")} if root.exists() else set()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Tasks built and evaluated from a working directory with relative paths, as the workflow
    runs them; the shared HF datasets cache must not change."""
    import datasets.config

    world = eval_world(tmp_path_factory)
    workdir = tmp_path_factory.mktemp("icl_run")
    real_cache = Path(datasets.config.HF_DATASETS_CACHE)
    cache_before = tree(real_cache)
    previous = os.getcwd()
    os.chdir(workdir)
    try:
        tasks = build_local_tasks(world.heldout["test"], Path("eval/tasks"), PARAMS)
        results = {
            name: run_icl(model, tasks, include_path=Path("eval/tasks"), batch_size=16, seed=1,
                          dtype="float32", device="cpu", limit=None)
            for name, model in (("random", world.random_model), ("trained", world.trained_model))
        }
        limited = run_icl(world.random_model, tasks[:1], include_path=Path("eval/tasks"),
                          batch_size=16, seed=1, dtype="float32", device="cpu", limit=5)
    finally:
        os.chdir(previous)
    return {"tasks": tasks, "limited": limited, "cache_changed": tree(real_cache) != cache_before,
            **results}


def test_one_entry_per_task_with_valid_numbers(runs):
    tasks = {t["name"]: t for t in runs["tasks"]}
    for model in ("random", "trained"):
        result = runs[model]
        json.dumps(result, allow_nan=False)  # NaN-free, serialisable as icl.json
        assert set(result["tasks"]) == set(tasks)
        for name, entry in result["tasks"].items():
            assert set(entry) == ENTRY_KEYS
            assert entry["group"] == tasks[name]["group"]
            assert entry["shots"] == tasks[name]["shots"]
            assert entry["metric"] == "acc_norm" and entry["n"] == tasks[name]["items"]
            for metric in ("acc", "acc_norm"):
                assert 0.0 <= entry[metric] <= 1.0
                assert entry[f"{metric}_stderr"] is not None and entry[f"{metric}_stderr"] >= 0


def test_provenance_of_the_run(runs):
    meta = runs["trained"]["lm_eval"]
    assert meta["seeds"] == {"random": 1, "numpy": 1, "torch": 1, "fewshot": 1}
    assert meta["batch_size"] == 16 and meta["dtype"] == "float32" and meta["limit"] is None
    assert meta["version"].startswith("0.4")


def test_trained_model_beats_chance_and_random_model_on_its_source(runs):
    for task in ("sl_continuation_wikipedia", "sl_cloze_wikipedia"):
        trained = runs["trained"]["tasks"][task]["acc_norm"]
        assert trained >= 0.8
        assert trained > runs["random"]["tasks"][task]["acc_norm"]


def test_limit_caps_documents(runs):
    (entry,) = runs["limited"]["tasks"].values()
    assert entry["n"] == 5 and runs["limited"]["lm_eval"]["limit"] == 5


def test_local_tasks_leave_the_shared_datasets_cache_alone(runs):
    assert not runs["cache_changed"]


def test_private_cache_is_temporary_and_restored():
    import datasets.config

    before = datasets.config.HF_DATASETS_CACHE
    with private_datasets_cache() as root:
        assert datasets.config.HF_DATASETS_CACHE == root and root.is_dir()
    assert datasets.config.HF_DATASETS_CACHE == before and not root.exists()


def test_metrics_parsing_handles_missing_stderr_and_exact_match():
    nq = {"alias": "nq_open", "exact_match,remove_whitespace": 0.125,
          "exact_match_stderr,remove_whitespace": "N/A"}
    assert metrics_by_name(nq) == {"exact_match": (0.125, None)}
    results = {"results": {"nq_open": nq}, "n-samples": {"nq_open": {"effective": 8}}}
    entry = task_entry({"name": "nq_open", "group": "world knowledge", "shots": 10}, results)
    assert entry == {"group": "world knowledge", "shots": 10, "metric": "exact_match",
                     "acc": 0.125, "acc_stderr": None, "acc_norm": None,
                     "acc_norm_stderr": None, "n": 8}


def test_group_sample_count_sums_subtasks():
    results = {"n-samples": {"a": {"effective": 3}, "b": {"effective": 4}},
               "group_subtasks": {"mmlu": ["stem"], "stem": ["a", "b"]}}
    assert sample_count("mmlu", results) == 7


def test_tasks_are_grouped_by_shots_and_names_must_be_unique():
    tasks = [{"name": "x", "shots": 2}, {"name": "y", "shots": 0}, {"name": "z", "shots": 2}]
    assert {k: [t["name"] for t in v] for k, v in tasks_by_shots(tasks).items()} == {
        0: ["y"], 2: ["x", "z"]}
    with pytest.raises(ValueError):
        tasks_by_shots([{"name": "x", "shots": 0}, {"name": "x", "shots": 5}])
