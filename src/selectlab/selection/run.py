"""Run one selection variant: pool -> priorities -> budgeted take -> training order -> files.

Every step walks the pool shard by shard (selection.pool, selection.take), so a job's memory is
set by `selection.memory_mb` (selection.memory), not by the pool: per-document columns go to
disk when they do not fit, and only the chosen documents (and a few candidates around the
budget's cut) are ever held together.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from selectlab.plugins.loading import load_object
from selectlab.plugins.methods import as_method
from selectlab.selection.budget import StratumOutcome, outcomes
from selectlab.selection.context import Choice, Method, MethodContext, put_keys
from selectlab.selection.memory import SelectionLimits, plan_memory, unlimited
from selectlab.selection.methods import METHODS, uniform_keys
from selectlab.selection.output import training_order, write_selection
from selectlab.selection.overlap import jaccard
from selectlab.selection.pool import Pool, meta_rows, scan_pool, sidecar_path
from selectlab.selection.store import UnitStore, sorted_unique
from selectlab.selection.strata import SET_NAME, Strata, WhereFilter, build_strata
from selectlab.selection.take import Taken, streaming_take
from selectlab.shards import atomic_path, write_json


@dataclass(frozen=True)
class SelectionSpec:
    """A variant's selection, as resolved from config."""

    name: str
    method: str
    budget_tokens: int
    seed: int
    params: dict = field(default_factory=dict)
    shared_from: str | None = None  # another variant whose identical selection this one reuses
    reference_seed: int | None = None  # the uniform variant's seed, for the overlap (None: own)
    plugin: dict | None = None  # where your own method is (selection.methods.<method>)

    def __post_init__(self):
        if self.method not in METHODS and self.plugin is None:
            raise ValueError(f"variant {self.name!r}: unknown selection method {self.method!r}; "
                             f"known: {sorted(METHODS)}")

    def method_function(self) -> Method:
        """A built-in method, or yours loaded from its module (selectlab.plugins)."""
        if self.plugin is None:
            return METHODS[self.method]
        where = f"selection.methods.{self.method}"
        return as_method(load_object(self.plugin, "method", where), where)
        if self.budget_tokens <= 0:
            raise ValueError(f"variant {self.name!r}: budget must be positive")


@dataclass
class Selected:
    """One variant's choice and what the manifest reports about it."""

    pool: Pool
    strata: Strata
    quotas: np.ndarray
    taken: Taken  # chosen pool positions in merged order (repeats when up-sampled)
    exact_set: bool  # the method kept another selection's documents (no budgeted take)
    eligible: int  # documents the method and the filter allowed
    filtered_out: int
    missing_scores: dict[str, int]
    info: dict


def exact_set(store: UnitStore, pool: Pool, chosen: np.ndarray) -> Taken:
    """A given set as a `Taken`: its documents' token counts and strata read from the store."""
    chosen = np.asarray(chosen, dtype=np.int64)
    n_tokens, stratum = np.empty(len(chosen), np.int64), np.empty(len(chosen), np.int64)
    offsets = pool.offsets
    for index, columns in store.walk(["n_tokens", "stratum"]):
        inside = np.flatnonzero((chosen >= offsets[index]) & (chosen < offsets[index + 1]))
        local = chosen[inside] - offsets[index]
        n_tokens[inside] = columns["n_tokens"][local]
        stratum[inside] = columns["stratum"][local]
    return Taken(chosen, n_tokens, stratum, {}, 0, len(chosen))


def choose(spec: SelectionSpec, pool: Pool, store: UnitStore, upstream: str | Path | None,
           rng: np.random.Generator, limits: SelectionLimits) -> Selected:
    """Strata and filter -> the method's priorities -> the budgeted take."""
    params = spec.params
    strata = build_strata(pool, store, params.get("strata", [SET_NAME]))
    if strata.pool_tokens.sum() < spec.budget_tokens:
        raise ValueError(f"variant {spec.name!r}: budget of {spec.budget_tokens} tokens exceeds "
                         f"the pool's {int(strata.pool_tokens.sum())} tokens")
    quotas = strata.quotas(spec.budget_tokens)
    missing: dict[str, int] = {}
    where = WhereFilter(pool, params.get("where", {}), missing)
    context = MethodContext(pool, store, params, spec.seed, rng, quotas, spec.budget_tokens,
                            limits.take, Path(upstream) if upstream else None, missing=missing)
    choice: Choice = spec.method_function()(context)
    if choice.chosen is not None:
        filtered_out = sum(int((~keep).sum()) for keep in where.chunks())  # counts, as before
        taken = exact_set(store, pool, choice.chosen)
        eligible = len(sorted_unique(taken.chosen))
    else:
        counts = put_keys(store, choice.keys, where.chunks())
        taken = streaming_take(store, "stratum", quotas, spec.budget_tokens, limits.take,
                               choice.keys.tiebreak, bool(params.get("upsample_short")))
        filtered_out, eligible = counts["filtered_out"], counts["eligible"]
    if len(taken.chosen) == 0:
        raise ValueError(f"variant {spec.name!r} selected no documents")
    return Selected(pool, strata, quotas, taken, choice.chosen is not None, eligible,
                    filtered_out, missing, context.info)


