"""The GPU proof: what one GPU does with the paper presets, in one short run (gpu_proof.sh).

Needs only torch, transformers and PyYAML (which transformers brings) beside this checkout's
src/; nothing is downloaded, so weights are random (throughput and memory do not depend on
them). Three parts, each printed and written to the JSON given by --out:

* train: a preset (the paper's 1.3B) trained in bf16 by the project's own loop
  (selectlab.train.loop: prepare_model, Run.train_step) at the config's sequence length, micro
  batch and activation checkpointing, on random tokens: tokens/s, model FLOPs utilisation (the
  6N + attention convention of selectlab.flops, recomputation not counted, over the card's dense
  bf16 peak from profiles/slurm/throughput.yaml) and peak memory beside the plan-time estimate
  (selectlab.train.memory) that the workflow checks every pretraining job against.
* memory: presets too large for one GPU (3.3B, 7.2B): the same training step with one and with
  two of their decoder layers at their micro batch with activation checkpointing, so the memory
  one more layer adds is measured and set beside the estimate's, and the estimate for the whole
  model on the GPUs the preset asks for (FSDP).
* annotate: a rater's backbone (the QuRater is Sheared-LLaMA-1.3B, the 1.3B preset's shape)
  scoring windows in bf16 through selectlab.raters.backbone.Backbone: windows/s and documents/s
  at SlimPajama's mean document length (627B tokens over ~590M documents, ~1,063 tokens).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import yaml

SLIMPAJAMA_MEAN_DOC_TOKENS = 1063
GIB = 1024**3


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_memory(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(device) / GIB if device.type == "cuda" else None


def reset_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def peak_tflops(device: torch.device, throughput_file: Path) -> tuple[str, float | None]:
    """The card's name and its dense bf16 peak (TFLOP/s) from the profile's throughput file."""
    if device.type != "cuda":
        return "cpu", None
    name = torch.cuda.get_device_name(device)
    gpus = yaml.safe_load(throughput_file.read_text())["gpus"]
    found = [key for key in gpus if key in name.lower()]
    return name, (float(gpus[found[0]]["peak_tflops"]) if found else None)


def memory_shape(preset: dict, vocab: int, layers: int | None = None):
    from selectlab.train.memory import Shape
    from selectlab.train.model import ModelPreset

    p = ModelPreset.from_dict(preset)
    return Shape(p.hidden_size, layers or p.num_layers, p.num_heads, p.num_kv_heads or p.num_heads,
                 p.mlp_width(), vocab, p.tie_embeddings)


def estimated_gib(preset: dict, vocab: int, seq_len: int, micro: int, checkpointing: bool,
                  world: int = 1, layers: int | None = None) -> float:
    from selectlab.train.memory import GIB as MEMORY_GIB
    from selectlab.train.memory import Launch, estimate

    launch = Launch(seq_len, micro, world, 1, bool(preset.get("fsdp")) and world > 1,
                    checkpointing, True)
    return estimate(memory_shape(preset, vocab, layers), launch).peak_bytes / MEMORY_GIB


def training_run(preset: dict, vocab: int, seq_len: int, micro: int, checkpointing: bool,
                 steps: int, warmup: int, layers: int | None = None) -> dict:
    """`steps` timed training steps of the project's loop (after `warmup` untimed ones)."""
    from transformers import LlamaForCausalLM

    from selectlab.flops import preset_shape, training_flops
    from selectlab.train.distributed import setup_distributed
    from selectlab.train.loop import (
        LaunchSettings,
        Run,
        TrainSettings,
        make_optimizer,
        prepare_model,
    )
    from selectlab.train.model import ModelPreset, llama_config

    shape = dict(preset, num_layers=layers or preset["num_layers"])
    model_preset = ModelPreset.from_dict(shape)
    dist = setup_distributed()
    reset_memory(dist.device)
    settings = TrainSettings(seq_len=seq_len, global_batch_sequences=micro, lr=1e-4,
                             dtype="bf16", checkpoint_every=10**9, average_last=1)
    launch = LaunchSettings(micro_batch_sequences=micro, activation_checkpointing=checkpointing)
    torch.manual_seed(0)
    model = LlamaForCausalLM(llama_config(model_preset, vocab, seq_len, eos_id=2, pad_id=0))
    model = prepare_model(model, settings, launch, dist)
    rng = np.random.default_rng(0)
    data = rng.integers(3, vocab, size=((warmup + steps) * micro, seq_len), dtype=np.int32)
    with tempfile.TemporaryDirectory() as checkpoints:
        run = Run(model, make_optimizer(model, settings), settings, launch, dist,
                  Path(checkpoints), "gpu-proof", warmup + steps)
        for step in range(warmup):
            run.train_step(data, step, settings.lr)
        synchronize(dist.device)
        started = time.perf_counter()
        for step in range(warmup, warmup + steps):
            loss = run.train_step(data, step, settings.lr)
        synchronize(dist.device)
        seconds = time.perf_counter() - started
    tokens = steps * micro * seq_len
    flops = training_flops(preset_shape(model_preset, vocab, seq_len), tokens)
    result = {"layers": model_preset.num_layers, "micro_batch": micro, "seq_len": seq_len,
              "activation_checkpointing": checkpointing, "steps": steps, "loss": loss,
              "seconds": seconds, "tokens_per_s": tokens / seconds,
              "model_tflops_per_s": flops / seconds / 1e12,
              "peak_memory_gib": peak_memory(dist.device), "device": str(dist.device)}
    del run, model
    return result


