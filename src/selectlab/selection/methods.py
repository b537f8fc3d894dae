"""Selection methods: each turns the pool (and sidecar scores) into priorities per document.

A method is a function `(context) -> Choice` registered in `METHODS`. Higher priority is chosen
first; -inf or NaN means never chosen (a missing score, a filtered document). A method returns
`Keys`: how to compute its priorities shard by shard (selection.context); the budget, the strata
and the training order are handled once for all methods in `selection.run`. A method that must
keep an exact set of documents (a curriculum over another variant's selection) returns `chosen`
instead.

Random draws come from `context.random_stream()`, one stream per `rng.random(pool size)` the
method makes, in the same order, so the keys are those of drawing for the whole pool at once.

Score references in params are strings `family.column`, optionally with a leading '-'
(see `selection.scores`). `required_raters(params)` lists the sidecar families they name, which
is how the workflow wires a variant's inputs.
"""

from __future__ import annotations

import numpy as np

from selectlab.plugins.methods import as_method
from selectlab.selection import rules
from selectlab.selection.columns import RandomStream
from selectlab.selection.combine import intersection, mean_rating, metarater, weighted_topk
from selectlab.selection.context import Choice, Keys, Method, MethodContext
from selectlab.selection.gumbel import gumbel_from_uniform, tempered_logits
from selectlab.selection.pool import selection_positions
from selectlab.selection.scores import ExactMoments, ScoreRef, z_normalised
from selectlab.selection.semdedup import semdedup
from selectlab.selection.store import sorted_unique
from selectlab.selection.strata import SET_NAME

# Methods that combine scores on their percentile ranks, read from the pool's rank sidecars.
RANKED_METHODS = ("weighted_topk", "mean_rating", "intersection", "metarater")
# Params that name scores: single references, lists of references, mapping keys.
REF_KEYS = ("score", "order_by", "embedding")
REF_LIST_KEYS = ("scores", "strata")
REF_MAP_KEYS = ("where",)


def uniform_keys(seed: int, chunk_rows: list[int]) -> Keys:
    """The uniform method's keys for a seed: the reference every manifest's overlap uses."""
    stream = RandomStream.fresh(seed, chunk_rows)
    return Keys(lambda: ((u, None) for u in stream.chunks()))


def uniform_priority(context: MethodContext) -> Choice:
    """Uniform sampling without replacement: a random key per document."""
    return Choice(keys=uniform_keys(context.seed, context.pool.rows))


def z_ratings(context: MethodContext, text: str):
    """A function walking the rating's z-scores over the pool (QuRating's normalisation);
    the pool's mean and std come from one exact pass."""
    column = context.column(text)
    moments = ExactMoments()
    for values in column.chunks():
        moments.add(values)
    mean, std = moments.mean_std()
    return lambda: (z_normalised(values, mean, std) for values in column.chunks())


def gumbel_sample(context: MethodContext, text: str, tau: float) -> Keys:
    """Gumbel top-k keys on rating / tau: sampling without replacement with p ~ exp(z / tau)."""
    tempered_logits(np.zeros(0, np.float32), tau)  # checks tau before any pass
    ratings = z_ratings(context, text)
    noise = context.random_stream()

    def chunks():
        for z, u in zip(ratings(), noise.chunks(), strict=True):
            keys = gumbel_from_uniform(u)
            keys += tempered_logits(z, tau)
            yield keys, None

    return Keys(chunks)


def rating_sample(context: MethodContext) -> Choice:
    """QuRating: z-normalised ratings, sampled with p ~ exp(z / tau); tau = 0 is top-k."""
    tau = float(context.params["tau"])
    if tau != 0:
        return Choice(keys=gumbel_sample(context, context.params["score"], tau))
    ratings = z_ratings(context, context.params["score"])
    tiebreak = context.random_stream()
    return Choice(keys=Keys(lambda: zip(ratings(), tiebreak.chunks(), strict=True),
                            tiebreak=True))


def rating_mix(context: MethodContext) -> Choice:
    """Union of one tau-sample per score (each a full budgeted selection), de-duplicated, then
    subsampled uniformly to the budget inside the strata."""
    tau = float(context.params["tau"])
    components, union = {}, []
    for text in context.params["scores"]:
        chosen = context.take(gumbel_sample(context, text, tau))
        components[text] = int(len(chosen))
        union.append(chosen)
    members = sorted_unique(np.concatenate(union))
    offsets = context.pool.offsets
    union_tokens = 0
    noise = context.random_stream()

    def chunks():
        nonlocal union_tokens
        for index, u in enumerate(noise.chunks()):
            lo, hi = np.searchsorted(members, offsets[index:index + 2])
            inside = np.zeros(len(u), dtype=bool)
            inside[members[lo:hi] - offsets[index]] = True
            union_tokens += int(context.store.chunk("n_tokens", index)[inside].sum(
                dtype=np.int64))
            u[~inside] = -np.inf
            yield u, None

    def record():
        yield from chunks()
        context.info["mix"] = {"component_documents": components,
                               "union_documents": int(len(members)),
                               "union_tokens": union_tokens}

    return Choice(keys=Keys(record))


def curriculum(context: MethodContext) -> Choice:
    """Exactly another variant's documents (its `selection.parquet`, the upstream input)."""
    if context.upstream is None:
        raise ValueError("a curriculum variant needs the selection it reorders as upstream input")
    chosen = selection_positions(context.pool, context.upstream)
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
    "topk": as_method(rules.topk, "topk"),
    "score_level": as_method(rules.score_level, "score_level"),
    "dsir": as_method(rules.dsir, "dsir"),
    "semdedup": semdedup,
    "weighted_topk": weighted_topk,
    "mean_rating": mean_rating,
    "intersection": intersection,
    "metarater": metarater,
    "curriculum": curriculum,
}