def reference_seed(spec: SelectionSpec) -> int:
    return spec.seed if spec.reference_seed is None else spec.reference_seed


def uniform_reference(spec: SelectionSpec, pool: Pool, store: UnitStore,
                      selected: Selected, limits: SelectionLimits) -> np.ndarray:
    """What the uniform variant picks at this budget (its seed), stratified by source."""
    params, seed = spec.params, reference_seed(spec)
    if (spec.method == "uniform" and seed == spec.seed
            and params.get("strata", [SET_NAME]) == [SET_NAME]
            and not params.get("where") and not params.get("upsample_short")):
        return selected.taken.chosen  # the same take: no need to repeat it
    column, sources = "stratum", selected.strata
    if params.get("strata", [SET_NAME]) != [SET_NAME]:
        column = "source_stratum"
        sources = build_strata(pool, store, [SET_NAME], column=column)
    put_keys(store, uniform_keys(seed, pool.rows))
    return streaming_take(store, column, sources.quotas(spec.budget_tokens), spec.budget_tokens,
                          limits.take, False).chosen


def overlap(a: np.ndarray, reference: np.ndarray) -> dict:
    """Overlap of the selection's distinct documents `a` with the reference's."""
    b = sorted_unique(reference)
    shared = len(np.intersect1d(a, b, assume_unique=True))
    return {"shared_documents": shared, "jaccard": jaccard(a, b),
            "fraction_of_selection": shared / len(a) if len(a) else 0.0}


def stratum_results(selected: Selected) -> list[StratumOutcome]:
    # An exact set was cut to the budget by the variant it came from, each stratum to within
    # half a document of its quota; measured against the same quota it would look short. Such a
    # stratum is short only when the pool cannot fill it; the base's manifest reports its own.
    strata, taken, n = selected.strata, selected.taken, len(selected.strata.names)
    return outcomes(strata.names, strata.pool_documents, strata.pool_tokens, selected.quotas,
                    np.bincount(taken.stratum, minlength=n),
                    np.bincount(taken.stratum, weights=taken.n_tokens, minlength=n)
                    .astype(np.int64),
                    None if selected.exact_set else taken.eligible_tokens)


def distinct_tokens(taken: Taken) -> int:
    """Tokens of the chosen documents, each counted once however often up-sampling repeated it
    (what the selection found in the pool, as against what training will read)."""
    order = np.argsort(taken.chosen, kind="stable")
    ordered = taken.chosen[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]
    return int(taken.n_tokens[order[first]].sum())


def manifest_record(spec: SelectionSpec, selected: Selected, distinct: int,
                    shared: dict) -> dict:
    """`distinct`: how many documents the selection holds without repeats; `shared`: its
    overlap with the uniform reference."""
    pool, chosen = selected.pool, selected.taken.chosen
    results = stratum_results(selected)
    selected_tokens = int(selected.taken.n_tokens.sum())
    unique_tokens = (selected_tokens if distinct == len(chosen)
                     else distinct_tokens(selected.taken))
    params = spec.params
    return {
        "variant": spec.name,
        "method": spec.method,
        "params": params,
        "seed": spec.seed,
        "budget_tokens": spec.budget_tokens,
        "selected_tokens": selected_tokens,
        "selected_documents": int(len(chosen)),
        "unique_documents": int(distinct),
        "unique_tokens": unique_tokens,
        "pool": pool_unit(pool),
        "pool_tokens": int(selected.strata.pool_tokens.sum()),
        "pool_documents": len(pool),
        "budget_reached": selected_tokens >= spec.budget_tokens,
        "strata_by": params.get("strata", [SET_NAME]),
        "strata": [outcome.to_dict() for outcome in results],
        "short_strata": [outcome.stratum for outcome in results if outcome.short],
        "upsampled": {selected.strata.names[code]: count
                      for code, count in selected.taken.passes.items()},
        "excluded": {
            "filtered_out": selected.filtered_out,
            "not_eligible": len(pool) - selected.eligible,
            "missing_scores": selected.missing_scores,
        },
        "order": ({"by": params["order_by"], "direction": params.get("order", "ascending")}
                  if params.get("order_by") else "shuffled"),
        "overlap_with_uniform": {"reference": f"uniform, seed {reference_seed(spec)}, same budget"}
        | shared,
    } | selected.info


