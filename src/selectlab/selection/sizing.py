"""Cores and wall time of a selection job, from the size of the pool it reads; SemDeDup's
memory too.

Every method but SemDeDup streams the pool within the memory ceiling `selection.memory_mb`
(selection.memory), so its job asks for that ceiling whatever the pool. SemDeDup ranks its
clusters in memory over the whole pool (selection/semdedup.py: a cluster id and a distance per
document, about 30 bytes a document with the sort's temporaries) and fits k-means on a sample
of embeddings (a 768-wide float32 row each unless the embedding family says otherwise, twice
for the fit's temporaries); that comes on top of the ceiling. It runs its k-means on 16 cores.

The pool is estimated from the plan: SlimPajama shards hold about 10,000 documents a raw file
(config/paper.yaml's judge sample: ~41M documents in 64 shards of 64 files), the embedded
corpus its configured document counts. Time: a microsecond per document and score column,
doubled, plus the k-means iterations at 10 GFLOP/s a core; at least an hour.
"""

from __future__ import annotations

import math

DOCUMENTS_PER_RAW_FILE = 10_000
SEMDEDUP_BYTES_PER_DOCUMENT = 8 + 30  # cluster id and distance; the in-cluster ranking
SECONDS_PER_DOCUMENT_COLUMN = 1e-6
SAFETY = 2.0
MIN_RUNTIME = 60
SEMDEDUP_CPUS = 16
EMBEDDING_DIM = 768
FLOPS_PER_CORE = 10e9


def pool_documents(config: dict, shard_files: dict[str, list[str]]) -> int:
    corpus = config["corpus"]
    if corpus["mode"] == "embedded":
        return sum(int(s["max_docs"]) for s in corpus["embedded"]["sources"].values())
    return DOCUMENTS_PER_RAW_FILE * sum(len(files) for files in shard_files.values())


def select_size(method: str, params: dict, columns: int, documents: int,
                memory_mb: int) -> dict:
    """`cpus`, `mem_mb` and `runtime` of a selection by `method` (with its `params`) reading
    `columns` score columns over a pool of `documents`, streaming within `memory_mb`."""
    seconds = SAFETY * SECONDS_PER_DOCUMENT_COLUMN * documents * (1 + columns)
    cpus, memory = 1, memory_mb
    if method == "semdedup":
        sample = min(int(params.get("fit_sample", documents)), documents)
        clusters, iterations = int(params["clusters"]), int(params.get("iterations", 100))
        in_memory = SEMDEDUP_BYTES_PER_DOCUMENT * documents + 2 * sample * EMBEDDING_DIM * 4
        memory += math.ceil(in_memory / 2**20)
        kmeans = 2 * sample * clusters * EMBEDDING_DIM * iterations
        assign = 2 * documents * clusters * EMBEDDING_DIM
        cpus = SEMDEDUP_CPUS
        seconds += SAFETY * (kmeans + assign) / (FLOPS_PER_CORE * cpus)
    return {"cpus": cpus, "mem_mb": memory, "runtime": max(MIN_RUNTIME, math.ceil(seconds / 60))}
