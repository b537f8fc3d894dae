"""The one training loop every rater shares, in two modes.

- Frozen backbone (the offline default): every training text's feature vector is computed once,
  then only the heads train, on those cached vectors. Fast on a CPU.
- Full fine-tuning (`train_backbone: true`, the GPU path at full scale): each step runs the
  backbone on the step's texts, chunked as at inference, and updates backbone and heads.

A rater's `Objective` says which texts a batch of training examples reads, how to turn the
heads' outputs for those texts into a loss, and how good the outputs are on validation examples
(its early-stopping score, higher is better: QuRater's mean pairwise accuracy over criteria,
QuRating appendix B.2; the other raters' negative loss), so pairwise (QuRater) and pointwise
raters share this loop. The caller splits the validation examples off beforehand
(`split_validation`, by the objective's unit: a pair, a document), so that no pair or
document, and no up-sampled copy of one, is on both sides. The loop keeps the state with the
best validation score and stops after `patience` epochs without improvement.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from selectlab.devices import compute_dtype
from selectlab.raters.backbone import Backbone
from selectlab.raters.heads import RaterHeads

log = logging.getLogger(__name__)


class Objective(Protocol):
    def texts_of(self, examples: np.ndarray) -> np.ndarray:
        """Indices of the texts that `examples` read."""
        ...

    def loss(self, outputs: dict[str, torch.Tensor], rows: np.ndarray,
             examples: np.ndarray) -> torch.Tensor:
        """Mean loss over `examples`; text t's outputs sit at row `rows[t]` of `outputs`."""
        ...

    def units_of(self, examples: np.ndarray) -> np.ndarray:
        """The unit each example belongs to; a unit is never split between training and
        validation."""
        ...

    def validation_score(self, outputs: dict[str, torch.Tensor], rows: np.ndarray,
                         examples: np.ndarray) -> float:
        """How good the outputs are on `examples` (higher is better): early stopping's score."""
        ...


@dataclass(frozen=True)
class TrainSettings:
    epochs: int = 200
    lr: float = 1e-2
    weight_decay: float = 0.0
    batch_size: int = 64  # training examples per step
    forward_batch_size: int = 64  # chunks per backbone forward pass
    patience: int = 20
    seed: int = 0
    autocast_dtype: str = "float32"  # full fine-tuning only


@dataclass
class History:
    train_loss: list[float] = field(default_factory=list)
    validation_loss: list[float] = field(default_factory=list)
    validation_score: list[float] = field(default_factory=list)
    best_epoch: int = -1

    def as_dict(self) -> dict:
        best = self.best_epoch >= 0
        return {"epochs_run": len(self.train_loss), "best_epoch": self.best_epoch,
                "best_validation_score": self.validation_score[self.best_epoch] if best else None,
                "best_validation_loss": self.validation_loss[self.best_epoch] if best else None,
                "final_train_loss": self.train_loss[-1] if self.train_loss else None}


def optimizer_for(module: torch.nn.Module, settings: TrainSettings) -> torch.optim.Optimizer:
    """AdamW with weight decay on weight matrices only: a decayed bias would pull every
    prediction towards zero (a regression head's mean, a classifier's priors)."""
    params = [p for p in module.parameters() if p.requires_grad]
    decayed = [p for p in params if p.dim() >= 2]
    kept = [p for p in params if p.dim() < 2]
    return torch.optim.AdamW([{"params": decayed, "weight_decay": settings.weight_decay},
                              {"params": kept, "weight_decay": 0.0}], lr=settings.lr)