def pool_unit(pool: Pool) -> dict:
    """The pool the selection drew from and its unit, as its first shard's meta sidecar
    records it (a tokenized shard: the full pool of documents)."""
    from selectlab.corpus.pools import FULL_POOL, read_pool_spec

    spec = read_pool_spec(sidecar_path(pool.attributes_dir, "meta", pool.shards[0])) \
        if pool.shards else None
    return (spec or FULL_POOL).to_dict()


def selection_limits(attributes_dir: str | Path, shards: list[str],
                     memory_mb: float | None) -> tuple[list[int], SelectionLimits]:
    """The shards' sizes and the limits a memory ceiling sets (none: everything in memory)."""
    rows = [meta_rows(attributes_dir, shard) for shard in shards]
    if memory_mb is None:
        return rows, unlimited(sum(rows))
    return rows, plan_memory(memory_mb, sum(rows), max(rows, default=0))


def run_selection(spec: SelectionSpec, attributes_dir: str | Path, shards: list[str],
                  out_dir: str | Path, upstream: str | Path | None = None,
                  memory_mb: float | None = None,
                  limits: SelectionLimits | None = None) -> tuple[dict, Taken | None]:
    """Write `selection.parquet` and `manifest.json` for one variant; return the manifest and
    the take (how many passes and candidates it needed). `limits` overrides what `memory_mb`
    would set."""
    if spec.shared_from:
        return reuse_selection(spec, upstream, out_dir), None
    rows, planned = selection_limits(attributes_dir, shards, memory_mb)
    limits = limits or planned
    rng = np.random.default_rng(spec.seed)
    pool, store = scan_pool(attributes_dir, shards, rows, limits.spill, limits.spill_dir)
    with store:
        selected = choose(spec, pool, store, upstream, rng, limits)
        distinct = sorted_unique(selected.taken.chosen)
        shared = overlap(distinct, uniform_reference(spec, pool, store, selected, limits))
    # Everything the manifest reports is counted before writing: writing then holds only the
    # training order and one bucket of rows.
    manifest = manifest_record(spec, selected, len(distinct), shared)
    taken, chosen = selected.taken, selected.taken.chosen
    del selected, distinct
    taken.n_tokens = taken.stratum = None
    ordered = training_order(chosen, spec.params, rng, pool)
    out_dir = Path(out_dir)
    write_selection(pool, ordered, out_dir / "selection.parquet", limits.bucket_rows(),
                    limits.spill_dir)
    write_json(out_dir / "manifest.json", manifest)
    return manifest, taken


def select_variant(spec: SelectionSpec, attributes_dir: str | Path, shards: list[str],
                   out_dir: str | Path, upstream: str | Path | None = None,
                   memory_mb: float | None = None) -> dict:
    """Write `selection.parquet` and `manifest.json` for one variant; return the manifest."""
    return run_selection(spec, attributes_dir, shards, out_dir, upstream, memory_mb)[0]


def reuse_selection(spec: SelectionSpec, upstream: str | Path | None,
                    out_dir: str | Path) -> dict:
    """Another variant's selection, made with the very same method, params, seed and budget,
    copied with a manifest that says so."""
    if upstream is None:
        raise ValueError(f"variant {spec.name!r} shares {spec.shared_from!r}'s selection: "
                         "give that selection as upstream input")
    source = Path(upstream)
    manifest = json.loads((source.parent / "manifest.json").read_text())
    if manifest["variant"] != spec.shared_from:
        raise ValueError(f"{source} is {manifest['variant']!r}'s selection, not "
                         f"{spec.shared_from!r}'s")
    mine = {"method": spec.method, "params": spec.params, "seed": spec.seed,
            "budget_tokens": spec.budget_tokens}
    theirs = {key: manifest[key] for key in mine}
    if json.loads(json.dumps(mine)) != theirs:
        raise ValueError(f"variant {spec.name!r} cannot share {spec.shared_from!r}'s selection: "
                         f"{mine} differs from {theirs}")
    out_dir = Path(out_dir)
    with atomic_path(out_dir / "selection.parquet") as tmp:
        shutil.copyfile(source, tmp)
    manifest = manifest | {"variant": spec.name, "selection_shared_from": spec.shared_from}
    write_json(out_dir / "manifest.json", manifest)
    return manifest
