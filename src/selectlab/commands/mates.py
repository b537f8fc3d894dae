"""`selectlab mates`: probe oracle influence, fit the data-influence model, assemble a MATES
variant from its stages (selectlab.mates)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from selectlab.commands import add_action, add_pool_argument, json_arg


def reference_texts(spec: str, files: list[str], max_chars: int) -> list[str]:
    """The reference set's texts: the corpus's held-out reference split, or JSONL files."""
    from selectlab.annotate.dsir_sources import jsonl_texts
    from selectlab.selection.mates_stages import HELDOUT_REFERENCE
    from selectlab.shards import read_all

    if spec == HELDOUT_REFERENCE:
        docs, _ = read_all(files, max_chars=max_chars)
        return [doc.text for doc in docs]
    return list(jsonl_texts(files, max_chars))


def probe(args) -> dict:
    import torch
    from transformers import LlamaForCausalLM

    from selectlab.annotate.dsir_sources import sample_shards
    from selectlab.corpus.pools import listed_shards
    from selectlab.devices import select_device
    from selectlab.flops import cost_record, inference_flops, module_shape, training_flops
    from selectlab.mates import probe as probing
    from selectlab.mates.units import earlier_ids
    from selectlab.shards import atomic_path, write_json
    from selectlab.tokens import load_tokenizer

    torch.set_num_threads(args.threads)
    p = args.params
    started = time.perf_counter()
    shards = sample_shards(listed_shards(args.pool), p.get("max_shards"), p["seed"])
    meta = [str(Path(args.meta_dir) / f"{shard}.parquet") for shard in shards]
    sample = probing.sample_units(meta, p["probes"], p["seed"], earlier_ids(args.earlier))
    units = probing.part_of(sample, args.part, p["parts"])
    tokens = probing.unit_tokens(args.tokens_dir, units, p["unit_tokens"])
    keep = [len(t) >= 2 for t in tokens]
    units, tokens = units[keep].reset_index(drop=True), [t for t, k in zip(tokens, keep,
                                                                            strict=True) if k]
    device = select_device(args.gpus)
    tokenizer = load_tokenizer(args.model)
    model = LlamaForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    optimizer_state = probing.load_stage_training_state(args.checkpoints, model)
    texts = reference_texts(p["reference"], args.reference, p["max_doc_chars"])
    reference = probing.reference_windows(texts, tokenizer, p["seq_len"], p["reference_tokens"],
                                          p["seed"])
    prober = probing.Prober(model, reference, probing.Step(**p["optimizer"]), p["dtype"], device,
                            optimizer_state)
    results = probing.probe_units(prober, units, tokens, tokenizer, p["seq_len"])
    with atomic_path(args.out) as tmp:
        results.to_parquet(tmp, index=False)
    seconds = time.perf_counter() - started
    shape = module_shape(model, p["seq_len"])
    unit_total = int(sum(len(t) for t in tokens))
    reference_total = int(reference.numel()) * (len(tokens) + 1)
    flops = training_flops(shape, unit_total) + inference_flops(shape, reference_total)
    record = {"variant": p["variant"], "stage": p["stage"], "part": args.part,
              "probes": len(results), "reference_loss": prober.before,
              "reference_tokens": prober.reference_tokens,
              "influence": {"mean": float(results["influence"].mean()),
                            "sd": float(results["influence"].std())},
              "cost": cost_record("train+inference", flops, seconds=seconds, gpus=args.gpus,
                                  device=device, shape=shape,
                                  tokens=unit_total + reference_total)}
    write_json(args.metrics, record)
    return {k: record[k] for k in ("variant", "stage", "part", "probes", "influence")}


def fit(args) -> dict:
    import torch

    from selectlab.mates.influence import fit_influence_model
    from selectlab.raters.resolve import config_hash
    from selectlab.shards import atomic_path

    torch.set_num_threads(args.threads)
    record = fit_influence_model(args.probes, args.params, args.out, gpus=args.gpus,
                                 config_hash=config_hash(args.params | {"rater": "mates"}))
    with atomic_path(args.metrics) as tmp:
        Path(tmp).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return record["metrics"]


def finish_selection(args) -> dict:
    from selectlab.mates.assemble import union_selection

    p = args.params
    manifest = union_selection(args.selections, args.manifests, args.out_dir,
                               variant=p["variant"], settings=p["settings"],
                               budget_tokens=p["budget_tokens"])
    return {k: manifest[k] for k in ("selected_tokens", "selected_documents", "budget_reached")}


def finish_model(args) -> dict:
    from selectlab.mates.assemble import final_model

    card = final_model(args.models, args.logs, args.out_dir, args.out_log, variant=args.variant)
    return {k: card[k] for k in ("steps", "tokens", "final_loss")}


def register(stages) -> None:
    parser = stages.add_parser("mates", help="MATES: oracle influence, influence model, stages")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "probe", probe, "oracle influence of one part of a stage's probes")
    p.add_argument("--model", required=True, help="the previous stage's final model")
    p.add_argument("--checkpoints", required=True,
                   help="its pretraining checkpoints (the last one's optimizer state)")
    p.add_argument("--reference", nargs="+", required=True, help="the reference set's file(s)")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--part", type=int, required=True)
    add_pool_argument(p)
    p.add_argument("--meta-dir", required=True, help="attributes/meta, the shards' meta sidecars")
    p.add_argument("--tokens-dir", required=True, help="corpus/tokens")
    p.add_argument("--earlier", nargs="*", default=[], help="earlier stages' selections")
    p.add_argument("--gpus", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", required=True, help="probes parquet")
    p.add_argument("--metrics", required=True, help="the job's metrics and cost (JSON)")
    p = add_action(actions, "fit", fit, "train the data-influence model on a stage's probes")
    p.add_argument("--probes", nargs="+", required=True)
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--gpus", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", required=True, help="the influence model's rater directory")
    p.add_argument("--metrics", required=True)
    p = add_action(actions, "finish-selection", finish_selection,
                   "the MATES variant's selection: its stages' documents in training order")
    p.add_argument("--selections", nargs="+", required=True, help="stage selections, in order")
    p.add_argument("--manifests", nargs="+", required=True)
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "finish-model", finish_model,
                   "the MATES variant's model (the last stage's) and joined training log")
    p.add_argument("--models", nargs="+", required=True, help="stage models, in order")
    p.add_argument("--logs", nargs="+", required=True, help="stage training logs, in order")
    p.add_argument("--variant", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--out-log", required=True)
