"""`selectlab judge`: draw a protocol's sample, judge it, serve a model over HTTP for tests."""

from __future__ import annotations

import json
from pathlib import Path

from selectlab.commands import add_action, json_arg


def sample(args) -> dict:
    from selectlab.judge.sample import pair_sample, pointwise_sample, read_meta
    from selectlab.shards import atomic_path
    from selectlab.tokens import load_tokenizer

    p = args.params
    protocol = p["protocol"]
    settings = p["settings"]
    meta = read_meta(args.meta)
    tokenizer = load_tokenizer(args.tokenizer)
    common = {"seed": p["seed"], "tokenizer": tokenizer, "max_doc_chars": p["max_doc_chars"],
              "id_root": args.id_root}
    if protocol == "qurating":
        table = pair_sample(meta, args.shard_files, documents=settings["documents"],
                            pairs=settings["pairs"], snippet_tokens=settings["snippet_tokens"],
                            **common)
    else:
        table = pointwise_sample(protocol, meta, args.shard_files,
                                 documents=settings["documents"],
                                 max_text_tokens=settings["max_text_tokens"], **common)
    with atomic_path(args.out) as tmp:
        table.to_parquet(tmp, index=False)
    return {"protocol": protocol, "rows": len(table)}


def run(args) -> dict:
    import pandas as pd

    from selectlab.inputs import require_rows
    from selectlab.judge.factory import build_backend, protocol_settings, run_settings
    from selectlab.judge.resolve import DEFAULT_MAX_FAILURE_RATE
    from selectlab.judge.run import run_protocol
    from selectlab.shards import atomic_path

    p = args.params
    protocol = p["protocol"]
    backend_cfg = p["backend"] | args.throughput
    table = require_rows(pd.read_parquet(args.sample), args.sample, f"judge_sample ({protocol})")
    backend = build_backend(backend_cfg, seed=p["seed"], gpus=args.gpus,
                            simulated=p.get("simulated"), sample=table,
                            ground_truth=args.ground_truth)
    result = run_protocol(protocol, table,
                          protocol_settings(protocol, p["settings"], backend_cfg, backend),
                          backend, args.cache,
                          run_settings(p["settings"], backend_cfg,
                                       p.get("max_failure_rate", DEFAULT_MAX_FAILURE_RATE)))
    for frame, out in ((result.judgments, args.out_judgments), (result.labels, args.out_labels)):
        with atomic_path(out) as tmp:
            frame.to_parquet(tmp, index=False)
    summary = result.summary.assign(**judge_cost_columns(backend, backend_cfg, result.summary,
                                                          result.wall_s, args.gpus))
    with atomic_path(args.out_summary) as tmp:
        summary.to_csv(tmp, index=False)
    overall = result.summary[result.summary["criterion"] == "all"].iloc[0]
    return {"protocol": protocol, "backend": backend.kind, "judgments": len(result.judgments),
            "asked": result.queried, "labels": len(result.labels),
            "failure_rate": round(float(overall["failure_rate"]), 4),
            "wall_s": round(result.wall_s, 2)}


def failures(args) -> dict:
    import pandas as pd

    from selectlab.judge.failures import failure_table
    from selectlab.report.table_files import write_table

    summaries = {Path(path).parent.name: pd.read_csv(path) for path in args.summaries}
    table = failure_table(summaries)
    write_table(table, Path(args.out_csv), Path(args.out_md), args.notes)
    return {"protocols": len(table), "failed": int(table[["parse_error", "backend_error"]]
                                                   .to_numpy().sum())}


def judge_cost_columns(backend, backend_cfg: dict, summary, wall_s: float, gpus: int) -> dict:
    """FLOPs per summary row (inference over its prompt and completion tokens, selectlab.flops;
    0 for the simulated judge, which runs no model; empty for a remote API model of unknown
    size) and the job's hours, on the `all` row."""
    from selectlab.flops import config_shape, inference_flops, module_shape

    tokens = summary["prompt_tokens"] + summary["completion_tokens"]
    context = int(backend_cfg.get("max_model_len", 4096))
    if backend.kind == "simulated":
        flops = tokens * 0.0
    elif hasattr(backend, "model") and hasattr(backend.model, "parameters"):
        shape = module_shape(backend.model, context)
        flops = tokens.map(lambda n: inference_flops(shape, n))
    elif backend.kind == "vllm":
        from transformers import AutoConfig

        shape = config_shape(AutoConfig.from_pretrained(backend_cfg["model"]), context)
        flops = tokens.map(lambda n: inference_flops(shape, n))
    else:
        flops = tokens * float("nan")
    device = "cuda" if gpus else "cpu"
    overall = summary["criterion"] == "all"
    return {"flops": flops, "device": device,
            "gpu_hours": overall * (wall_s * gpus / 3600.0),
            "wall_hours": overall * (wall_s / 3600.0)}


