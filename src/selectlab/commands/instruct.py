"""`selectlab instruct`: the instruction set, fine-tuning, answers, judgments, win rates."""

from __future__ import annotations

import time
from pathlib import Path

from selectlab.commands import add_action, json_arg


def data(args) -> dict:
    from selectlab.instruct.data import build_instruction_set
    from selectlab.instruct.heldout import CorpusText
    from selectlab.shards import ReadReport, atomic_path, iter_documents, write_json
    from selectlab.tokens import load_tokenizer

    corpus = None
    if args.corpus:
        report = ReadReport(shard="corpus")
        corpus = CorpusText(iter_documents(args.corpus, report))
    train, evaluation, record = build_instruction_set(args.params, load_tokenizer(args.tokenizer),
                                                      corpus)
    for frame, out in ((train, args.out_train), (evaluation, args.out_eval)):
        with atomic_path(out) as tmp:
            frame.to_parquet(tmp, index=False)
    write_json(args.out_record, record)
    return {"train": len(train), "eval": len(evaluation), "sources": record["sources"]}


def use_threads(threads: int) -> None:
    """Keep torch to the job's CPUs, so concurrent jobs do not fight over cores."""
    import torch

    if threads > 0:
        torch.set_num_threads(threads)


def sft(args) -> dict:
    from selectlab.devices import select_device, visible_devices
    from selectlab.instruct.sft import SFTSettings, finetune
    from selectlab.instruct.template import ChatTemplate

    print(visible_devices(), flush=True)
    use_threads(args.threads)
    card = finetune(args.model, args.train, ChatTemplate(**args.params["template"]),
                    SFTSettings.from_dict(args.params["settings"]), args.out_dir,
                    args.checkpoint_dir, args.log_csv, device=select_device(args.gpus),
                    gpus=args.gpus)
    return {"steps": card["steps"], "final_loss": round(card["final_loss"], 4),
            "flops": card["cost"]["flops"]}


def generate(args) -> dict:
    import pandas as pd

    from selectlab.devices import select_device, visible_devices
    from selectlab.instruct import generate as g
    from selectlab.instruct.template import ChatTemplate, prompt_ids
    from selectlab.shards import atomic_path, write_json
    from selectlab.tokens import load_tokenizer

    p = args.params
    print(visible_devices(), flush=True)
    settings = g.GenerateSettings.from_dict(p["settings"])
    evaluation = pd.read_parquet(args.eval)
    tokenizer, template = load_tokenizer(args.model), ChatTemplate(**p["template"])
    prompts = [prompt_ids(tokenizer, template, text) for text in evaluation["instruction"]]
    started = time.perf_counter()
    if p["backend"] == "vllm":
        device = "cuda" if args.gpus > 0 else "cpu"  # vLLM's CPU build runs without GPUs
        answers = g.generate_vllm(args.model, prompts, settings, gpus=args.gpus, **p["engine"])
    elif p["backend"] == "transformers":
        use_threads(args.threads)
        device = select_device(args.gpus)
        answers = g.generate_transformers(args.model, prompts, settings, device=device)
    else:
        raise ValueError(f"unknown generation backend {p['backend']!r}; known: {g.BACKENDS}")
    cost = g.generation_cost(args.model, prompts, answers, settings,
                             time.perf_counter() - started, device, args.gpus)
    table = g.answers_table(evaluation["id"].tolist(), args.variant, answers, p["backend"])
    with atomic_path(args.out) as tmp:
        table.to_parquet(tmp, index=False)
    summary = {"answers": len(table), "finished": int(table["finished"].sum()),
               "mean_tokens": round(float(table["answer_tokens"].mean()), 1)}
    write_json(args.out_metrics, {"variant": args.variant, "backend": p["backend"]}
               | summary | {"cost": cost})
    return summary | {"flops": cost["flops"]}


