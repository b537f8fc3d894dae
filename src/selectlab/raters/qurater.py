"""QuRater: one scalar score per criterion, learned from pairwise judgments (Bradley-Terry).

The judge says how likely excerpt B is better than excerpt A (`p_b_better`); the rater scores
each excerpt alone, and the Bradley-Terry model reads a pair as P(B better) =
sigmoid(s_B - s_A). Training minimises the binary cross-entropy between that and the judge's
probability (soft labels), over confident pairs only: |p - 0.5| >= `confident_margin` (0.25
keeps the paper's confidence margin |2p - 1| >= 50%). One head per criterion, trained together.

The held-out split and the validation split (early stopping) are by pair: a pair is its two
documents in either order, all its criteria go to the same side, and a pair on one side is
never on the other, though its documents may appear (with other partners) in pairs of the other
side. QuRating appendix B.2: a random 10% validation split of the confident judgments, early
stopping on the validation accuracy averaged over the criteria (`validation_score`). Pairwise
accuracy is reported on confident held-out pairs, and on all decided held-out pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from selectlab.raters.metrics import pairwise_accuracy

LABEL_COLUMNS = ("criterion", "doc_a", "doc_b", "text_a", "text_b", "p_b_better")


@dataclass(frozen=True)
class PairData:
    texts: list[str]
    criteria: tuple[str, ...]
    pair_key: np.ndarray  # the pair's two document ids, sorted and joined, per row
    text_a: np.ndarray  # index into texts
    text_b: np.ndarray
    head: np.ndarray  # index into criteria
    p_b_better: np.ndarray

    def __len__(self) -> int:
        return len(self.p_b_better)


def pair_data(labels: pd.DataFrame, criteria: tuple[str, ...]) -> tuple[PairData, dict]:
    """The judged pairs of `criteria` with their texts indexed once; and what was left out."""
    missing = [c for c in LABEL_COLUMNS if c not in labels.columns]
    if missing:
        raise ValueError(f"QuRating labels lack columns {missing}")
    unknown = sorted(set(labels["criterion"]) - set(criteria))
    kept = labels[labels["criterion"].isin(criteria) & labels["p_b_better"].notna()]
    texts = pd.unique(pd.concat([kept["text_a"], kept["text_b"]], ignore_index=True))
    index = {text: i for i, text in enumerate(texts)}
    data = PairData(
        texts=list(texts), criteria=tuple(criteria),
        pair_key=pair_keys(kept["doc_a"].astype(str), kept["doc_b"].astype(str)),
        text_a=kept["text_a"].map(index).to_numpy(np.int64),
        text_b=kept["text_b"].map(index).to_numpy(np.int64),
        head=kept["criterion"].map({c: i for i, c in enumerate(criteria)}).to_numpy(np.int64),
        p_b_better=kept["p_b_better"].to_numpy(np.float64),
    )
    dropped = {"rows": len(labels), "null_probability": int(labels["p_b_better"].isna().sum()),
               "unknown_criteria": unknown}
    return data, dropped


def judged_pairs(labels: pd.DataFrame) -> np.ndarray:
    """The keys of every pair with a judge probability on any criterion."""
    judged = labels[labels["p_b_better"].notna()]
    return np.unique(pair_keys(judged["doc_a"].astype(str), judged["doc_b"].astype(str)))


def pair_keys(doc_a: pd.Series, doc_b: pd.Series) -> np.ndarray:
    """One key per unordered pair of documents: (a, b) and (b, a) are the same pair."""
    return np.array([f"{a}|{b}" if a <= b else f"{b}|{a}"
                     for a, b in zip(doc_a, doc_b, strict=True)], dtype=object)


def confident(p_b_better: np.ndarray, margin: float) -> np.ndarray:
    return np.abs(np.asarray(p_b_better) - 0.5) >= margin


def bradley_terry_loss(score_a: torch.Tensor, score_b: torch.Tensor,
                       p_b_better: torch.Tensor) -> torch.Tensor:
    """BCE(sigmoid(s_B - s_A), p), averaged; swapping the sides and p -> 1 - p changes nothing."""
    return F.binary_cross_entropy_with_logits(score_b - score_a, p_b_better)


class PairwiseObjective:
    def __init__(self, data: PairData):
        self.data = data
        self.p = torch.tensor(data.p_b_better, dtype=torch.float32)

    def texts_of(self, examples: np.ndarray) -> np.ndarray:
        return np.concatenate([self.data.text_a[examples], self.data.text_b[examples]])

    def loss(self, outputs: dict[str, torch.Tensor], rows: np.ndarray,
             examples: np.ndarray) -> torch.Tensor:
        scores = torch.stack([outputs[c] for c in self.data.criteria], dim=1)
        heads = torch.as_tensor(self.data.head[examples])
        a = scores[torch.as_tensor(rows[self.data.text_a[examples]]), heads]
        b = scores[torch.as_tensor(rows[self.data.text_b[examples]]), heads]
        return bradley_terry_loss(a, b, self.p[torch.as_tensor(examples)].to(a.device))

    def units_of(self, examples: np.ndarray) -> np.ndarray:
        return self.data.pair_key[examples]

    def validation_score(self, outputs: dict[str, torch.Tensor], rows: np.ndarray,
                         examples: np.ndarray) -> float:
        """Pairwise accuracy per criterion, averaged over the criteria (QuRating B.2)."""
        accuracies = []
        for h, criterion in enumerate(self.data.criteria):
            mine = examples[self.data.head[examples] == h]
            if not len(mine):
                continue
            scores = outputs[criterion].detach().float().cpu().numpy()
            accuracy = pairwise_accuracy(scores[rows[self.data.text_a[mine]]],
                                         scores[rows[self.data.text_b[mine]]],
                                         self.data.p_b_better[mine])
            if np.isfinite(accuracy):
                accuracies.append(accuracy)
        return float(np.mean(accuracies)) if accuracies else float("nan")


def split_pairs(data: PairData, heldout_fraction: float, seed: int,
                universe: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(training rows, held-out rows): whole pairs to one side, `heldout_fraction` of pairs.

    The pairs are drawn from `universe` (every judged pair, default the data's own), so raters
    of fewer criteria (QuRating Table 6's separate models) hold out the same pairs as the
    multi-task rater trained on all of them."""
    keys = np.unique(data.pair_key if universe is None else universe)
    rng = np.random.default_rng(seed)
    held = set(rng.choice(keys, size=int(round(len(keys) * heldout_fraction)), replace=False))
    is_held = np.array([k in held for k in data.pair_key], dtype=bool)
    rows = np.arange(len(data))
    return rows[~is_held], rows[is_held]


