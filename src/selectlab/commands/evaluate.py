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

    from selectlab.evaluate.perplexity import per_source_perplexity
    from selectlab.flops import config_shape, cost_record, inference_flops
    from selectlab.shards import write_json

    heldout = {Path(path).name.split(".")[0]: Path(path) for path in args.heldout}
    p = args.params
    device, started = default_device(), time.perf_counter()
    result = per_source_perplexity(args.model, heldout, seq_len=p["seq_len"],
                                   batch_size=p["batch_size"],
                                   max_tokens_per_source=p.get("max_tokens_per_source"),
                                   device=device, dtype=p.get("dtype", "float32"))
    splits = list(result)
    # Every scored token was read once in a window of seq_len (selectlab.flops).
    tokens = sum(result[split]["all"]["tokens"] for split in splits)
    shape = config_shape(AutoConfig.from_pretrained(args.model), p["seq_len"])
    result["cost"] = cost_record("inference", inference_flops(shape, tokens),
                                 seconds=time.perf_counter() - started,
                                 gpus=int(device.startswith("cuda")), device=device,
                                 shape=shape, tokens=tokens)
    write_json(args.out, result)
    return {split: result[split]["all"] for split in splits}


def icl(args) -> dict:
    from selectlab.evaluate.icl import run_icl
    from selectlab.evaluate.icl_tasks import load_task_list
    from selectlab.shards import write_json

    p = args.params
    if p["tasks"] == "local":
        if not args.tasks_dir:
            raise ValueError("local ICL tasks need --tasks-dir")
        task_list, include = load_task_list(Path(args.tasks_dir)), Path(args.tasks_dir)
    else:
        task_list, include = p["tasks"], None
    result = run_icl(args.model, task_list, include_path=include, batch_size=p["batch_size"],
                     seed=p["seed"], dtype=p.get("dtype", "float32"), device=default_device(),
                     limit=p.get("limit"))
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
    p.add_argument("--out", required=True)
    p = add_action(actions, "icl", icl, "in-context learning with lm-eval's Python API")
    p.add_argument("--model", required=True)
    p.add_argument("--tasks-dir", default=None, help="offline task directory (local tasks)")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--out", required=True)