def judge(args) -> dict:
    import pandas as pd

    from selectlab.instruct import compare
    from selectlab.judge.factory import run_settings
    from selectlab.judge.run import summary_table
    from selectlab.shards import atomic_path

    p = args.params
    evaluation = pd.read_parquet(args.eval)
    answers = {}
    for path in args.answers:
        frame = pd.read_parquet(path)
        answers[str(frame["variant"].iloc[0]) if len(frame) else Path(path).stem] = frame
    backend = build_judge(p, evaluation, answers, args.gpus)
    # As the judge stage's: retries, batches and an API judge's price, which makes the
    # summary's cost_usd (answer judging's cost; it records no FLOPs).
    run = run_settings({"max_attempts": p["max_attempts"]}, p["backend"])
    table, asked = compare.judge_comparison(evaluation, answers, p["variants"], p["reference"],
                                            compare.Settings(**p["settings"]), backend,
                                            args.cache, run)
    with atomic_path(args.out_judgments) as tmp:
        table.to_parquet(tmp, index=False)
    summary = summary_table(table, table["cached"], backend, run)
    with atomic_path(args.out_summary) as tmp:
        summary.to_csv(tmp, index=False)
    return {"comparison": p["comparison"], "judgments": len(table), "asked": asked,
            "backend": backend.kind}


def build_judge(params: dict, evaluation, answers: dict, gpus: int):
    """The reference-based judge offline, else one of the judge stage's backends."""
    from selectlab.instruct.compare import answer_id
    from selectlab.instruct.reference_judge import ReferenceOverlapJudge
    from selectlab.judge.factory import build_backend

    backend = params["backend"]
    if backend["kind"] != "reference":
        return build_backend(backend, seed=params["seed"], gpus=gpus)
    texts = {answer_id(row.id, row.answer): row.answer
             for frame in answers.values() for row in frame.itertuples(index=False)}
    references = dict(zip(evaluation["id"], evaluation["response"], strict=True))
    return ReferenceOverlapJudge(texts, references, tie_margin=backend.get("tie_margin", 0.0),
                                 model_id=backend.get("model", "reference-overlap-f1"))


def winrate(args) -> dict:
    import pandas as pd

    from selectlab.instruct.figures import plot_winrate
    from selectlab.instruct.winrate import winrate_table
    from selectlab.report.table_files import write_table

    p = args.params
    judgments = {Path(path).parent.name: pd.read_parquet(path) for path in args.judgments}
    table = winrate_table(p["comparisons"], judgments, p["labels"], p["bootstrap_samples"],
                          p["seed"])
    write_table(table, Path(args.out_csv), Path(args.out_md), p["notes"])
    plot_winrate(table, Path(args.out_figure), p["notes"])
    return {"rows": len(table), "win_rates": dict(zip(table["variant"],
                                                      table["win_rate"].round(1), strict=True))}


def register(stages) -> None:
    parser = stages.add_parser("instruct", help="instruction following: SFT, answers, win rates")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "data", data, "build and split the instruction set")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--corpus", nargs="*", default=[],
                   help="the corpus files the embedded instruction set must stay off")
    p.add_argument("--out-train", required=True)
    p.add_argument("--out-eval", required=True)
    p.add_argument("--out-record", required=True)
    p = add_action(actions, "sft", sft, "fine-tune one pretrained model on the instruction set")
    p.add_argument("--model", required=True, help="the pretrained model directory")
    p.add_argument("--train", required=True)
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--gpus", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's choice)")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--checkpoint-dir", required=True)
    p.add_argument("--log-csv", required=True)
    p = add_action(actions, "generate", generate, "answer the evaluation instructions")
    p.add_argument("--model", required=True)
    p.add_argument("--eval", required=True)
    p.add_argument("--variant", required=True, help="the name the answers are recorded under")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--gpus", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's choice)")
    p.add_argument("--out", required=True)
    p.add_argument("--out-metrics", required=True,
                   help="counts and the job's cost (instruct/answers/{variant}.metrics.json)")
    p = add_action(actions, "judge", judge, "judge variants' answers against a reference's")
    p.add_argument("--eval", required=True)
    p.add_argument("--answers", nargs="+", required=True)
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--gpus", type=int, default=0, help="tensor-parallel size for vllm")
    p.add_argument("--cache", required=True, help="sqlite cache of finished judgments")
    p.add_argument("--out-judgments", required=True)
    p.add_argument("--out-summary", required=True)
    p = add_action(actions, "winrate", winrate, "win-rate table and figure")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--judgments", nargs="+", required=True,
                   help="instruct/judgments/{comparison}/judgments.parquet of every comparison")
    p.add_argument("--out-csv", required=True)
    p.add_argument("--out-md", required=True)
    p.add_argument("--out-figure", required=True)
