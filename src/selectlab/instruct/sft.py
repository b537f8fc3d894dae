"""Supervised fine-tuning of a pretrained variant on the instruction pairs.

Every variant gets the same fine-tuning, as both papers compare them (DataMan section 5.2 and
Figure 2: identical SFT for every model): the same pairs, template, settings and order. The
pairs are shuffled once per epoch with the settings' seed and cut into global batches of
`batch_sequences` examples (a short last batch is dropped), accumulated over micro-batches.
The loss is the mean cross-entropy over the response tokens of the whole global batch (prompt
tokens and padding are not trained on). The schedule, optimiser and mixed precision are
pretraining's (`selectlab.train.loop`): linear warmup, cosine decay, AdamW without decay on
norms, bf16 autocast. The job runs on one device; the papers' 1.3B models fine-tune on one GPU.

Resuming follows pretraining, with its checkpoint format (selectlab.train.checkpoints, written
by one process): a checkpoint (model, optimiser and RNG state; step and log in its run.json)
every `checkpoint_every` steps, stamped with the hash of everything that determines the run
(settings, template, the training file and the pretrained model's weights file); a killed job
resumes from its newest matching checkpoint, and a changed run discards the others. The result
is the final model, saved with its tokenizer and a card.

The card's `cost` (selectlab.flops) counts the training FLOPs of every step, a resumed run's
earlier ones included: 6·N·D + attention with D the tokens fed forward and backward (each chosen
example's prompt and response; padding left out, so the count does not depend on how a batch is
cut into micro-batches) and n_ctx the `max_seq_len` sequences are cut to. D is derived from the
seeded batch order, so a resumed run reports what an uninterrupted one does.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
import torch

from selectlab.flops import cost_record, module_shape, training_flops
from selectlab.instruct.template import IGNORE, ChatTemplate, training_example
from selectlab.shards import atomic_path, write_json
from selectlab.train import checkpoints
from selectlab.train.distributed import Distributed, load_sharded_state, sharded_state
from selectlab.train.loop import autocast_context, learning_rate, make_optimizer

LOG_COLUMNS = ["step", "epoch", "examples", "tokens", "loss", "lr", "seconds"]


@dataclass(frozen=True)
class SFTSettings:
    epochs: int
    batch_sequences: int
    micro_batch_sequences: int
    max_seq_len: int
    lr: float
    min_lr_ratio: float = 0.0
    warmup_fraction: float = 0.03
    weight_decay: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.999
    grad_clip: float = 1.0
    dtype: str = "bf16"
    checkpoint_every: int = 100
    seed: int = 0

    @classmethod
    def from_dict(cls, params: dict) -> SFTSettings:
        unknown = set(params) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown fine-tuning settings: {sorted(unknown)}")
        return cls(**params)

    def steps_per_epoch(self, examples: int) -> int:
        if self.batch_sequences % self.micro_batch_sequences:
            raise ValueError(f"batch_sequences {self.batch_sequences} is not a multiple of "
                             f"micro_batch_sequences {self.micro_batch_sequences}")
        steps = examples // self.batch_sequences
        if steps == 0:
            raise ValueError(f"{examples} training pairs are fewer than one batch "
                             f"({self.batch_sequences})")
        return steps


Example = tuple[list[int], list[int]]


def encode_pairs(table: pd.DataFrame, tokenizer, template: ChatTemplate,
                 max_len: int) -> list[Example]:
    return [training_example(tokenizer, template, row.instruction, row.response, max_len)
            for row in table.itertuples(index=False)]


def batch_indices(step: int, n_examples: int, s: SFTSettings) -> tuple[int, list[int]]:
    """(epoch, example indices) of global batch `step`; each epoch has its own seeded order."""
    per_epoch = s.steps_per_epoch(n_examples)
    epoch, within = divmod(step, per_epoch)
    order = list(range(n_examples))
    random.Random(f"{s.seed}:sft:epoch{epoch}").shuffle(order)
    return epoch, order[within * s.batch_sequences:(within + 1) * s.batch_sequences]


def collate(examples: list[Example], pad_id: int, device) -> dict[str, torch.Tensor]:
    """Right-padded input ids, attention mask and labels (IGNORE on padding)."""
    width = max(len(ids) for ids, _ in examples)
    ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    for row, (tokens, targets) in enumerate(examples):
        ids[row, :len(tokens)] = torch.tensor(tokens)
        labels[row, :len(targets)] = torch.tensor(targets)
        mask[row, :len(tokens)] = 1
    return {"input_ids": ids.to(device), "attention_mask": mask.to(device),
            "labels": labels.to(device)}


def trained_tokens(examples: list[Example]) -> int:
    """Response tokens a batch trains on (the first position predicts nothing)."""
    return sum(sum(label != IGNORE for label in labels[1:]) for _, labels in examples)


def processed_tokens(examples: list[Example], s: SFTSettings, steps: int) -> int:
    """Tokens the first `steps` global batches feed forward and backward (prompt and response
    of each chosen example, no padding), from the settings' batch order alone."""
    return sum(len(examples[i][0]) for step in range(steps)
               for i in batch_indices(step, len(examples), s)[1])


def sft_cost(model, examples: list[Example], s: SFTSettings, steps: int, seconds: float,
             device: str, gpus: int, response_tokens: int) -> dict:
    """The card's cost entry: training FLOPs of all `steps` steps (see the module docstring)."""
    shape = module_shape(model, s.max_seq_len)
    tokens = processed_tokens(examples, s, steps)
    return cost_record("train", training_flops(shape, tokens), seconds=seconds, gpus=gpus,
                       device=device, shape=shape, tokens=tokens,
                       response_tokens=response_tokens)


