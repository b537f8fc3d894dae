"""One epoch of causal-LM pretraining over packed sequences, small enough to read in one sitting.

The same function runs single-process on a CPU and under `torchrun` on GPUs (DDP, or FSDP2 for
presets marked `fsdp`). Rows of the packed array are read in stored order: shuffling or curriculum
ordering happened when the selection was packed. Every rank reads its own micro-batches of each
global batch, so the result does not depend on how many processes share the work.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from selectlab.flops import cost_record, module_shape, training_flops
from selectlab.shards import write_json
from selectlab.train import checkpoints
from selectlab.train.distributed import Distributed, all_reduce_mean, setup_distributed, wrap_model
from selectlab.train.model import ModelPreset, count_parameters, llama_config


@dataclass(frozen=True)
class TrainSettings:
    seq_len: int
    global_batch_sequences: int
    micro_batch_sequences: int
    lr: float
    min_lr_ratio: float = 0.1
    warmup_fraction: float = 0.05
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    dtype: str = "bf16"
    checkpoint_every: int = 1000
    average_last: int = 3
    seed: int = 0

    @classmethod
    def from_dict(cls, params: dict) -> TrainSettings:
        unknown = set(params) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown training settings: {sorted(unknown)}")
        return cls(**params)


def learning_rate(step: int, total_steps: int, s: TrainSettings) -> float:
    """Linear warmup over `warmup_fraction` of the steps, then cosine decay to min_lr_ratio * lr."""
    warmup = max(1, round(total_steps * s.warmup_fraction))
    if step < warmup:
        return s.lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
    floor = s.lr * s.min_lr_ratio
    return floor + (s.lr - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def autocast_context(device: torch.device, dtype: str):
    if dtype == "bf16" and (device.type == "cpu" or torch.cuda.is_bf16_supported()):
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def make_optimizer(model: torch.nn.Module, s: TrainSettings) -> torch.optim.Optimizer:
    # Norm weights and biases are 1-D; weight decay on them only hurts.
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": decay, "weight_decay": s.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=s.lr, betas=(s.beta1, s.beta2))


def build_model(preset: ModelPreset, tokenizer, s: TrainSettings, init_from: str | None):
    from transformers import LlamaForCausalLM

    if init_from:
        # Continued pretraining starts from a finished model and keeps its architecture.
        return LlamaForCausalLM.from_pretrained(init_from, torch_dtype=torch.float32)
    config = llama_config(preset, len(tokenizer), s.seq_len, tokenizer.eos_token_id,
                          tokenizer.pad_token_id)
    torch.manual_seed(s.seed)
    return LlamaForCausalLM(config)


def micro_batches(data: np.ndarray, step: int, s: TrainSettings, dist: Distributed):
    """This rank's micro-batches of global batch `step`, as int64 tensors."""
    per_step = s.global_batch_sequences // (s.micro_batch_sequences * dist.world_size)
    base = step * s.global_batch_sequences
    for micro in range(per_step):
        start = base + (micro * dist.world_size + dist.rank) * s.micro_batch_sequences
        rows = np.asarray(data[start:start + s.micro_batch_sequences], dtype=np.int64)
        yield micro == per_step - 1, torch.from_numpy(rows).to(dist.device)


def check_batch_shape(s: TrainSettings, dist: Distributed, n_rows: int, width: int) -> int:
    if width != s.seq_len:
        raise ValueError(f"packed sequences have length {width}, settings say {s.seq_len}")
    if s.global_batch_sequences % (s.micro_batch_sequences * dist.world_size):
        raise ValueError(f"global batch {s.global_batch_sequences} is not a multiple of micro "
                         f"batch {s.micro_batch_sequences} x {dist.world_size} processes")
    steps = n_rows // s.global_batch_sequences
    if steps == 0:
        raise ValueError(f"{n_rows} sequences are fewer than one global batch "
                         f"({s.global_batch_sequences}); raise the budget or lower the batch")
    return steps


