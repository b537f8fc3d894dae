"""SemDeDup as Meta-rater ran it: k-means on document embeddings, then keep, in every cluster,
the documents farthest from their centroid.

Priority is a document's distance rank inside its own cluster (0 = nearest the centroid,
1 = farthest), so every cluster gives up its most central, most redundant documents first and
keeps the same fraction of its members. Distances are cosine (embeddings are L2-normalised).

Scale: k-means is fitted on a uniform sample of at most `fit_sample` embeddings (the memory
bound of the fit: `fit_sample` x dimension float32s); every document is then assigned shard by
shard, keeping only a cluster id (4 bytes) and a distance (4 bytes) per document, never the
embeddings. Unlike every other method, the ranks inside clusters are then computed in memory over
the whole pool (about 30 bytes per document with the sort's temporaries): SemDeDup is one
baseline variant, not a search, so it is left out of the bounded-memory streaming.
"""

from __future__ import annotations

import numpy as np

from selectlab.selection.context import Choice, Keys, MethodContext
from selectlab.selection.scores import ScoreRef

ASSIGN_CHUNK = 4096


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, np.float32(1e-12))


def fit_centroids(context: MethodContext, ref: ScoreRef, clusters: int,
                  fit_sample: int) -> tuple[np.ndarray, int]:
    """Unit-norm k-means centroids fitted on a uniform sample; also the sample's size."""
    from sklearn.cluster import KMeans

    n = len(context.pool)
    sample = np.sort(context.rng.choice(n, size=min(fit_sample, n), replace=False))
    rows, start = [], 0
    for _, matrix in context.read_vectors(ref):
        stop = start + len(matrix)
        local = sample[(sample >= start) & (sample < stop)] - start
        picked = matrix[local]
        rows.append(picked[~np.isnan(picked).any(axis=1)])
        start = stop
    vectors = unit_rows(np.concatenate(rows)) if rows else np.zeros((0, 0), np.float32)
    if len(vectors) < clusters:
        raise ValueError(f"semdedup: {clusters} clusters need at least as many embedded documents "
                         f"in the fit sample, found {len(vectors)}")
    model = KMeans(n_clusters=clusters, n_init=1, max_iter=context.params.get("iterations", 100),
                   random_state=context.seed).fit(vectors)
    return unit_rows(model.cluster_centers_.astype(np.float32)), len(vectors)


def assign(context: MethodContext, ref: ScoreRef,
           centroids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centroid (int32, -1 without an embedding) and cosine distance per document."""
    n = len(context.pool)
    cluster = np.full(n, -1, dtype=np.int32)
    distance = np.full(n, np.nan, dtype=np.float32)
    start = 0
    for _, matrix in context.read_vectors(ref):
        for offset in range(0, len(matrix), ASSIGN_CHUNK):
            block = matrix[offset:offset + ASSIGN_CHUNK]
            valid = ~np.isnan(block).any(axis=1)
            similarity = unit_rows(block[valid]) @ centroids.T
            where = start + offset + np.flatnonzero(valid)
            best = similarity.argmax(axis=1)
            cluster[where] = best
            distance[where] = 1.0 - similarity[np.arange(len(best)), best]
        start += len(matrix)
    return cluster, distance


def rank_within_clusters(cluster: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """Each document's distance rank inside its cluster scaled to [0, 1]; NaN without one."""
    priority = np.full(len(cluster), np.nan, dtype=np.float32)
    valid = np.flatnonzero(cluster >= 0)
    order = valid[np.lexsort((distance[valid], cluster[valid]))]
    codes = cluster[order]
    starts = np.r_[0, np.flatnonzero(np.diff(codes)) + 1]
    sizes = np.diff(np.r_[starts, len(order)])
    rank = np.arange(len(order)) - np.repeat(starts, sizes)
    denominator = np.repeat(np.maximum(sizes - 1, 1), sizes)
    # A cluster of one keeps its document first: nothing in it is redundant.
    priority[order] = np.where(np.repeat(sizes, sizes) > 1, rank / denominator, 1.0)
    return priority


def semdedup(context: MethodContext) -> Choice:
    params = context.params
    ref = ScoreRef.parse(params["embedding"])
    centroids, fitted_on = fit_centroids(context, ref, int(params["clusters"]),
                                         int(params.get("fit_sample", 100_000)))
    cluster, distance = assign(context, ref, centroids)
    context.info["semdedup"] = {
        "clusters": int(params["clusters"]),
        "fit_documents": fitted_on,
        "documents_without_embedding": int((cluster < 0).sum()),
        "mean_distance": float(np.nanmean(distance)) if (cluster >= 0).any() else None,
    }
    return Choice(keys=Keys.of_array(rank_within_clusters(cluster, distance), context.pool.rows))
