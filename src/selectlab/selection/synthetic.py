"""Synthetic sidecars with a planted quality signal, for tests and the scale benchmark.

Every document gets a hidden `quality` in [0, 1]; score columns are noisy views of it (or of
its opposite, or pure noise), so a test can check that a method finds the good documents and a
benchmark can build pools of any size without text. Files follow docs/layout.md: one meta
sidecar per shard and one sidecar per family with `id` first, row-aligned with meta.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

SOURCES = ("RedPajamaCommonCrawl", "RedPajamaWikipedia", "RedPajamaBook", "RedPajamaGithub")
SOURCE_SHARES = (0.55, 0.2, 0.15, 0.1)
DOMAINS = ("A", "B", "C", "O")


@dataclass(frozen=True)
class SyntheticShard:
    meta: pd.DataFrame
    quality: np.ndarray
    families: dict[str, pd.DataFrame]


def synthetic_shard(shard: str, n: int, rng: np.random.Generator,
                    embedding_dim: int = 8) -> SyntheticShard:
    """One shard's meta and score sidecars; scores are noisy views of a hidden quality."""
    source = rng.choice(len(SOURCES), size=n, p=SOURCE_SHARES)
    n_tokens = rng.integers(20, 400, size=n) * np.array([1, 2, 3, 1])[source]
    quality = rng.random(n)
    ids = [f"{shard}-{i}" for i in range(n)]
    meta = pd.DataFrame({
        "id": ids, "set_name": np.array(SOURCES)[source], "source_detail": "synthetic",
        "n_chars": n_tokens * 4, "n_tokens": n_tokens,
        "token_offset": np.r_[0, np.cumsum(n_tokens)[:-1]],
    })
    noise = lambda scale: rng.normal(0, scale, size=n)  # noqa: E731
    level = np.clip(np.ceil(quality * 5), 1, 5)
    rating = np.clip(np.round(quality * 4 + 1 + noise(0.5)), 1, 5)
    families = {
        "scores": pd.DataFrame({
            "id": ids, "good": quality + noise(0.05), "bad": -quality + noise(0.05),
            "noise": noise(1.0), "rating": rating, "ppl": 10 - 5 * quality + noise(0.3),
        }),
        "levels": pd.DataFrame({
            "id": ids, "overall_score": level,
            "domain": np.array(DOMAINS)[rng.integers(0, len(DOMAINS), size=n)],
        }),
        "dsir": pd.DataFrame({"id": ids, "dsir_wikipedia": 3 * quality + noise(0.5),
                              "dsir_book": noise(1.0)}),
    }
    centres = rng.normal(size=(4, embedding_dim))
    vectors = centres[rng.integers(0, 4, size=n)] + 0.3 * rng.normal(size=(n, embedding_dim))
    families["embedding"] = pd.DataFrame({"id": ids,
                                          "embedding": list(vectors.astype(np.float32))})
    return SyntheticShard(meta, quality, families)


def write_synthetic_sidecars(attributes_dir: str | Path, shards: list[str], docs_per_shard: int,
                             seed: int = 0) -> dict[str, np.ndarray]:
    """Write meta and score sidecars for every shard; return the hidden quality per shard."""
    rng = np.random.default_rng(seed)
    quality = {}
    for shard in shards:
        part = synthetic_shard(shard, docs_per_shard, rng)
        quality[shard] = part.quality
        for family, frame in {"meta": part.meta, **part.families}.items():
            path = Path(attributes_dir) / family / f"{shard}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            table = pa.Table.from_pandas(frame, preserve_index=False)
            if family == "embedding":  # a fixed-size list, as the embedding family writes it
                vectors = np.stack(frame["embedding"].to_numpy())
                table = table.set_column(1, "embedding", pa.FixedSizeListArray.from_arrays(
                    pa.array(vectors.ravel()), vectors.shape[1]))
            pq.write_table(table, path)
    return quality
