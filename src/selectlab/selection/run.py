"""Run one selection variant: pool -> priorities -> budgeted take -> training order -> files."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from selectlab.selection.budget import budgeted_take, stratum_outcomes, stratum_quotas
from selectlab.selection.methods import METHODS
from selectlab.selection.pool import (
    Pool,
    chosen_documents,
    load_pool,
    load_score,
    rows_per_shard,
)
from selectlab.shards import atomic_path, write_json


@dataclass(frozen=True)
class SelectionSpec:
    """A variant's selection, as resolved from config."""

    name: str
    method: str
    budget_tokens: int
    seed: int
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"variant {self.name!r}: unknown selection method {self.method!r}; "
                             f"known: {sorted(METHODS)}")


def make_score_reader(attributes_dir: str | Path, pool: Pool):
    expected = rows_per_shard(pool)
    cache: dict[tuple[str, str], np.ndarray] = {}

    def read(rater: str, column: str) -> np.ndarray:
        if (rater, column) not in cache:
            cache[rater, column] = load_score(attributes_dir, rater, column, pool.shards, expected)
        return cache[rater, column]

    return read


def training_order(chosen: np.ndarray, params: dict, rng: np.random.Generator,
                   scores) -> np.ndarray:
    """Shuffle the chosen documents, or sort them by a score for curriculum variants."""
    order_by = params.get("order_by")
    if not order_by:
        return chosen[rng.permutation(len(chosen))]
    rater, column = order_by.split(".", 1)
    keys = scores(rater, column)[chosen]
    ranks = np.argsort(keys, kind="stable")
    if params.get("order", "ascending") == "descending":
        ranks = ranks[::-1]
    return chosen[ranks]


def select_variant(spec: SelectionSpec, attributes_dir: str | Path, shards: list[str],
                   out_dir: str | Path) -> dict:
    """Write `selection.parquet` and `manifest.json` for one variant; return the manifest."""
    rng = np.random.default_rng(spec.seed)
    pool = load_pool(attributes_dir, shards)
    scores = make_score_reader(attributes_dir, pool)
    priority = METHODS[spec.method](pool, spec.params, rng, scores)
    quotas = stratum_quotas(pool.source, pool.n_tokens, len(pool.source_names), spec.budget_tokens)
    chosen = budgeted_take(pool.source, pool.n_tokens, priority, spec.budget_tokens, quotas)
    if pool.n_tokens.sum() < spec.budget_tokens:
        raise ValueError(f"variant {spec.name!r}: budget of {spec.budget_tokens} tokens exceeds "
                         f"the pool's {int(pool.n_tokens.sum())} tokens")
    if len(chosen) == 0:
        raise ValueError(f"variant {spec.name!r} selected no documents")
    ordered = training_order(chosen, spec.params, rng, scores)
    documents = chosen_documents(attributes_dir, pool, ordered)
    out_dir = Path(out_dir)
    with atomic_path(out_dir / "selection.parquet") as tmp:
        documents.to_parquet(tmp, index=False)
    outcomes = stratum_outcomes(pool.source, pool.n_tokens, chosen, quotas, pool.source_names)
    manifest = {
        "variant": spec.name,
        "method": spec.method,
        "params": spec.params,
        "seed": spec.seed,
        "budget_tokens": spec.budget_tokens,
        "selected_tokens": int(pool.n_tokens[chosen].sum()),
        "selected_documents": int(len(chosen)),
        "pool_tokens": int(pool.n_tokens.sum()),
        "pool_documents": len(pool),
        "budget_reached": bool(pool.n_tokens[chosen].sum() >= spec.budget_tokens),
        "strata": [outcome.to_dict() for outcome in outcomes],
        "short_strata": [outcome.stratum for outcome in outcomes if outcome.short],
    }
    write_json(out_dir / "manifest.json", manifest)
    return manifest
