"""Run one selection variant: pool -> priorities -> budgeted take -> training order -> files."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from selectlab.selection.budget import budgeted_take, stratum_outcomes, stratum_quotas
from selectlab.selection.context import Choice, MethodContext, uniform_keys
from selectlab.selection.methods import METHODS
from selectlab.selection.overlap import jaccard
from selectlab.selection.pool import (
    Pool,
    chosen_documents,
    iter_vectors,
    load_category,
    load_pool,
    load_score,
    rows_per_shard,
)
from selectlab.selection.scores import ScoreRef, missing_count, oriented
from selectlab.selection.strata import SET_NAME, stratum_codes, where_mask
from selectlab.selection.upsample import upsampled_take
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
        if self.budget_tokens <= 0:
            raise ValueError(f"variant {self.name!r}: budget must be positive")


class SidecarReader:
    """Reads sidecar columns over the pool on demand and counts missing values per score.

    Nothing is cached: a score is read when a method asks for it and dropped when the method
    is done with it, so memory holds one or two score arrays at a time.
    """

    def __init__(self, attributes_dir: str | Path, pool: Pool):
        self.attributes_dir = attributes_dir
        self.pool = pool
        self.expected = rows_per_shard(pool)
        self.missing: dict[str, int] = {}

    def score(self, ref: ScoreRef) -> np.ndarray:
        values = load_score(self.attributes_dir, ref.family, ref.column, self.pool.shards,
                            self.expected)
        self.missing[f"{ref.family}.{ref.column}"] = missing_count(values)
        return oriented(values, ref)

    def category(self, ref: ScoreRef) -> tuple[np.ndarray, list[str]]:
        return load_category(self.attributes_dir, ref.family, ref.column, self.pool.shards,
                             self.expected)

    def vectors(self, ref: ScoreRef):
        return iter_vectors(self.attributes_dir, ref.family, ref.column, self.pool.shards,
                            self.expected)


def training_order(chosen: np.ndarray, params: dict, rng: np.random.Generator,
                   read_score) -> np.ndarray:
    """Shuffle the chosen documents, or sort them by a score for curriculum variants.

    Documents without the score go last in either direction.
    """
    order_by = params.get("order_by")
    if not order_by:
        return chosen[rng.permutation(len(chosen))]
    keys = read_score(ScoreRef.parse(order_by))[chosen]
    if params.get("order", "ascending") == "descending":
        keys = -keys
    return chosen[np.argsort(keys, kind="stable")]


def overlap(chosen: np.ndarray, reference: np.ndarray) -> dict:
    a, b = np.unique(chosen), np.unique(reference)
    shared = len(np.intersect1d(a, b, assume_unique=True))
    return {"shared_documents": shared, "jaccard": jaccard(a, b),
            "fraction_of_selection": shared / len(a) if len(a) else 0.0}


def uniform_reference(pool: Pool, budget: int, seed: int) -> np.ndarray:
    """What the uniform method picks at this budget and seed, stratified by source."""
    quotas = stratum_quotas(pool.source, pool.n_tokens, len(pool.source_names), budget)
    return budgeted_take(pool.source, pool.n_tokens, uniform_keys(len(pool), seed), budget,
                         quotas)


def apply_choice(choice: Choice, context: MethodContext, eligible: np.ndarray,
                 upsample: bool) -> tuple[np.ndarray, dict[int, int]]:
    """The chosen positions and, when up-sampling, the passes per repeated stratum."""
    if choice.chosen is not None:
        return np.asarray(choice.chosen, dtype=np.int64), {}
    priority = np.asarray(choice.priority, dtype=np.float32)
    priority[~eligible] = -np.inf
    if upsample:
        return upsampled_take(context.strata, context.pool.n_tokens, priority, context.budget,
                              context.quotas, choice.tiebreak)
    return context.take(priority, choice.tiebreak), {}


def eligible_after(choice: Choice, eligible: np.ndarray) -> np.ndarray:
    if choice.chosen is not None:
        mask = np.zeros_like(eligible)
        mask[choice.chosen] = True
        return mask
    return eligible & np.isfinite(choice.priority)


@dataclass
class Selected:
    """One variant's choice and what the manifest reports about it."""

    pool: Pool
    strata: np.ndarray
    strata_names: list[str]
    quotas: np.ndarray
    chosen: np.ndarray  # pool positions, in merged order (repeats when up-sampled)
    eligible: np.ndarray  # documents the method and the filter allowed
    exact_set: bool  # the method kept another selection's documents (no budgeted take)
    filtered_out: int
    passes: dict[int, int]  # up-sampled stratum code -> passes over it
    missing_scores: dict[str, int]
    info: dict


