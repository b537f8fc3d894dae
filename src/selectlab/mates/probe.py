"""Oracle data influence: how much one optimizer step on a unit lowers the reference loss.

MATES (Yu et al., 2024, Sec. 3) probes the current pre-training model locally: from the stage's
checkpoint it trains one step on a single candidate and measures the model's loss on the
reference task (LAMBADA there) before and after. The oracle influence of a unit here is

    influence = L_ref(model) - L_ref(model after one AdamW step on the unit)

positive when the step helps the reference set, negative when it hurts. The step is the
pre-training recipe's: AdamW with its betas and weight decay (none on norms and biases), its
gradient clipping and autocast, at the learning rate the run's schedule has where the stage ends,
from the weights and optimizer moments the stage ended with (its last training checkpoint, as
MATES resumes its checkpoint for every probe). Every unit is probed from that same state.

Probe units are a seeded uniform sample of the documents no earlier stage trained on, drawn from
the meta sidecars of (a seeded subset of) the shards; a probe job takes every `parts`-th of them,
so the jobs of one stage run in parallel and together cover the sample.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from selectlab.mates.units import is_excluded

log = logging.getLogger(__name__)
IGNORE = -100  # label of padding positions (not trained on)
META_COLUMNS = ["id", "set_name", "n_tokens", "token_offset"]


def sample_units(meta_paths: Sequence[str | Path], probes: int, seed: int,
                 excluded: np.ndarray) -> pd.DataFrame:
    """`probes` documents drawn uniformly without replacement from the shards' documents that
    are not `excluded`, in draw order: shard, row and the meta columns."""
    counts = np.array([pq.ParquetFile(p).metadata.num_rows for p in meta_paths], dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        raise ValueError("the pool is empty: nothing to probe")
    # A pool of up to 50M documents is permuted once; a larger one is drawn from afresh each
    # round, repeats dropped.
    order = np.random.default_rng(seed).permutation(total) if total <= 50_000_000 else None
    chosen = pd.DataFrame()
    start, take = 0, probes
    while len(chosen) < probes and start < total:
        if order is not None:
            picks = order[start:start + take]
        else:
            picks = np.random.default_rng([seed, start]).choice(total, size=take, replace=False)
        start += take
        frame = _rows_of(meta_paths, counts, picks)
        frame = frame[~is_excluded(frame["id"].tolist(), excluded)]
        chosen = pd.concat([chosen, frame]).drop_duplicates(["shard", "row"])
        take = max(probes - len(chosen), 1) * 2
    if len(chosen) < probes:
        raise ValueError(f"only {len(chosen)} documents are left to probe, {probes} asked for")
    return chosen.head(probes).reset_index(drop=True)


def _rows_of(meta_paths: Sequence[str | Path], counts: np.ndarray,
             picks: np.ndarray) -> pd.DataFrame:
    """Meta rows of global positions `picks`, in the order given."""
    bounds = np.concatenate([[0], np.cumsum(counts)])
    shard_of = np.searchsorted(bounds, picks, side="right") - 1
    frames = []
    for number in np.unique(shard_of):
        where = np.flatnonzero(shard_of == number)
        rows = picks[where] - bounds[number]
        meta = pq.read_table(meta_paths[number], columns=META_COLUMNS).take(rows).to_pandas()
        meta.insert(0, "shard", Path(meta_paths[number]).name.removesuffix(".parquet"))
        meta.insert(1, "row", rows)
        meta["draw"] = where
        frames.append(meta)
    return pd.concat(frames).sort_values("draw").drop(columns="draw")


def part_of(sample: pd.DataFrame, part: int, parts: int) -> pd.DataFrame:
    if not 0 <= part < parts:
        raise ValueError(f"probe part {part} of {parts} does not exist")
    return sample.iloc[part::parts].reset_index(drop=True)


def unit_rows(token_ids: np.ndarray, seq_len: int, pad_id: int):
    """A unit's tokens as training rows of `seq_len`, the last one padded (padding is not
    trained on): (input ids, labels) LongTensors. A row whose tokens end after its first has
    nothing to predict and is left out."""
    import torch

    if len(token_ids) < 2:
        raise ValueError("a unit needs at least two tokens")
    n_rows = -(-len(token_ids) // seq_len)
    ids = torch.full((n_rows * seq_len,), pad_id, dtype=torch.long)
    labels = torch.full((n_rows * seq_len,), IGNORE, dtype=torch.long)
    flat = torch.as_tensor(np.asarray(token_ids, dtype=np.int64))
    ids[:len(flat)] = flat
    labels[:len(flat)] = flat
    ids, labels = ids.view(n_rows, seq_len), labels.view(n_rows, seq_len)
    keep = (labels != IGNORE).sum(dim=1) > 1
    return ids[keep], labels[keep]


def reference_windows(texts: Sequence[str], tokenizer, seq_len: int, max_tokens: int,
                      seed: int):
    """The reference set as rows of `seq_len` tokens: its documents in a seeded random order
    (a held-out split is stored source by source; the cap must not keep only the first source),
    joined with EOS, the first `max_tokens` tokens kept, cut into whole rows (one shorter row
    when there are fewer)."""
    import torch

    from selectlab.tokens import encode_texts

    order = np.random.default_rng(seed).permutation(len(texts))
    stream: list[int] = []
    for ids in encode_texts(tokenizer, [texts[i] for i in order]):
        stream += ids + [tokenizer.eos_token_id]
        if len(stream) >= max_tokens:
            break
    stream = stream[:max_tokens]
    if len(stream) < 2:
        raise ValueError("the reference set holds no text")
    width = min(seq_len, len(stream))
    rows = np.asarray(stream[:len(stream) // width * width], dtype=np.int64).reshape(-1, width)
    return torch.as_tensor(rows)


@dataclass(frozen=True)
class Step:
    lr: float
    beta1: float
    beta2: float
    weight_decay: float
    grad_clip: float


def load_stage_training_state(checkpoint_dir: str | Path, model) -> dict:
    """Loads the newest checkpoint a pretraining job left in `checkpoint_dir`
    (selectlab.train.checkpoints' sharded format) into `model`, in one process, and returns its
    optimizer state in torch's own layout for `make_optimizer`'s parameter groups, which the
    probes' optimizers share."""
    import torch

    from selectlab.train import checkpoints
    from selectlab.train.distributed import Distributed, load_sharded_state, sharded_state
    from selectlab.train.loop import TrainSettings, make_optimizer

    found = checkpoints.list_checkpoints(checkpoint_dir)
    if not found:
        raise FileNotFoundError(f"{checkpoint_dir} holds no training checkpoint: the probe needs "
                                "the stage's last one (its optimizer state); rerun that stage's "
                                "pretrain job")
    optimizer = make_optimizer(model, TrainSettings(seq_len=1, global_batch_sequences=1, lr=0.0))
    model_state, optim_state = sharded_state(model, optimizer)
    state = {"model": model_state, "optimizer": optim_state}
    one_process = Distributed(rank=0, local_rank=0, world_size=1, device=torch.device("cpu"))
    checkpoints.read_shards(found[-1][1], state, one_process)
    load_sharded_state(model, optimizer, state["model"], state["optimizer"])
    return optimizer.state_dict()


class Prober:
    """One model, its reference rows, and one-step probes that always start from the same
    weights and optimizer state."""

    def __init__(self, model, reference, step: Step, dtype: str, device: str,
                 optimizer_state: dict | None = None, batch_rows: int = 16):
        import torch

        from selectlab.train.loop import TrainSettings

        self.model = model.to(device)
        self.reference = reference.to(device)
        self.device = torch.device(device)
        self.dtype = dtype
        self.batch_rows = batch_rows
        self.settings = TrainSettings(seq_len=int(reference.shape[1]), global_batch_sequences=1,
                                      lr=step.lr, weight_decay=step.weight_decay,
                                      beta1=step.beta1, beta2=step.beta2, grad_clip=step.grad_clip,
                                      dtype=dtype)
        self.initial = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self.optimizer_state = optimizer_state
        self.reference_tokens = int(self.reference[:, 1:].numel())
        self.before = self.reference_loss()

    def reference_loss(self) -> float:
        """Mean next-token NLL over the reference rows."""
        import torch
        import torch.nn.functional as F

        from selectlab.train.loop import autocast_context

        self.model.eval()
        total = 0.0
        with torch.no_grad():
            for start in range(0, len(self.reference), self.batch_rows):
                rows = self.reference[start:start + self.batch_rows]
                with autocast_context(self.device, self.dtype):
                    logits = self.model(input_ids=rows).logits
                total += float(F.cross_entropy(logits[:, :-1].float().reshape(-1, logits.shape[-1]),
                                               rows[:, 1:].reshape(-1), reduction="sum"))
        return total / self.reference_tokens

    def influence(self, ids, labels) -> tuple[float, float, float]:
        """(influence, reference loss after the step, the unit's own loss before it)."""
        import torch

        from selectlab.train.loop import autocast_context, make_optimizer

        self.model.load_state_dict(self.initial)
        self.model.train()
        optimizer = make_optimizer(self.model, self.settings)
        if self.optimizer_state is not None:
            # The step changes the moments in place: each probe gets its own copy.
            optimizer.load_state_dict(copy.deepcopy(self.optimizer_state))
            for group in optimizer.param_groups:
                group["lr"] = self.settings.lr
        with autocast_context(self.device, self.dtype):
            loss = self.model(input_ids=ids.to(self.device), labels=labels.to(self.device)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.settings.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        after = self.reference_loss()
        return self.before - after, after, float(loss.detach())


def unit_tokens(tokens_dir: str | Path, units: pd.DataFrame, unit_length: int) -> list[np.ndarray]:
    """Each unit's first `unit_length` tokens from the shards' token arrays."""
    arrays: dict[str, np.ndarray] = {}
    out = []
    for shard, offset, n in zip(units["shard"], units["token_offset"], units["n_tokens"],
                                strict=True):
        if shard not in arrays:
            arrays[shard] = np.load(Path(tokens_dir) / f"{shard}.npy", mmap_mode="r")
        out.append(np.asarray(arrays[shard][offset:offset + min(int(n), unit_length)]))
    return out


def probe_units(prober: Prober, units: pd.DataFrame, token_lists: list[np.ndarray], tokenizer,
                seq_len: int) -> pd.DataFrame:
    """The oracle influence of every unit, with the unit's decoded text for the influence
    model."""
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    rows = []
    started = time.perf_counter()
    for number, (unit, ids) in enumerate(zip(units.itertuples(index=False), token_lists,
                                             strict=True)):
        inputs, labels = unit_rows(ids, seq_len, pad)
        influence, after, own = prober.influence(inputs, labels)
        rows.append({"shard": unit.shard, "row": int(unit.row), "id": unit.id,
                     "set_name": unit.set_name, "unit_tokens": len(ids),
                     "text": tokenizer.decode(ids.tolist()), "influence": influence,
                     "reference_loss_after": after, "unit_loss": own})
        if number % 50 == 0:
            log.info("probe %d/%d: influence %+.5f (%.2f s per probe)", number + 1, len(units),
                     influence, (time.perf_counter() - started) / (number + 1))
    return pd.DataFrame(rows)
