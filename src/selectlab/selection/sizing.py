"""Memory, cores and wall time of a selection job, from the size of the pool it reads.

The pool is estimated from the plan: SlimPajama shards hold about 10,000 documents a raw file
(config/paper.yaml's judge sample: ~41M documents in 64 shards of 64 files), the embedded
corpus its configured document counts. A selection holds per document about 20 bytes of pool
(selection/pool.py), 4 bytes per score column it reads (float32) and 16 bytes of sort order and
key while it ranks, on a 2 GB base. SemDeDup adds its k-means fit (the sampled embeddings, a
768-wide float32 row each unless the embedding family says otherwise) and runs it on 16 cores.
Time: a microsecond per document and score column, doubled, plus the k-means iterations at
10 GFLOP/s a core; at least an hour.
"""

from __future__ import annotations

import math

DOCUMENTS_PER_RAW_FILE = 10_000
POOL_BYTES_PER_DOCUMENT = 20
SCORE_BYTES = 4
RANKING_BYTES = 16
BASE_MEM_MB = 2000
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


def select_size(method: str, params: dict, columns: int, documents: int) -> dict:
    """`cpus`, `mem_mb` and `runtime` of a selection by `method` (with its `params`) reading
    `columns` score columns over a pool of `documents`."""
    memory = documents * (POOL_BYTES_PER_DOCUMENT + SCORE_BYTES * columns + RANKING_BYTES)
    seconds = SAFETY * SECONDS_PER_DOCUMENT_COLUMN * documents * (1 + columns)
    cpus = 1
    if method == "semdedup":
        sample = min(int(params.get("fit_sample", documents)), documents)
        clusters, iterations = int(params["clusters"]), int(params.get("iterations", 100))
        memory += 2 * sample * EMBEDDING_DIM * 4 + 8 * documents
        kmeans = 2 * sample * clusters * EMBEDDING_DIM * iterations
        assign = 2 * documents * clusters * EMBEDDING_DIM
        cpus = SEMDEDUP_CPUS
        seconds += SAFETY * (kmeans + assign) / (FLOPS_PER_CORE * cpus)
    return {"cpus": cpus, "mem_mb": BASE_MEM_MB + math.ceil(memory / 2**20),
            "runtime": max(MIN_RUNTIME, math.ceil(seconds / 60))}