def serve(args) -> None:
    from selectlab.judge.server import Faults, make_server
    from selectlab.judge.transformers_backend import TransformersJudge

    backend = TransformersJudge(args.model, gguf_file=args.gguf_file, dtype=args.dtype,
                                batch_size=1, max_input_tokens=args.max_input_tokens)
    faults = Faults(fail_first=args.fail_first, fail_statuses=tuple(args.fail_status),
                    drop_first=args.drop_first, fail_after=args.fail_after,
                    answers=tuple(args.answers), hang_s=args.hang_s)
    server = make_server(backend, host=args.host, port=args.port,
                         model_name=args.served_model_name, faults=faults,
                         api_key_env=args.api_key_env)
    port = server.server_address[1]
    if args.port_file:
        Path(args.port_file).write_text(f"{port}\n")
    print(json.dumps({"listening": f"http://{args.host}:{port}/v1"}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return None


def _shard_files(text: str) -> dict[str, list[str]]:
    value = json.loads(text)
    if not isinstance(value, dict) or not all(isinstance(v, list) for v in value.values()):
        raise ValueError("--shard-files must be a JSON object: shard -> list of raw files")
    return value


def _notes(text: str) -> list[str]:
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("--notes must be a JSON list of strings")
    return value


def register(stages) -> None:
    parser = stages.add_parser("judge", help="LLM judgments for QuRating, DataMan and PRRC")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "sample", sample, "draw the documents (or pairs) to be judged")
    p.add_argument("--meta", nargs="+", required=True, help="meta sidecars of candidate shards")
    p.add_argument("--shard-files", type=_shard_files, required=True,
                   help="JSON object: shard -> its raw files")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--id-root", default=None,
                   help="the pool's root directory: ids of records without one are relative to it")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--out", required=True)
    p = add_action(actions, "run", run, "judge a protocol's sample (cached, resumable)")
    p.add_argument("--sample", required=True)
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--throughput", type=json_arg, default={},
                   help="the backend's batch_size (speed only, kept out of the params)")
    p.add_argument("--ground-truth", default=None, help="corpus ground truth (simulated judge)")
    p.add_argument("--gpus", type=int, default=0, help="tensor-parallel size for vllm")
    p.add_argument("--cache", required=True, help="sqlite cache of finished judgments")
    p.add_argument("--out-judgments", required=True)
    p.add_argument("--out-labels", required=True)
    p.add_argument("--out-summary", required=True)
    p = add_action(actions, "failures", failures,
                   "the table of failed judgments per protocol (report and archive)")
    p.add_argument("--summaries", nargs="+", required=True,
                   help="judgments/<protocol>/summary.csv files")
    p.add_argument("--notes", type=_notes, default=[], help="JSON list of caveats")
    p.add_argument("--out-csv", required=True)
    p.add_argument("--out-md", required=True)
    p = add_action(actions, "serve", serve,
                   "OpenAI-compatible HTTP server around a local model (for tests)")
    p.add_argument("--model", required=True, help="model directory")
    p.add_argument("--gguf-file", default=None)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--max-input-tokens", type=int, default=4096)
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--port-file", default=None, help="write the chosen port here when ready")
    p.add_argument("--fail-first", type=int, default=0,
                   help="answer the first K completion requests with --fail-status")
    p.add_argument("--fail-status", type=int, nargs="+", default=[429, 500])
    p.add_argument("--drop-first", type=int, default=0,
                   help="then drop M connections without answering")
    p.add_argument("--fail-after", type=int, default=None,
                   help="answer 503 to everything after N completion requests")
    p.add_argument("--answers", nargs="+", default=["ok"],
                   help="cycled per admitted request: ok, garbage, bad_usage, bad_logprob, "
                        "no_choices, hang, echo_key")
    p.add_argument("--hang-s", type=float, default=30.0, help="how long a `hang` answer waits")
    p.add_argument("--api-key-env", default=None, help="require the key in this env variable")
