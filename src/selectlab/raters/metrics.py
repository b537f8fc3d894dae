"""Held-out metrics in the shape the papers report them.

- QuRating: pairwise accuracy, the share of judged pairs whose preferred side gets the higher
  score, on pairs whose judgment is confident (the paper evaluates on confident pairs only).
- DataMan Table 8: 5-level accuracy and binary accuracy (< 3 vs >= 3) per criterion, domain
  accuracy overall and per domain.
- DataMan Table 9: the Overall Score's accuracies and misclassification rates. The three error
  rates of low documents (gold < 3) are shares of the low documents and add up to 1 - their
  accuracy; the two of high documents (gold >= 3) likewise.
- Meta-rater Table 9: macro-F1 per PRRC dimension.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pairwise_accuracy(score_a: np.ndarray, score_b: np.ndarray, p_b_better: np.ndarray) -> float:
    """Share of pairs where the side the judge prefers scores higher.

    Pairs the judge left undecided (p = 0.5) are left out; a tie in scores counts half, as a
    coin flip would.
    """
    gap = np.asarray(score_b, dtype=float) - np.asarray(score_a, dtype=float)
    side = np.asarray(p_b_better, dtype=float) - 0.5
    decided = side != 0
    if not decided.any():
        return float("nan")
    agree = np.where(gap[decided] == 0, 0.5, np.sign(gap[decided]) == np.sign(side[decided]))
    return float(np.mean(agree))


def accuracy(gold: Sequence, predicted: Sequence) -> float:
    gold, predicted = np.asarray(gold), np.asarray(predicted)
    return float(np.mean(gold == predicted)) if len(gold) else float("nan")


def binary_accuracy(gold: Sequence[int], predicted: Sequence[int], threshold: int = 3) -> float:
    """Accuracy of the split `< threshold` vs `>= threshold`."""
    return accuracy(np.asarray(gold) >= threshold, np.asarray(predicted) >= threshold)


def per_class_accuracy(gold: Sequence, predicted: Sequence) -> dict[str, float]:
    """Per gold class, the share predicted right (recall); classes absent from gold are absent."""
    gold, predicted = np.asarray(gold), np.asarray(predicted)
    return {str(c): float(np.mean(predicted[gold == c] == c)) for c in sorted(set(gold.tolist()))}


def f1_of(gold: Sequence, predicted: Sequence, label) -> float:
    """F1 of one class; 0 when the class is neither in gold nor predicted."""
    gold, predicted = np.asarray(gold), np.asarray(predicted)
    tp = np.sum((gold == label) & (predicted == label))
    wrong = np.sum((gold == label) != (predicted == label))
    return float(2 * tp / (2 * tp + wrong)) if tp + wrong else 0.0


def macro_f1(gold: Sequence, predicted: Sequence) -> float:
    """Unweighted mean F1 over the classes present in gold or predictions."""
    labels = sorted(set(np.asarray(gold).tolist()) | set(np.asarray(predicted).tolist()), key=str)
    return float(np.mean([f1_of(gold, predicted, c) for c in labels])) if labels else float("nan")


def _share(mask: np.ndarray, within: np.ndarray) -> float:
    return float(mask[within].mean()) if within.any() else float("nan")


def overall_score_analysis(gold: Sequence[int], predicted: Sequence[int]) -> dict[str, float]:
    """DataMan's Table 9 for 1-5 ratings: accuracies and misclassification rates."""
    gold, predicted = np.asarray(gold), np.asarray(predicted)
    low, high = gold < 3, gold >= 3
    return {
        "acc_5level": accuracy(gold, predicted),
        "acc_binary": binary_accuracy(gold, predicted),
        "acc_high": _share(predicted >= 3, high),
        "acc_low": _share(predicted < 3, low),
        # low documents rated high: from gold 1 (extreme), from gold 2 to 4-5 or exactly 3
        "err_lt2_as_ge3": _share((gold < 2) & (predicted >= 3), low),
        "err_2_as_gt3": _share((gold == 2) & (predicted > 3), low),
        "err_2_as_3": _share((gold == 2) & (predicted == 3), low),
        # high documents rated low: from gold 4-5 (extreme) or from gold 3
        "err_ge4_as_lt3": _share((gold >= 4) & (predicted < 3), high),
        "err_3_as_lt3": _share((gold == 3) & (predicted < 3), high),
        "n_low": int(low.sum()),
        "n_high": int(high.sum()),
    }


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    import pandas as pd

    frame = pd.DataFrame({"x": x, "y": y}).dropna()
    if len(frame) < 2 or frame["x"].nunique() < 2 or frame["y"].nunique() < 2:
        return float("nan")
    return float(frame["x"].rank().corr(frame["y"].rank()))
