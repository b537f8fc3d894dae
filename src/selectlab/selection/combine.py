"""Methods that combine several scores: weighted sums (Meta-rater and its proxies), the mean,
and the intersection.

All of them first put every score on percentile ranks over the pool (see `selection.scores`
for why), one score at a time, so memory stays at two float32 arrays whatever the number of
scores. A document missing any of the scores gets NaN and is never chosen; the run counts it.
"""

from __future__ import annotations

import json

import numpy as np

from selectlab.selection.context import Choice, MethodContext, random_tiebreak
from selectlab.selection.scores import percentile_ranks


def weighted_rank_sum(context: MethodContext, scores: list[str],
                      weights: list[float]) -> np.ndarray:
    """sum_j w_j * percentile_rank(score_j), float32."""
    if len(scores) != len(weights):
        raise ValueError(f"{len(scores)} scores but {len(weights)} weights")
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {weights}")
    total = np.zeros(len(context.pool), dtype=np.float32)
    for text, weight in zip(scores, weights, strict=True):
        ranks = percentile_ranks(context.score(text))
        ranks *= np.float32(weight)
        total += ranks
    return total


def weighted_topk(context: MethodContext) -> Choice:
    """Top-k by a given weighted sum of percentile ranks (one Meta-rater proxy)."""
    params = context.params
    return Choice(priority=weighted_rank_sum(context, params["scores"], params["weights"]),
                  tiebreak=random_tiebreak(context))


def mean_rating(context: MethodContext) -> Choice:
    """Meta-rater's naive Mean: equal weights on every score."""
    scores = context.params["scores"]
    return Choice(priority=weighted_rank_sum(context, scores, [1.0 / len(scores)] * len(scores)),
                  tiebreak=random_tiebreak(context))


def intersection(context: MethodContext) -> Choice:
    """Meta-rater's naive Intersection: documents in the top of *every* score.

    A document's priority is its lowest percentile over the scores, so the top-k by priority is
    the intersection of the per-score top fractions at the strictest cut that still fills the
    budget (the cut is reported as the manifest's priority cutoff).
    """
    lowest = None
    for text in context.params["scores"]:
        ranks = percentile_ranks(context.score(text))
        # np.minimum propagates NaN: a document missing any score is never chosen.
        lowest = ranks if lowest is None else np.minimum(lowest, ranks, out=lowest)
    return Choice(priority=lowest, tiebreak=random_tiebreak(context))


def read_learned_weights(path, scores: list[str]) -> dict:
    """A fitted Meta-rater weights file, checked to cover exactly the variant's scores."""
    fitted = json.loads(open(path).read())
    if list(fitted["scores"]) != list(scores):
        raise ValueError(f"{path} was fitted on scores {fitted['scores']}, the variant asks for "
                         f"{scores}: rerun fit_metarater")
    return fitted


def metarater(context: MethodContext) -> Choice:
    """Top-k by the weights Meta-rater learned from its proxies (the upstream weights file)."""
    if context.upstream is None:
        raise ValueError("a metarater variant needs its fitted weights file as upstream input")
    params = context.params
    fitted = read_learned_weights(context.upstream, params["scores"])
    context.info["metarater"] = {
        "search": params["search"],
        "proxies": fitted["proxies_used"],
        "weights": dict(zip(params["scores"], fitted["weights"], strict=True)),
        "heldout_spearman": fitted["regressor"]["heldout_spearman"],
        "best_iteration": fitted["regressor"]["best_iteration"],
    }
    return Choice(priority=weighted_rank_sum(context, params["scores"], fitted["weights"]),
                  tiebreak=random_tiebreak(context))
