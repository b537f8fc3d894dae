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
    check_unique_names,
    metrics_by_name,
    private_datasets_cache,
    run_icl,
    sample_count,
    settings_by_shots,
    task_entry,
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
        cached = cached_runs(world, [tasks[0], next(t for t in tasks if t["group"] == "cloze")])
    finally:
        os.chdir(previous)
    return {"tasks": tasks, "limited": limited, "cache_changed": tree(real_cache) != cache_before,
            "cached": cached, **results}


def cached_runs(world, tasks: list[dict]) -> dict:
    """The same model twice through one setting cache, the second time with one more setting;
    then another model through the same cache."""
    cloze = next(t["name"] for t in tasks if t["group"] == "cloze")
    common = {"include_path": Path("eval/tasks"), "batch_size": 16, "seed": 1,
              "dtype": "float32", "device": "cpu", "limit": None,
              "cache_dir": Path("eval/icl_cache")}
    # The overview's tasks and a protocol asking for one of them again: evaluated once.
    again = [(t["name"], t["shots"]) for t in tasks]
    first = run_icl(world.trained_model, tasks, settings=again, **common)
    second = run_icl(world.trained_model, tasks, settings=[*again, (cloze, 1)], **common)
    other = run_icl(world.random_model, tasks, **common)
    return {"first": first, "second": second, "other": other, "cloze": cloze}


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


def test_settings_are_grouped_by_shots_once_each_and_task_names_must_be_unique():
    settings = [("x", 2), ("y", 0), ("z", 2), ("x", 2), ("x", 5)]
    assert settings_by_shots(settings) == {0: ["y"], 2: ["x", "z"], 5: ["x"]}
    with pytest.raises(ValueError):
        check_unique_names([{"name": "x", "shots": 0}, {"name": "x", "shots": 5}])


def test_each_setting_is_evaluated_once_per_model_and_cached(runs):
    cached = runs["cached"]
    first, second, other = cached["first"], cached["second"], cached["other"]
    assert first["lm_eval"]["cached_settings"] == []
    assert set(first["settings"]) == {f"{n}@{e['shots']}" for n, e in first["tasks"].items()}
    for name, entry in first["tasks"].items():
        setting = first["settings"][f"{name}@{entry['shots']}"]
        assert (setting["acc"], setting["acc_norm"], setting["n"]) == (
            entry["acc"], entry["acc_norm"], entry["n"])
    # The rerun reads every earlier setting from the cache and evaluates only the new one.
    new = f"{cached['cloze']}@1"
    assert set(second["lm_eval"]["cached_settings"]) == set(first["settings"])
    assert new in second["settings"] and second["settings"][new]["shots"] == 1
    assert {k: second["settings"][k] for k in first["settings"]} == first["settings"]
    # Another model's results are never taken from the cache.
    assert other["lm_eval"]["cached_settings"] == []
    assert other["settings"] != {k: second["settings"][k] for k in other["settings"]}