def choose(spec: SelectionSpec, attributes_dir: str | Path, shards: list[str],
           upstream: str | Path | None, rng: np.random.Generator) -> Selected:
    """Pool, strata and filter -> the method's priorities -> the budgeted take."""
    params = spec.params
    pool = load_pool(attributes_dir, shards)
    if pool.n_tokens.sum() < spec.budget_tokens:
        raise ValueError(f"variant {spec.name!r}: budget of {spec.budget_tokens} tokens exceeds "
                         f"the pool's {int(pool.n_tokens.sum())} tokens")
    reader = SidecarReader(attributes_dir, pool)
    strata, strata_names = stratum_codes(pool, params.get("strata", [SET_NAME]), reader.category)
    quotas = stratum_quotas(strata, pool.n_tokens, len(strata_names), spec.budget_tokens)
    passes_filter = where_mask(pool, params.get("where", {}), reader.score, reader.category)
    context = MethodContext(pool, params, spec.seed, rng, reader.score, reader.vectors, strata,
                            quotas, spec.budget_tokens, Path(upstream) if upstream else None)
    choice = METHODS[spec.method](context)
    eligible = eligible_after(choice, passes_filter)
    chosen, passes = apply_choice(choice, context, eligible, bool(params.get("upsample_short")))
    if len(chosen) == 0:
        raise ValueError(f"variant {spec.name!r} selected no documents")
    return Selected(pool, strata, strata_names, quotas, chosen, eligible,
                    choice.chosen is not None, int((~passes_filter).sum()), passes,
                    reader.missing, context.info)


def manifest_record(spec: SelectionSpec, selected: Selected) -> dict:
    pool, chosen = selected.pool, selected.chosen
    # An exact set was cut to the budget by the variant it came from, each stratum to within
    # half a document of its quota; measured against the same quota it would look short. Such a
    # stratum is short only when the pool cannot fill it; the base's manifest reports its own.
    eligible = None if selected.exact_set else selected.eligible
    outcomes = stratum_outcomes(selected.strata, pool.n_tokens, chosen, selected.quotas,
                                selected.strata_names, eligible)
    selected_tokens = int(pool.n_tokens[chosen].sum())
    params = spec.params
    return {
        "variant": spec.name,
        "method": spec.method,
        "params": params,
        "seed": spec.seed,
        "budget_tokens": spec.budget_tokens,
        "selected_tokens": selected_tokens,
        "selected_documents": int(len(chosen)),
        "unique_documents": int(len(np.unique(chosen))),
        "pool_tokens": int(pool.n_tokens.sum()),
        "pool_documents": len(pool),
        "budget_reached": selected_tokens >= spec.budget_tokens,
        "strata_by": params.get("strata", [SET_NAME]),
        "strata": [outcome.to_dict() for outcome in outcomes],
        "short_strata": [outcome.stratum for outcome in outcomes if outcome.short],
        "upsampled": {selected.strata_names[code]: count
                      for code, count in selected.passes.items()},
        "excluded": {
            "filtered_out": selected.filtered_out,
            "not_eligible": int((~selected.eligible).sum()),
            "missing_scores": selected.missing_scores,
        },
        "order": ({"by": params["order_by"], "direction": params.get("order", "ascending")}
                  if params.get("order_by") else "shuffled"),
        "overlap_with_uniform": {"reference": f"uniform, seed {spec.seed}, same budget"}
        | overlap(chosen, uniform_reference(pool, spec.budget_tokens, spec.seed)),
    } | selected.info


def select_variant(spec: SelectionSpec, attributes_dir: str | Path, shards: list[str],
                   out_dir: str | Path, upstream: str | Path | None = None) -> dict:
    """Write `selection.parquet` and `manifest.json` for one variant; return the manifest."""
    rng = np.random.default_rng(spec.seed)
    selected = choose(spec, attributes_dir, shards, upstream, rng)
    reader = SidecarReader(attributes_dir, selected.pool)
    ordered = training_order(selected.chosen, spec.params, rng, reader.score)
    documents = chosen_documents(attributes_dir, selected.pool, ordered)
    out_dir = Path(out_dir)
    with atomic_path(out_dir / "selection.parquet") as tmp:
        documents.to_parquet(tmp, index=False)
    manifest = manifest_record(spec, selected)
    write_json(out_dir / "manifest.json", manifest)
    return manifest
