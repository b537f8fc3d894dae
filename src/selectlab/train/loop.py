"""One epoch of causal-LM pretraining over packed sequences, small enough to read in one sitting.

The same function runs single-process on a CPU and under `torchrun` on GPUs (DDP, or FSDP2 for
presets marked `fsdp`). Rows of the packed array are read in stored order: shuffling or curriculum
ordering happened when the selection was packed. Every rank reads its own micro-batches of each
global batch, so the result does not depend on how many processes share the work, and a run
checkpointed on one world size resumes on another (train/checkpoints.py).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from selectlab.devices import compute_dtype
from selectlab.train import averaging, checkpoints, snapshots
from selectlab.train.distributed import (
    Distributed,
    all_reduce_mean,
    full_model_state,
    gradient_sync,
    load_sharded_state,
    model_shards,
    set_model_shards,
    setup_distributed,
    sharded_state,
    uses_fsdp,
    wrap_model,
)
from selectlab.train.model import ModelPreset, llama_config
from selectlab.train.outputs import write_final_model, write_log
from selectlab.train.preemption import Preempted, StopRequest


def strict_fields(cls, params: dict) -> dict:
    unknown = set(params) - set(cls.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown {cls.__name__} keys: {sorted(unknown)}")
    return params


@dataclass(frozen=True)
class TrainSettings:
    """What is learned: changing any of these retrains the variant from scratch."""

    seq_len: int
    global_batch_sequences: int
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
    snapshot_fractions: tuple[float, ...] = ()  # see selectlab.train.snapshots

    @classmethod
    def from_dict(cls, params: dict) -> TrainSettings:
        return cls(**strict_fields(cls, params))


@dataclass(frozen=True)
class LaunchSettings:
    """How the job uses its GPUs: the same model comes out (up to the order of float sums)
    whatever these are, so they are kept out of the checkpoint hash and the job's params."""

    micro_batch_sequences: int
    activation_checkpointing: bool = False
    fsdp: bool = False

    @classmethod
    def from_dict(cls, params: dict) -> LaunchSettings:
        return cls(**strict_fields(cls, params))


class Superseded(Exception):
    """Another run of the same variant claimed the checkpoint directory."""


def learning_rate(step: int, total_steps: int, s: TrainSettings) -> float:
    """Linear warmup over `warmup_fraction` of the steps, then cosine decay to min_lr_ratio * lr."""
    warmup = max(1, round(total_steps * s.warmup_fraction))
    if step < warmup:
        return s.lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
    floor = s.lr * s.min_lr_ratio
    return floor + (s.lr - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def autocast_context(device: torch.device, dtype: str, fsdp_mixed_precision: bool = False):
    # FSDP runs in bf16 through its mixed-precision policy (distributed.wrap_model) instead.
    if not fsdp_mixed_precision and compute_dtype(dtype, device) == "bf16":
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


def prepare_model(model, s: TrainSettings, launch: LaunchSettings, dist: Distributed):
    """The model as it trains: each layer recomputed in backward if asked, on this process's
    device, wrapped for DDP or FSDP."""
    if launch.activation_checkpointing:
        enable = getattr(model, "activation_checkpointing_enable", None)
        if enable is not None:
            enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:  # transformers before 5 names it gradient checkpointing (a GPU node's own install)
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False})
    return wrap_model(model.to(dist.device), dist, fsdp=launch.fsdp,
                      mixed_precision=s.dtype == "bf16")


def micro_steps(s: TrainSettings, launch: LaunchSettings, dist: Distributed) -> int:
    return s.global_batch_sequences // (launch.micro_batch_sequences * dist.world_size)


def micro_batches(data: np.ndarray, step: int, s: TrainSettings, launch: LaunchSettings,
                  dist: Distributed):
    """This rank's micro-batches of global batch `step`, as int64 tensors."""
    per_step, size = micro_steps(s, launch, dist), launch.micro_batch_sequences
    base = step * s.global_batch_sequences
    for micro in range(per_step):
        start = base + (micro * dist.world_size + dist.rank) * size
        rows = np.asarray(data[start:start + size], dtype=np.int64)
        yield micro == per_step - 1, torch.from_numpy(rows).to(dist.device)


def check_batch_shape(s: TrainSettings, launch: LaunchSettings, dist: Distributed, n_rows: int,
                      width: int) -> int:
    if width != s.seq_len:
        raise ValueError(f"packed sequences have length {width}, settings say {s.seq_len}")
    if s.global_batch_sequences % (launch.micro_batch_sequences * dist.world_size):
        raise ValueError(f"global batch {s.global_batch_sequences} is not a multiple of micro "
                         f"batch {launch.micro_batch_sequences} x {dist.world_size} processes")
    steps = n_rows // s.global_batch_sequences
    if steps == 0:
        raise ValueError(f"{n_rows} sequences are fewer than one global batch "
                         f"({s.global_batch_sequences}); raise the budget or lower the batch")
    return steps


