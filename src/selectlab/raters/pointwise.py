"""Pointwise raters: DataMan, PRRC, FineWeb-Edu-style and WanjuanCC-style heads.

Each judged document is one training example with one target per head: a class index for class
heads (DataMan's 14 ratings 1-5 and 15 domains, PRRC's four ratings 0-5), 0/1 for binary heads
(advertisement, fluency), a number for the regression head (educational score 0-5). A target
the judge failed to give is missing for that head only; the head's loss skips it. The loss is
the mean over heads of each head's mean loss: cross-entropy, binary cross-entropy, squared
error.

DataMan up-samples documents rated low overall (< 3) in its training split, fourfold in the
paper (DataMan appendix B.2, "4-fold up-sampling ratio"), so that the rare low ratings are
learned. The documents are split into training, validation and held-out parts first and only
the training part is up-sampled: no copy of a document is on two sides.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from selectlab.raters import metrics
from selectlab.raters.spec import BINARY, CLASSES, DOMAIN, REGRESSION, Head

OVERALL = "overall_score"


@dataclass(frozen=True)
class PointData:
    texts: list[str]
    doc_ids: np.ndarray
    targets: dict[str, np.ndarray]  # per head, float64, NaN where missing

    def __len__(self) -> int:
        return len(self.texts)


def point_data(labels: pd.DataFrame, heads: list[Head]) -> tuple[PointData, dict]:
    """Targets per head from a pointwise labels table, and how many are missing per head."""
    needed = ["doc_id", "text", *[h.name for h in heads]]
    missing = [c for c in needed if c not in labels.columns]
    if missing:
        raise ValueError(f"labels lack columns {missing}")
    duplicated = labels["doc_id"][labels["doc_id"].duplicated()].unique().tolist()
    if duplicated:
        raise ValueError(f"{len(duplicated)} documents are labelled twice, e.g. {duplicated[:3]}")
    targets = {h.name: _targets(h, labels[h.name]) for h in heads}
    counts = {name: int(np.isnan(values).sum()) for name, values in targets.items()}
    data = PointData(labels["text"].astype(str).tolist(), labels["doc_id"].to_numpy(), targets)
    return data, {"rows": len(labels), "missing_targets": counts}


def _targets(head: Head, column: pd.Series) -> np.ndarray:
    present = column.notna().to_numpy()
    values = np.full(len(column), np.nan)
    if head.kind == CLASSES:
        index = {label: i for i, label in enumerate(head.classes)}
        raw = column[present].map(lambda v: v if isinstance(v, str) else int(v))
        unknown = sorted(set(raw) - set(index), key=str)
        if unknown:
            raise ValueError(f"{head.name}: labels {unknown} are not among {list(head.classes)}")
        values[present] = raw.map(index).to_numpy(np.float64)
    elif head.kind == BINARY:
        raw = column[present].astype(float)
        if not raw.isin([0.0, 1.0]).all():
            raise ValueError(f"{head.name}: binary labels must be 0 or 1")
        values[present] = raw.to_numpy()
    else:
        values[present] = column[present].astype(float).to_numpy()
    return values


def overall_scores(data: PointData, heads: list[Head]) -> np.ndarray:
    """DataMan's Overall Score per document (inf where the judge gave none)."""
    overall = next(h for h in heads if h.name == OVERALL)
    index = data.targets[OVERALL]
    known = ~np.isnan(index)
    scores = np.full(len(index), np.inf)
    scores[known] = np.asarray(overall.classes, dtype=float)[index[known].astype(int)]
    return scores


def upsample_low_scores(examples: np.ndarray, scores: np.ndarray, factor: int,
                        below: float = 3) -> np.ndarray:
    """`examples` with every one whose score is below `below` present `factor` times in all."""
    if factor < 1:
        raise ValueError(f"up-sampling factor must be >= 1, got {factor}")
    low = examples[np.asarray(scores)[examples] < below]
    return np.sort(np.concatenate([examples] + [low] * (factor - 1)))