def split_validation(examples: np.ndarray, units: np.ndarray, fraction: float,
                     seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(fit, validation) parts of `examples`: `fraction` of the distinct units (drawn with
    `seed`) go to validation with all their examples; at least one unit on each side when there
    are two or more and fraction > 0."""
    examples, units = np.asarray(examples), np.asarray(units)
    distinct = np.unique(units)
    shuffled = np.random.default_rng(seed).permutation(distinct)
    n_val = int(round(len(shuffled) * fraction))
    if fraction > 0 and len(shuffled) >= 2:
        n_val = min(max(n_val, 1), len(shuffled) - 1)
    held = np.isin(units, shuffled[:n_val])
    return np.sort(examples[~held]), np.sort(examples[held])


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Heads on cached features are tiny matrix products: extra threads only add contention
    (tens of times slower on a busy machine), so they run on one."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def fit_frozen(features: torch.Tensor, heads: RaterHeads, objective: Objective,
               fit: np.ndarray, validation: np.ndarray, settings: TrainSettings) -> History:
    """Train `heads` on cached text features (one row per text)."""
    with one_thread():
        return _fit_frozen(features, heads, objective, fit, validation, settings)


def _fit_frozen(features: torch.Tensor, heads: RaterHeads, objective: Objective,
                fit: np.ndarray, validation: np.ndarray, settings: TrainSettings) -> History:
    heads.fit_normalizer(features[np.unique(objective.texts_of(fit))])
    optimizer = optimizer_for(heads, settings)
    generator = np.random.default_rng(settings.seed)

    def outputs_for(batch: np.ndarray) -> tuple[dict[str, torch.Tensor], np.ndarray]:
        needed = np.unique(objective.texts_of(batch))
        rows = np.full(len(features), -1)
        rows[needed] = np.arange(len(needed))
        return heads(features[needed]), rows

    def batch_loss(batch: np.ndarray) -> torch.Tensor:
        return objective.loss(*outputs_for(batch), batch)

    def validate() -> tuple[float, float]:
        with torch.no_grad():
            outputs, rows = outputs_for(validation)
            return (objective.loss(outputs, rows, validation).item(),
                    objective.validation_score(outputs, rows, validation))

    def train_epoch() -> float:
        return _train_epoch(_batches(fit, settings.batch_size, generator), batch_loss, optimizer)

    return _run_epochs(heads, train_epoch, validate, len(validation) > 0, settings)


def fit_full(backbone: Backbone, heads: RaterHeads, texts: Sequence[str], objective: Objective,
             fit: np.ndarray, validation: np.ndarray, settings: TrainSettings) -> History:
    """Fine-tune backbone and heads together on the texts the examples read."""
    model = torch.nn.ModuleDict({"backbone": backbone, "heads": heads})
    optimizer = optimizer_for(model, settings)
    generator = np.random.default_rng(settings.seed)
    device = backbone.device

    def outputs_for(batch: np.ndarray) -> tuple[dict[str, torch.Tensor], np.ndarray]:
        needed = np.unique(objective.texts_of(batch))
        rows = np.full(len(texts), -1)
        rows[needed] = np.arange(len(needed))
        dtype = compute_dtype(settings.autocast_dtype, device)
        with torch.autocast(device.type, dtype=getattr(torch, dtype), enabled=dtype != "float32"):
            features, _ = backbone.features([texts[i] for i in needed],
                                            settings.forward_batch_size)
        return heads(features.float()), rows

    def batch_loss(batch: np.ndarray) -> torch.Tensor:
        return objective.loss(*outputs_for(batch), batch)

    def validate() -> tuple[float, float]:
        """Loss and score over all validation examples: each text is read once, its outputs
        gathered, then scored together (a mean of per-batch accuracies would weigh batches)."""
        model.eval()
        with torch.no_grad():
            needed = np.unique(objective.texts_of(validation))
            rows = np.full(len(texts), -1)
            rows[needed] = np.arange(len(needed))
            parts = [outputs_for(chunk)[0] for chunk in np.array_split(
                needed, max(1, math.ceil(len(needed) / settings.batch_size)))]
            outputs = {name: torch.cat([part[name] for part in parts]) for name in parts[0]}
            result = (objective.loss(outputs, rows, validation).item(),
                      objective.validation_score(outputs, rows, validation))
        model.train()
        return result

    def train_epoch() -> float:
        return _train_epoch(_batches(fit, settings.batch_size, generator), batch_loss, optimizer)

    model.train()
    history = _run_epochs(model, train_epoch, validate, len(validation) > 0, settings)
    model.eval()
    return history


def _train_epoch(batches: list[np.ndarray], batch_loss, optimizer) -> float:
    """One optimiser step per batch; the mean training loss."""
    losses = []
    for batch in batches:
        optimizer.zero_grad()
        loss = batch_loss(batch)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return float(np.mean(losses))


def _batches(examples: np.ndarray, size: int, generator) -> list[np.ndarray]:
    order = generator.permutation(examples) if generator is not None else examples
    return [order[start:start + size] for start in range(0, len(order), size)]


def _run_epochs(module: torch.nn.Module, train_epoch, validate_fn, validate: bool,
                settings: TrainSettings) -> History:
    """Epochs until `settings.epochs` or `patience` epochs without a better validation score;
    `module` ends in the state of its best validation score (the last state without one)."""
    history = History()
    best, best_state, waited = -math.inf, None, 0
    for epoch in range(settings.epochs):
        history.train_loss.append(train_epoch())
        if not validate:
            continue
        loss, score = validate_fn()
        history.validation_loss.append(loss)
        history.validation_score.append(score)
        if score > best:
            best, best_state, waited = score, copy.deepcopy(module.state_dict()), 0
            history.best_epoch = epoch
        else:
            waited += 1
            if waited >= settings.patience:
                break
    if best_state is not None:
        module.load_state_dict(best_state)
    log.info("trained %d epochs, best validation score %.4f at epoch %d",
             len(history.train_loss), best, history.best_epoch)
    return history
