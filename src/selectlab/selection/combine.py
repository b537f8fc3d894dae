"""Methods that combine several scores: weighted sums (Meta-rater and its proxies), the mean,
and the intersection.

All of them put every score on percentile ranks over the pool (see `selection.scores` for why).
The ranks are computed once per pool and stored (selection.ranks), so a selection only reads
them, shard by shard: memory holds two float32 arrays of one shard whatever the number of
scores. A document missing any of the scores gets NaN and is never chosen; the run counts it.
"""

from __future__ import annotations

import json

import numpy as np

from selectlab.selection.context import Choice, Keys, MethodContext


def weighted_rank_sum(context: MethodContext, scores: list[str], weights: list[float]):
    """A function walking sum_j w_j * percentile_rank(score_j) (float32) over the pool."""
    if len(scores) != len(weights):
        raise ValueError(f"{len(scores)} scores but {len(weights)} weights")
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {weights}")
    columns = context.ranks(scores)
    factors = [np.float32(weight) for weight in weights]

    def chunks():
        for ranks in columns.chunks():
            total = np.zeros(len(ranks[0]), dtype=np.float32)
            for values, factor in zip(ranks, factors, strict=True):
                values *= factor
                total += values
            yield total

    return chunks


def with_tiebreak(context: MethodContext, priorities) -> Choice:
    """Priorities whose ties (ranks tie) are broken by a random key per document."""
    tiebreak = context.random_stream()
    return Choice(keys=Keys(lambda: zip(priorities(), tiebreak.chunks(), strict=True),
                            tiebreak=True))


def weighted_topk(context: MethodContext) -> Choice:
    """Top-k by a given weighted sum of percentile ranks (one Meta-rater proxy)."""
    params = context.params
    return with_tiebreak(context, weighted_rank_sum(context, params["scores"], params["weights"]))


def mean_rating(context: MethodContext) -> Choice:
    """Meta-rater's naive Mean: equal weights on every score."""
    scores = context.params["scores"]
    return with_tiebreak(context, weighted_rank_sum(context, scores,
                                                    [1.0 / len(scores)] * len(scores)))


def intersection(context: MethodContext) -> Choice:
    """Meta-rater's naive Intersection: documents in the top of *every* score.

    A document's priority is its lowest percentile over the scores, so the top-k by priority is
    the intersection of the per-score top fractions at the strictest cut that still fills the
    budget (the cut is reported as the manifest's priority cutoff).
    """
    columns = context.ranks(context.params["scores"])

    def lowest():
        for ranks in columns.chunks():
            low = ranks[0]
            for values in ranks[1:]:
                # np.minimum propagates NaN: a document missing any score is never chosen.
                low = np.minimum(low, values, out=low)
            yield low

    return with_tiebreak(context, lowest)


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
    return with_tiebreak(context, weighted_rank_sum(context, params["scores"], fitted["weights"]))