class PointwiseObjective:
    def __init__(self, data: PointData, heads: list[Head]):
        self.heads = heads
        self.targets = {name: torch.tensor(v, dtype=torch.float32)
                        for name, v in data.targets.items()}

    def texts_of(self, examples: np.ndarray) -> np.ndarray:
        return np.asarray(examples)

    def units_of(self, examples: np.ndarray) -> np.ndarray:
        """An example is a document (an up-sampled copy is the same document)."""
        return np.asarray(examples)

    def validation_score(self, outputs: dict[str, torch.Tensor], rows: np.ndarray,
                         examples: np.ndarray) -> float:
        return -float(self.loss(outputs, rows, examples))

    def loss(self, outputs: dict[str, torch.Tensor], rows: np.ndarray,
             examples: np.ndarray) -> torch.Tensor:
        where = torch.as_tensor(rows[examples])
        losses = []
        for h in self.heads:
            target = self.targets[h.name][torch.as_tensor(examples)]
            keep = ~torch.isnan(target)
            if not keep.any():
                continue
            output = outputs[h.name][where][keep.to(where.device)]
            target = target[keep].to(output.device)
            if h.kind == CLASSES:
                losses.append(F.cross_entropy(output, target.long()))
            elif h.kind == BINARY:
                losses.append(F.binary_cross_entropy_with_logits(output, target))
            else:
                losses.append(F.mse_loss(output, target))
        if not losses:
            raise ValueError("a training batch has no targets at all")
        return torch.stack(losses).mean()


def evaluate(rater: str, heads: list[Head], predicted: dict[str, np.ndarray],
             data: PointData, rows: np.ndarray) -> dict:
    """Held-out metrics of one rater from its sidecar predictions on `rows` of `data`."""
    result: dict = {}
    for h in heads:
        gold = data.targets[h.name][rows]
        keep = ~np.isnan(gold)
        guess = np.asarray(predicted[h.name])[rows][keep]
        if h.kind == CLASSES:
            gold_labels = np.asarray(h.classes, dtype=object)[gold[keep].astype(int)]
            result[h.name] = _class_metrics(rater, h, gold_labels, guess)
        elif h.kind == BINARY:
            result[h.name] = _binary_metrics(gold[keep].astype(int),
                                             (guess.astype(float) >= 0.5).astype(int))
        elif h.kind == REGRESSION:
            result[h.name] = _regression_metrics(gold[keep], guess.astype(float))
    overall = next((h for h in heads if h.name == OVERALL), None)
    if rater == "dataman" and overall is not None:
        gold = data.targets[overall.name][rows]
        keep = ~np.isnan(gold)
        gold_scores = np.asarray(overall.classes)[gold[keep].astype(int)]
        result["overall_score_analysis"] = metrics.overall_score_analysis(
            gold_scores, np.asarray(predicted[overall.name])[rows][keep].astype(int))
    return result


def _class_metrics(rater: str, head: Head, gold: np.ndarray, guess: np.ndarray) -> dict:
    out = {"n": int(len(gold)), "accuracy": metrics.accuracy(gold, guess),
           "macro_f1": metrics.macro_f1(gold, guess)}
    if head.name == DOMAIN:
        out["per_domain"] = metrics.per_class_accuracy(gold, guess)
    elif rater == "dataman":
        out["acc_binary"] = metrics.binary_accuracy(gold.astype(int), guess.astype(int))
    return out


def _binary_metrics(gold: np.ndarray, guess: np.ndarray) -> dict:
    return {"n": int(len(gold)), "positives": int(gold.sum()),
            "accuracy": metrics.accuracy(gold, guess), "macro_f1": metrics.macro_f1(gold, guess),
            "f1_positive": metrics.f1_of(gold, guess, 1)}


def _regression_metrics(gold: np.ndarray, guess: np.ndarray) -> dict:
    rounded = np.clip(np.round(guess), 0, 5).astype(int)
    return {"n": int(len(gold)), "rmse": float(np.sqrt(np.mean((gold - guess) ** 2))),
            "spearman": metrics.spearman(gold, guess),
            "accuracy_rounded": metrics.accuracy(gold.astype(int), rounded),
            "macro_f1_rounded": metrics.macro_f1(gold.astype(int), rounded),
            "f1_ge3": metrics.f1_of((gold >= 3).astype(int), (guess >= 3).astype(int), 1)}