def train_part(preset: dict, args, peak: float | None) -> dict:
    result = training_run(preset, args.vocab, args.seq_len, args.micro_batch, args.checkpointing,
                          args.steps, args.warmup)
    result["mfu"] = result["model_tflops_per_s"] / peak if peak else None
    result["estimated_memory_gib"] = estimated_gib(preset, args.vocab, args.seq_len,
                                                   args.micro_batch, args.checkpointing)
    return result


def memory_part(name: str, preset: dict, args) -> dict:
    """One and two decoder layers measured; the growth per layer against the estimate's."""
    runs = [training_run(preset, args.vocab, args.seq_len, args.micro_batch, True, 1, 1,
                         layers=n) for n in (1, 2)]
    estimates = [estimated_gib(preset, args.vocab, args.seq_len, args.micro_batch, True,
                               layers=n) for n in (1, 2)]
    measured = ([r["peak_memory_gib"] for r in runs]
                if runs[0]["peak_memory_gib"] is not None else None)
    resources = preset.get("resources", {})
    world = max(1, int(resources.get("gpu", 1)) * int(resources.get("nodes", 1)))
    return {"preset": name, "micro_batch": args.micro_batch, "seq_len": args.seq_len,
            "measured_gib_1_2_layers": measured,
            "measured_gib_per_layer": measured[1] - measured[0] if measured else None,
            "estimated_gib_1_2_layers": estimates,
            "estimated_gib_per_layer": estimates[1] - estimates[0],
            "gpus_asked": world,
            "estimated_gib_per_gpu_whole_model": estimated_gib(
                preset, args.vocab, args.seq_len, args.micro_batch, True, world=world)}


def small_tokenizer():
    """A real fast tokenizer that, like Llama's, puts <s> before a text (the backbone reads
    its special tokens); the documents themselves are token ids, so its vocabulary is moot."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "a": 3, "b": 4}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.post_processor = processors.TemplateProcessing(single="<s> $A",
                                                        special_tokens=[("<s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="</s>")


def annotate_part(preset: dict, args) -> dict:
    from transformers import LlamaModel

    from selectlab.raters.backbone import Backbone
    from selectlab.raters.chunks import plan_chunks
    from selectlab.train.model import ModelPreset, llama_config

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    # Sheared-LLaMA's 4,096 positions: a window's text and its <s> fit.
    config = llama_config(ModelPreset.from_dict(preset), args.vocab, 4096, eos_id=2, pad_id=2)
    model = LlamaModel(config).to(device=device, dtype=torch.bfloat16).eval()
    backbone = Backbone(model, small_tokenizer(), causal=True, window=args.window,
                        pool_layers=(-1,), label="gpu proof")
    rng = np.random.default_rng(1)
    docs = [rng.integers(3, args.vocab, size=args.doc_tokens).tolist()
            for _ in range(args.rater_docs)]
    plan = plan_chunks(docs, backbone.content_size)
    with torch.inference_mode():
        backbone.chunk_vectors(plan_chunks(docs[:args.rater_batch], backbone.content_size),
                               args.rater_batch)  # warm-up
        synchronize(device)
        started = time.perf_counter()
        backbone.chunk_vectors(plan, args.rater_batch)
        synchronize(device)
    seconds = time.perf_counter() - started
    return {"window": args.window, "batch": args.rater_batch, "docs": len(docs),
            "doc_tokens": args.doc_tokens, "windows": len(plan.chunks), "seconds": seconds,
            "windows_per_s": len(plan.chunks) / seconds, "docs_per_s": len(docs) / seconds}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/paper.yaml", help="where the presets are")
    parser.add_argument("--throughput", default="profiles/slurm/throughput.yaml")
    parser.add_argument("--train-preset", default="llama_1b3")
    parser.add_argument("--memory-presets", nargs="*", default=["llama_3b3", "llama_7b2"])
    parser.add_argument("--rater-preset", default="llama_1b3")
    parser.add_argument("--vocab", type=int, default=32000, help="Llama-2's 32k")
    parser.add_argument("--seq-len", type=int, default=None, help="default: the config's")
    parser.add_argument("--micro-batch", type=int, default=None, help="default: the config's")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--window", type=int, default=512, help="the rater's window")
    parser.add_argument("--doc-tokens", type=int, default=SLIMPAJAMA_MEAN_DOC_TOKENS)
    parser.add_argument("--rater-docs", type=int, default=512)
    parser.add_argument("--rater-batch", type=int, default=64)
    parser.add_argument("--out", default=None)
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    config = yaml.safe_load(Path(args.config).read_text())
    presets, pretrain = config["models"]["presets"], config["pretrain"]
    args.seq_len = args.seq_len or int(pretrain["seq_len"])
    args.micro_batch = args.micro_batch or int(pretrain["micro_batch_sequences"])
    args.checkpointing = bool(pretrain.get("activation_checkpointing", False))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    card, peak = peak_tflops(device, Path(args.throughput))
    report = {"card": card, "peak_tflops": peak, "torch": torch.__version__,
              "config": args.config}
    report["train"] = train_part(presets[args.train_preset], args, peak) | {
        "preset": args.train_preset}
    print(json.dumps({"train": report["train"]}), flush=True)
    report["memory"] = [memory_part(name, presets[name], args) for name in args.memory_presets]
    print(json.dumps({"memory": report["memory"]}), flush=True)
    report["annotate"] = annotate_part(presets[args.rater_preset], args) | {
        "preset": args.rater_preset}
    print(json.dumps({"annotate": report["annotate"]}), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
