"""Selection methods: each turns the pool (and sidecar scores) into one priority per document.

A method is a function `(context) -> Choice` registered in `METHODS`. Higher priority is chosen
first; -inf or NaN means never chosen (a missing score, a filtered document). The budget, the
strata and the training order are handled once for all methods in `selection.run`; a method that
must keep an exact set of documents (a curriculum over another variant's selection) returns
`chosen` instead of priorities.

Score references in params are strings `family.column`, optionally with a leading '-'
(see `selection.scores`). `required_raters(params)` lists the sidecar families they name, which
is how the workflow wires a variant's inputs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from selectlab.selection.combine import intersection, mean_rating, metarater, weighted_topk
from selectlab.selection.context import (
    Choice,
    Method,
    MethodContext,
    random_tiebreak,
    uniform_keys,
)
from selectlab.selection.gumbel import gumbel_keys, tempered_logits
from selectlab.selection.pool import pool_positions
from selectlab.selection.scores import ScoreRef, z_scores
from selectlab.selection.semdedup import semdedup
from selectlab.selection.strata import SET_NAME

# Params that name scores: single references, lists of references, mapping keys.
REF_KEYS = ("score", "order_by", "embedding")
REF_LIST_KEYS = ("scores", "strata")
REF_MAP_KEYS = ("where",)


def uniform_priority(context: MethodContext) -> Choice:
    """Uniform sampling without replacement: a random key per document."""
    return Choice(priority=uniform_keys(len(context.pool), context.seed))


def rating_sample(context: MethodContext) -> Choice:
    """QuRating: z-normalised ratings, sampled with p ~ exp(z / tau); tau = 0 is top-k."""
    ratings = z_scores(context.score(context.params["score"]))
    tau = float(context.params["tau"])
    if tau == 0:
        return Choice(priority=ratings, tiebreak=random_tiebreak(context))
    return Choice(priority=gumbel_keys(tempered_logits(ratings, tau), context.rng))


def rating_mix(context: MethodContext) -> Choice:
    """Union of one tau-sample per score (each a full budgeted selection), de-duplicated, then
    subsampled uniformly to the budget inside the strata."""
    in_union = np.zeros(len(context.pool), dtype=bool)
    tau = float(context.params["tau"])
    components = {}
    for text in context.params["scores"]:
        ratings = z_scores(context.score(text))
        keys = gumbel_keys(tempered_logits(ratings, tau), context.rng)
        chosen = context.take(keys)
        components[text] = int(len(chosen))
        in_union[chosen] = True
    context.info["mix"] = {"component_documents": components,
                           "union_documents": int(in_union.sum()),
                           "union_tokens": int(context.pool.n_tokens[in_union].sum())}
    priority = context.rng.random(len(context.pool), dtype=np.float32)
    priority[~in_union] = -np.inf
    return Choice(priority=priority)


def topk(context: MethodContext) -> Choice:
    """Highest score first (use a '-' reference for lowest first); ties in random order."""
    return Choice(priority=context.score(context.params["score"]),
                  tiebreak=random_tiebreak(context))


def score_level(context: MethodContext) -> Choice:
    """Uniform sampling among the documents whose score equals `level` (DataMan's l)."""
    values = context.score(context.params["score"])
    priority = context.rng.random(len(context.pool), dtype=np.float32)
    priority[values != np.float32(context.params["level"])] = -np.inf
    return Choice(priority=priority)


def dsir(context: MethodContext) -> Choice:
    """Importance resampling without replacement: Gumbel top-k on log importance weights.

    Several targets form an equal mixture: log w = logsumexp(log w_t) - log(T).
    """
    targets = context.params["scores"]
    log_weight = None
    for text in targets:
        values = context.score(text).astype(np.float32, copy=False)
        log_weight = values if log_weight is None else np.logaddexp(log_weight, values)
    log_weight = log_weight - np.float32(np.log(len(targets)))
    return Choice(priority=gumbel_keys(log_weight, context.rng))


def curriculum(context: MethodContext) -> Choice:
    """Exactly another variant's documents (its `selection.parquet`, the upstream input)."""
    if context.upstream is None:
        raise ValueError("a curriculum variant needs the selection it reorders as upstream input")
    base = pd.read_parquet(context.upstream, columns=["shard", "row"])
    chosen = pool_positions(context.pool, base["shard"].tolist(), base["row"].to_numpy())
    context.info["documents_of"] = context.params["of"]
    return Choice(chosen=chosen)


def score_refs(params: dict) -> list[ScoreRef]:
    """Every score reference a method's params name (strata entries other than set_name too)."""
    texts = [params[key] for key in REF_KEYS if isinstance(params.get(key), str)]
    for key in REF_LIST_KEYS:
        texts += [text for text in params.get(key, []) if text != SET_NAME]
    for key in REF_MAP_KEYS:
        texts += list(params.get(key, {}))
    return [ScoreRef.parse(text) for text in texts]


def score_columns(params: dict) -> list[tuple[str, str]]:
    """The (family, column) pairs a method's params refer to."""
    return [(ref.family, ref.column) for ref in score_refs(params)]


def required_raters(params: dict) -> list[str]:
    """Sidecar families a variant reads besides `meta` (used by the workflow to wire inputs)."""
    return sorted({ref.family for ref in score_refs(params)} - {"meta"})


METHODS: dict[str, Method] = {
    "uniform": uniform_priority,
    "rating_sample": rating_sample,
    "rating_mix": rating_mix,
    "topk": topk,
    "score_level": score_level,
    "dsir": dsir,
    "semdedup": semdedup,
    "weighted_topk": weighted_topk,
    "mean_rating": mean_rating,
    "intersection": intersection,
    "metarater": metarater,
    "curriculum": curriculum,
}
