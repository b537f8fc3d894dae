"""`selectlab evaluate`: offline ICL tasks, per-source perplexity, lm-eval in-context learning."""

from __future__ import annotations

import logging
from pathlib import Path

from selectlab.commands import add_action, json_arg


def default_device() -> str:
    import torch

    from selectlab.devices import visible_devices

    logging.getLogger(__name__).info(visible_devices())
    return "cuda" if torch.cuda.is_available() else "cpu"


def tasks(args) -> dict:
    from selectlab.evaluate.icl_tasks import build_local_tasks

    built = build_local_tasks(Path(args.heldout), Path(args.out_dir), args.params)
    return {"tasks": [task["name"] for task in built]}


def perplexity(args) -> dict:
    import time

    from transformers import AutoConfig

    from selectlab.train.preemption import PREEMPTED_EXIT_CODE, Preempted, StopRequest

    stop = StopRequest().install()  # the cluster's warning before the time limit
    from selectlab.evaluate.perplexity import per_source_perplexity
    from selectlab.flops import config_shape, cost_record, inference_flops
    from selectlab.shards import write_json

    heldout = {Path(path).name.split(".")[0]: Path(path) for path in args.heldout}
    p = args.params
    progress = Path(args.progress) if args.progress else None
    device, started = default_device(), time.perf_counter()
    try:
        result = per_source_perplexity(
            args.model, heldout, seq_len=p["seq_len"], batch_size=p["batch_size"],
            max_tokens_per_source=p.get("max_tokens_per_source"), device=device,
            dtype=p.get("dtype", "float32"), progress_path=progress, stop=stop)
    except Preempted as stopped:
        logging.getLogger(__name__).warning("%s", stopped)
        raise SystemExit(PREEMPTED_EXIT_CODE) from None
    splits = list(result)
    # Every scored token was read once in a window of seq_len (selectlab.flops). The time is
    # this attempt's: a job resumed after pre-emption leaves out its earlier attempts'.
    tokens = sum(result[split]["all"]["tokens"] for split in splits)
    shape = config_shape(AutoConfig.from_pretrained(args.model), p["seq_len"])
    result["cost"] = cost_record("inference", inference_flops(shape, tokens),
                                 seconds=time.perf_counter() - started,
                                 gpus=int(device.startswith("cuda")), device=device,
                                 shape=shape, tokens=tokens)
    write_json(args.out, result)
    if progress is not None:
        progress.unlink(missing_ok=True)
    return {split: result[split]["all"] for split in splits}


def fetch_data(args) -> dict:
    from selectlab.evaluate.fetch import fetch_eval_data
    from selectlab.shards import write_json

    record = fetch_eval_data(args.params["tasks"], args.cache_dir)
    write_json(args.out, record)
    return record


def icl(args) -> dict:
    import os

    if args.data_cache:
        from selectlab.evaluate.fetch import offline_environment

        # Before lm-eval and datasets are imported: they read these once.
        os.environ.update(offline_environment(args.data_cache))
    from selectlab.evaluate.icl import run_icl
    from selectlab.evaluate.icl_tasks import load_task_list
    from selectlab.shards import write_json

    p = args.params
    if p["tasks"] == "local":
        if not args.tasks_dir:
            raise ValueError("local ICL tasks need --tasks-dir")
        task_list, include = load_task_list(Path(args.tasks_dir)), Path(args.tasks_dir)
        built = {task["name"] for task in task_list}
        missing = sorted({task for task, _ in p.get("settings", [])} - built)
        if missing:
            raise ValueError(f"stand-in tasks {missing} were not built from the held-out text "
                             f"(too few usable documents: see {args.tasks_dir}/tasks.json)")
    else:
        task_list, include = p["tasks"], None
    if p.get("settings_only"):
        task_list = []  # a training snapshot: only the papers' settings, no overview table
    result = run_icl(args.model, task_list, include_path=include, batch_size=p["batch_size"],
                     seed=p["seed"], dtype=p.get("dtype", "float32"), device=default_device(),
                     limit=p.get("limit"),
                     settings=[(task, int(shots)) for task, shots in p.get("settings", [])],
                     cache_dir=Path(args.cache_dir) if args.cache_dir else None)
    write_json(args.out, result)
    headline = {name: task["acc_norm"] if task["metric"] == "acc_norm" else task["acc"]
                for name, task in result["tasks"].items()}
    return headline


def register(stages) -> None:
    parser = stages.add_parser("evaluate", help="perplexity and in-context learning")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "tasks", tasks, "build offline lm-eval tasks from held-out text")
    p.add_argument("--heldout", required=True, help="held-out test split (jsonl.zst)")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "perplexity", perplexity, "per-source validation/test perplexity")
    p.add_argument("--model", required=True)
    p.add_argument("--heldout", nargs="+", required=True, help="{split}.jsonl.zst files")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--progress", default=None,
                   help="file that keeps what is scored, so a pre-empted job resumes "
                        "(selectlab.layout.perplexity_progress; removed at the end)")
    p.add_argument("--out", required=True)
    p = add_action(actions, "fetch-data", fetch_data,
                   "download the lm-eval tasks into a shared cache (run where there is internet)")
    p.add_argument("--params", type=json_arg, required=True, help='{"tasks": ...}')
    p.add_argument("--cache-dir", required=True)
    p.add_argument("--out", required=True, help="record of what the cache holds")
    p = add_action(actions, "icl", icl, "in-context learning with lm-eval's Python API")
    p.add_argument("--model", required=True)
    p.add_argument("--tasks-dir", default=None, help="offline task directory (local tasks)")
    p.add_argument("--cache-dir", default=None,
                   help="results per (task, shots) of this model, kept across reruns")
    p.add_argument("--data-cache", default=None,
                   help="read lm-eval's datasets only from this cache (fetch-data filled it)")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--out", required=True)