def run_hash(data_path, preset: ModelPreset, s: TrainSettings, init_from: str | None) -> str:
    """What a checkpoint must match to be resumed: settings, model, starting point, data file.
    World size and the other launch settings are deliberately absent."""
    stat = os.stat(data_path)
    return checkpoints.settings_hash({
        "settings": asdict(s), "preset": asdict(preset), "init_from": init_from,
        "data": [str(data_path), stat.st_size, stat.st_mtime_ns]})


class Run:
    """One training run's model, optimiser and checkpoint directory, on every rank."""

    def __init__(self, model, optimizer, s: TrainSettings, launch: LaunchSettings,
                 dist: Distributed, checkpoint_dir: Path, run_hash_: str,
                 total_steps: int) -> None:
        self.model, self.optimizer, self.s, self.launch = model, optimizer, s, launch
        self.dist, self.checkpoint_dir, self.hash = dist, Path(checkpoint_dir), run_hash_
        # The steps whose weights make the final model (train.averaging: the last
        # `average_last` regular checkpoints; 1 = the final weights).
        self.merged = averaging.merged_steps(total_steps, s.checkpoint_every, s.average_last)
        self.keep = averaging.checkpoints_to_keep(total_steps, s.checkpoint_every,
                                                  s.average_last)
        self.fsdp_mixed_precision = uses_fsdp(dist, launch.fsdp) and s.dtype == "bf16"
        self.owner = dist.broadcast_object(
            checkpoints.claim_directory(checkpoint_dir) if dist.is_main else None)
        # Wall-clock of training, resumed attempts included (for the card's cost); kept in the
        # checkpoints' run.json, not in train_log.csv, which must be the same bytes on a rerun.
        self.started, self.seconds_before = time.monotonic(), 0.0

    def seconds(self) -> float:
        return self.seconds_before + time.monotonic() - self.started

    def check_owner(self) -> None:
        mine = self.dist.broadcast_object(
            checkpoints.owns_directory(self.checkpoint_dir, self.owner)
            if self.dist.is_main else None)
        if not mine:
            raise Superseded(f"another run of this variant started writing to "
                             f"{self.checkpoint_dir}; this one stops without writing")

    def resume(self) -> tuple[int, list[dict]]:
        """Load the newest matching checkpoint (each rank reads its shards); (step, log)."""
        found = self.dist.broadcast_object(
            checkpoints.latest_resumable(self.checkpoint_dir, self.hash)
            if self.dist.is_main else None)
        if found is None:
            return 0, []
        path, meta = found
        model_state, optim_state = sharded_state(self.model, self.optimizer)
        state = {"model": model_state, "optimizer": optim_state}
        checkpoints.read_shards(path, state, self.dist)
        load_sharded_state(self.model, self.optimizer, state["model"], state["optimizer"])
        self.seconds_before = float(meta.get("seconds", 0.0))
        return int(meta["step"]), list(meta["log"])

    def save(self, step: int, log_rows: list[dict], kind: str) -> Path:
        self.check_owner()
        model_state, optim_state = sharded_state(self.model, self.optimizer)
        return checkpoints.save_checkpoint(
            self.checkpoint_dir, step, {"model": model_state, "optimizer": optim_state},
            {"settings_hash": self.hash, "log": log_rows, "world_size": self.dist.world_size,
             "seconds": round(self.seconds(), 3)},
            kind, keep=self.keep, dist=self.dist)

    def train_step(self, data: np.ndarray, step: int, lr: float) -> float:
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        loss_sum = torch.zeros((), device=self.dist.device)
        per_step = micro_steps(self.s, self.launch, self.dist)
        for last, batch in micro_batches(data, step, self.s, self.launch, self.dist):
            # Gradients are reduced across processes only on the last micro-batch of the step.
            with gradient_sync(self.model, enabled=last):
                with autocast_context(self.dist.device, self.s.dtype, self.fsdp_mixed_precision):
                    loss = self.model(input_ids=batch, labels=batch).loss / per_step
                loss.backward()
            loss_sum += loss.detach()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.s.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return all_reduce_mean(loss_sum, self.dist)

    def averaged_full_state(self) -> tuple[dict, list[int]]:
        """Mean of the merged checkpoints (DataMan's recipe: the last regular ones, the steps
        after the last multiple of checkpoint_every left out), gathered on rank 0."""
        chosen = self.dist.broadcast_object(
            [(step, path) for step, path in
             checkpoints.list_checkpoints(self.checkpoint_dir, checkpoints.REGULAR)
             if step in self.merged] if self.dist.is_main else None)
        if [step for step, _ in chosen] != self.merged:
            raise RuntimeError(f"checkpoints of steps {self.merged} make the final model, but "
                               f"{self.checkpoint_dir} holds {[s for s, _ in chosen]}")
        averaged = checkpoints.averaged_model_state([path for _, path in chosen],
                                                    model_shards(self.model), self.dist)
        set_model_shards(self.model, averaged)
        return full_model_state(self.model), [step for step, _ in chosen]