def pretrain(data_path: str | Path, tokenizer_dir: str | Path, preset: ModelPreset,
             s: TrainSettings, out_dir: str | Path, checkpoint_dir: str | Path,
             log_path: str | Path, init_from: str | None = None) -> dict:
    """Train for one epoch, resuming from a matching checkpoint; write the averaged final model."""
    from selectlab.tokens import load_tokenizer

    dist = setup_distributed()
    tokenizer = load_tokenizer(tokenizer_dir)
    data = np.load(data_path, mmap_mode="r")
    total_steps = check_batch_shape(s, dist, data.shape[0], data.shape[1])
    stat = os.stat(data_path)
    run_hash = checkpoints.settings_hash({
        "settings": asdict(s), "preset": asdict(preset), "init_from": init_from,
        "data": [str(data_path), stat.st_size, stat.st_mtime_ns], "world": dist.world_size})
    if dist.is_main:
        dropped = checkpoints.discard_foreign_checkpoints(checkpoint_dir, run_hash)
        if dropped:
            print(f"discarded {dropped} checkpoint(s) of a run with other settings", flush=True)
    dist.barrier()

    model = build_model(preset, tokenizer, s, init_from).to(dist.device)
    model = wrap_model(model, dist, fsdp=preset.fsdp)
    optimizer = make_optimizer(model, s)
    log_rows: list[dict] = []
    start_step = 0
    resume = checkpoints.latest_resumable(checkpoint_dir, run_hash)
    if resume is not None:
        dist.load_state(model, optimizer, resume["model"], resume["optimizer"])
        start_step, log_rows = resume["step"], resume["log"]
        torch.set_rng_state(resume["rng"])
        print(f"resumed from step {start_step} of {total_steps}", flush=True)

    model.train()
    started = time.time() - (log_rows[-1]["seconds"] if log_rows else 0.0)
    tokens_per_step = s.global_batch_sequences * s.seq_len
    for step in range(start_step, total_steps):
        lr = learning_rate(step, total_steps, s)
        for group in optimizer.param_groups:
            group["lr"] = lr
        loss_sum = torch.zeros((), device=dist.device)
        per_step = s.global_batch_sequences // (s.micro_batch_sequences * dist.world_size)
        for last, batch in micro_batches(data, step, s, dist):
            # Gradients are all-reduced only on the last micro-batch of the step.
            with contextlib.nullcontext() if last else dist.no_sync(model):
                with autocast_context(dist.device, s.dtype):
                    loss = model(input_ids=batch, labels=batch).loss / per_step
                loss.backward()
            loss_sum += loss.detach()
        torch.nn.utils.clip_grad_norm_(model.parameters(), s.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        row = {"step": step + 1, "tokens": (step + 1) * tokens_per_step,
               "loss": float(all_reduce_mean(loss_sum, dist)), "lr": lr,
               "seconds": round(time.time() - started, 3)}
        log_rows.append(row)
        if dist.is_main and (step % 10 == 0 or step + 1 == total_steps):
            rate = row["tokens"] / max(row["seconds"], 1e-9)
            print(f"step {row['step']}/{total_steps} loss {row['loss']:.4f} lr {lr:.2e} "
                  f"{rate:,.0f} tokens/s", flush=True)
        if (step + 1) % s.checkpoint_every == 0 or step + 1 == total_steps:
            model_state, optim_state = dist.full_state(model, optimizer)
            if dist.is_main:
                checkpoints.save_checkpoint(checkpoint_dir, step + 1, {
                    "model": model_state, "optimizer": optim_state, "step": step + 1,
                    "log": log_rows, "rng": torch.get_rng_state(), "settings_hash": run_hash,
                }, keep=s.average_last)
            dist.barrier()

    card = {}
    if dist.is_main:
        card = write_final_model(checkpoint_dir, out_dir, tokenizer, unwrap(model).config, s,
                                 log_rows, total_steps, device=str(dist.device),
                                 gpus=dist.world_size if dist.device.type == "cuda" else 0)
        write_log(log_path, log_rows)
    dist.shutdown()
    return card


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    return getattr(model, "module", model)


def write_final_model(checkpoint_dir, out_dir, tokenizer, config, s: TrainSettings,
                      log_rows: list[dict], total_steps: int, *, device: str = "cpu",
                      gpus: int = 0) -> dict:
    """Average the last checkpoints (DataMan's recipe) and save the result with the tokenizer.

    The average is loaded into a fresh single-device model, so this works the same after DDP,
    FSDP or single-process training.
    """
    from transformers import LlamaForCausalLM

    averaged, steps = checkpoints.average_last_checkpoints(checkpoint_dir, s.average_last)
    model = LlamaForCausalLM(config)
    model.load_state_dict(averaged)
    out_dir = Path(out_dir)
    tmp = out_dir.with_name(f".{out_dir.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    card = {
        "parameters": count_parameters(model),
        "steps": total_steps,
        "tokens": log_rows[-1]["tokens"],
        "final_loss": log_rows[-1]["loss"],
        "averaged_checkpoint_steps": steps,
        "settings": asdict(s),
        "cost": training_cost(model, s, log_rows[-1], device, gpus),
    }
    write_json(tmp / "training_card.json", card)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.replace(tmp, out_dir)
    return card


def training_cost(model, s: TrainSettings, last_row: dict, device: str, gpus: int) -> dict:
    """FLOPs (selectlab.flops: 6ND + attention) and time of every step of the run, resumed ones
    included."""
    shape = module_shape(model, s.seq_len)
    return cost_record("train", training_flops(shape, last_row["tokens"]),
                       seconds=last_row["seconds"], gpus=gpus, device=device, shape=shape,
                       tokens=last_row["tokens"])


def write_log(path: str | Path, rows: list[dict]) -> None:
    import pandas as pd

    from selectlab.shards import atomic_path

    with atomic_path(path) as tmp:
        pd.DataFrame(rows, columns=["step", "tokens", "loss", "lr", "seconds"]).to_csv(
            tmp, index=False)