def summed_loss(model, batch: dict[str, torch.Tensor], device, dtype: str) -> torch.Tensor:
    with autocast_context(device, dtype, fsdp_mixed_precision=False):
        logits = model(input_ids=batch["input_ids"],
                       attention_mask=batch["attention_mask"]).logits
    return torch.nn.functional.cross_entropy(
        logits[:, :-1].float().reshape(-1, logits.shape[-1]),
        batch["labels"][:, 1:].reshape(-1), ignore_index=IGNORE, reduction="sum")


def run_hash(s: SFTSettings, template: ChatTemplate, train_path, model_dir) -> str:
    def identity(path: Path) -> list:
        stat = os.stat(path)
        return [str(path), stat.st_size, stat.st_mtime_ns]

    weights = sorted(Path(model_dir).glob("*.safetensors")) or sorted(Path(model_dir).glob("*"))
    return checkpoints.settings_hash({
        "settings": asdict(s), "template": asdict(template), "data": identity(Path(train_path)),
        "model": [identity(path) for path in weights if path.is_file()]})


def training_state(model, optimizer) -> dict:
    """What a checkpoint holds besides its run.json (also the template a resume loads into)."""
    model_state, optim_state = sharded_state(model, optimizer)
    return {"model": model_state, "optimizer": optim_state, "rng": torch.get_rng_state()}


def finetune(model_dir: str | Path, train_path: str | Path, template: ChatTemplate,
             s: SFTSettings, out_dir: str | Path, checkpoint_dir: str | Path,
             log_path: str | Path, device: str = "cpu", gpus: int = 0) -> dict:
    """Fine-tune the model in `model_dir` on `train_path`'s pairs; see the module docstring."""
    from transformers import LlamaForCausalLM

    from selectlab.tokens import load_tokenizer

    tokenizer = load_tokenizer(model_dir)
    model = LlamaForCausalLM.from_pretrained(str(model_dir), torch_dtype=torch.float32)
    context = model.config.max_position_embeddings
    if s.max_seq_len > context:
        raise ValueError(f"max_seq_len {s.max_seq_len} exceeds the model's context {context}")
    examples = encode_pairs(pd.read_parquet(train_path), tokenizer, template, s.max_seq_len)
    total_steps = s.epochs * s.steps_per_epoch(len(examples))
    stamp = run_hash(s, template, train_path, model_dir)
    dropped = checkpoints.discard_foreign_checkpoints(checkpoint_dir, stamp)
    if dropped:
        print(f"discarded {dropped} checkpoint(s) of a run with other settings", flush=True)
    model.to(device)
    optimizer = make_optimizer(model, s)
    one_process = Distributed(rank=0, local_rank=0, world_size=1, device=torch.device(device))
    start_step, log_rows = 0, []
    resume = checkpoints.latest_resumable(checkpoint_dir, stamp)
    if resume is not None:
        path, meta = resume
        state = training_state(model, optimizer)
        checkpoints.read_shards(path, state, one_process)
        load_sharded_state(model, optimizer, state["model"], state["optimizer"])
        torch.set_rng_state(state["rng"])
        start_step, log_rows = int(meta["step"]), list(meta["log"])
        print(f"resumed from step {start_step} of {total_steps}", flush=True)

    model.train()
    started = time.time() - (log_rows[-1]["seconds"] if log_rows else 0.0)
    for step in range(start_step, total_steps):
        lr = learning_rate(step, total_steps, s)
        for group in optimizer.param_groups:
            group["lr"] = lr
        epoch, indices = batch_indices(step, len(examples), s)
        chosen = [examples[i] for i in indices]
        tokens = max(trained_tokens(chosen), 1)
        loss_sum = 0.0
        for start in range(0, len(chosen), s.micro_batch_sequences):
            micro = collate(chosen[start:start + s.micro_batch_sequences],
                            tokenizer.pad_token_id, device)
            loss = summed_loss(model, micro, torch.device(device), s.dtype) / tokens
            loss.backward()
            loss_sum += float(loss.detach())
        torch.nn.utils.clip_grad_norm_(model.parameters(), s.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        log_rows.append({"step": step + 1, "epoch": epoch + 1,
                         "examples": (step + 1) * s.batch_sequences, "tokens": tokens,
                         "loss": loss_sum, "lr": lr, "seconds": round(time.time() - started, 3)})
        if step % 10 == 0 or step + 1 == total_steps:
            print(f"step {step + 1}/{total_steps} epoch {epoch + 1} loss {loss_sum:.4f} "
                  f"lr {lr:.2e}", flush=True)
        if (step + 1) % s.checkpoint_every == 0 or step + 1 == total_steps:
            checkpoints.save_checkpoint(
                checkpoint_dir, step + 1, training_state(model, optimizer),
                {"settings_hash": stamp, "log": log_rows}, checkpoints.REGULAR, keep=1,
                dist=one_process)

    card = {"pairs": len(examples), "steps": total_steps, "epochs": s.epochs,
            "final_loss": log_rows[-1]["loss"], "template": asdict(template),
            "settings": asdict(s), "base_model": str(model_dir),
            "cost": sft_cost(model, examples, s, total_steps, time.time() - started, device,
                             gpus, sum(row["tokens"] for row in log_rows))}
    save_model(model.cpu(), tokenizer, out_dir, card)
    with atomic_path(log_path) as tmp:
        pd.DataFrame(log_rows, columns=LOG_COLUMNS).to_csv(tmp, index=False)
    return card


def save_model(model, tokenizer, out_dir: str | Path, card: dict) -> None:
    out_dir = Path(out_dir)
    tmp = out_dir.with_name(f".{out_dir.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    write_json(tmp / "sft_card.json", card)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.replace(tmp, out_dir)