def pretrain(data_path: str | Path, tokenizer_dir: str | Path, preset: ModelPreset,
             s: TrainSettings, launch: LaunchSettings, out_dir: str | Path,
             checkpoint_dir: str | Path, log_path: str | Path, init_from: str | None = None,
             stop: StopRequest | None = None) -> dict:
    """Train for one epoch, resuming from a matching checkpoint; write the averaged final model.

    When `stop` is requested (the pre-emption signal), a checkpoint is written after the
    current step and `Preempted` is raised.
    """
    from selectlab.tokens import load_tokenizer

    stop = stop or StopRequest()
    dist = setup_distributed()
    tokenizer = load_tokenizer(tokenizer_dir)
    data = np.load(data_path, mmap_mode="r")
    total_steps = check_batch_shape(s, launch, dist, data.shape[0], data.shape[1])
    hash_ = run_hash(data_path, preset, s, init_from)
    if dist.is_main:
        dropped = checkpoints.discard_foreign_checkpoints(checkpoint_dir, hash_)
        if dropped:
            print(f"discarded {dropped} checkpoint(s) of a run with other settings", flush=True)
    dist.barrier()

    model = prepare_model(build_model(preset, tokenizer, s, init_from), s, launch, dist)
    run = Run(model, make_optimizer(model, s), s, launch, dist, Path(checkpoint_dir), hash_,
              total_steps)
    start_step, log_rows = run.resume()
    if start_step and dist.is_main:
        print(f"resumed from step {start_step} of {total_steps}", flush=True)

    snapshot_at = snapshots.snapshot_steps(s.snapshot_fractions, total_steps)
    staging = Path(checkpoint_dir) / snapshots.SNAPSHOTS
    model.train()
    started, tokens_per_step = time.monotonic(), s.global_batch_sequences * s.seq_len
    for step in range(start_step, total_steps):
        lr = learning_rate(step, total_steps, s)
        loss = run.train_step(data, step, lr)
        log_rows.append({"step": step + 1, "tokens": (step + 1) * tokens_per_step,
                         "loss": loss, "lr": lr})
        if dist.is_main and (step % 10 == 0 or step + 1 == total_steps):
            rate = (step + 1 - start_step) * tokens_per_step / max(time.monotonic() - started,
                                                                   1e-9)
            print(f"step {step + 1}/{total_steps} loss {loss:.4f} lr {lr:.2e} "
                  f"{rate:,.0f} tokens/s", flush=True)
        if step + 1 in snapshot_at:
            run.check_owner()
            weights = full_model_state(model)
            if dist.is_main:
                snapshots.save_snapshot(staging, snapshot_at[step + 1], weights,
                                        unwrap(model).config, tokenizer, hash_, step + 1,
                                        log_rows[-1]["tokens"])
            dist.barrier()
        finished = step + 1 == total_steps
        stopping = not finished and dist.any_rank(stop.requested)
        if (step + 1) % s.checkpoint_every == 0 or finished:
            run.save(step + 1, log_rows, checkpoints.REGULAR)
        elif stopping:
            run.save(step + 1, log_rows, checkpoints.PREEMPTION)
        if stopping:
            dist.shutdown()
            raise Preempted(f"pre-empted at step {step + 1} of {total_steps}: checkpoint saved "
                            f"in {checkpoint_dir}; running the job again resumes from it")

    state, steps = run.averaged_full_state()
    card = {}
    run.check_owner()
    if dist.is_main:
        card = write_final_model(out_dir, unwrap(model).config, state, steps, tokenizer, s,
                                 log_rows, total_steps, seconds=run.seconds(),
                                 device=str(dist.device),
                                 gpus=dist.world_size if dist.device.type == "cuda" else 0,
                                 snapshot_dir=staging, settings_hash=hash_)
        write_log(log_path, log_rows)
    dist.shutdown()
    return card


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    return getattr(model, "module", model)