# QuRating Table 5 reports held-out accuracy on pairs whose judge confidence |2p - 1| is at
# least 50% and at least 80%; as margins on |p - 0.5|: 0.25 and 0.4.
TABLE5_CONFIDENCE = {50: 0.25, 80: 0.4}


def evaluate(text_scores: dict[str, np.ndarray], data: PairData, rows: np.ndarray,
             margin: float) -> dict[str, dict]:
    """Per criterion: pairwise accuracy on confident pairs (the training margin), on all
    held-out pairs and at both of QuRating Table 5's confidence levels, with counts."""
    result = {}
    for h, criterion in enumerate(data.criteria):
        mine = rows[data.head[rows] == h]
        sure = mine[confident(data.p_b_better[mine], margin)]
        scores = text_scores[criterion]

        def acc(subset: np.ndarray, scores=scores) -> float:
            return pairwise_accuracy(scores[data.text_a[subset]], scores[data.text_b[subset]],
                                     data.p_b_better[subset])

        result[criterion] = {"pairwise_accuracy": acc(sure), "pairs": int(len(sure)),
                             "pairwise_accuracy_all": acc(mine), "pairs_all": int(len(mine))}
        for level, level_margin in TABLE5_CONFIDENCE.items():
            subset = mine[confident(data.p_b_better[mine], level_margin)]
            result[criterion] |= {f"accuracy_confidence{level}": acc(subset),
                                  f"pairs_confidence{level}": int(len(subset))}
    return result
