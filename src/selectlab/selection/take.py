"""The budgeted take over a pool that need not fit in memory, exactly as `budgeted_take`.

`budgeted_take` (selection.budget) walks each stratum in priority order and merges the strata by
progress; its result is, per stratum, a *prefix* of that walk. So the pool never has to be
sorted: it is enough to find, per stratum, a prefix that surely contains the chosen documents
and is small enough to hold, collect exactly those documents, and run `budgeted_take` on them.
Every chosen document is in the collected set and keeps its walk position, token midpoint and
progress, so the result is identical (same documents, same order).

How the prefix is found (an exact, histogram-driven radix select):
1. A document's place in its stratum's walk is the pair (order key, pool position), the order
   key being priority then tiebreak (selection.keys). The key range of every stratum is one
   segment; a pass over the pool histograms each segment into at most 2^bits bins (documents
   and tokens per bin).
2. A segment starting after S tokens of its stratum and holding t tokens has all its documents'
   progress in [2S, 2(S + t)] / (2 q_s), the same float64 division the merge uses. The smallest
   level P_b at which the segments *surely* below it hold the budget bounds the cut: nothing
   past P_b is chosen, so each stratum's segments starting at or below P_b are the prefix.
3. Below the lowest level at which the segments that *may* lie under it hold the budget, every
   document is chosen. If the prefix is too large for memory, the taken segments reaching past
   that level (the ones that may hold both chosen and unchosen documents) are histogrammed
   again on the next bits of the key (selection.segments; then of the position, for documents
   with equal keys), which narrows the cut from both sides; each pass costs one walk over the
   pool. Typical pools need one refinement at most; ties (1-5 ratings) resolve on the
   tiebreak bits, exact duplicates on positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from selectlab.selection.budget import budgeted_take
from selectlab.selection.columns import prefetched
from selectlab.selection.keys import order_key, priority_key
from selectlab.selection.segments import Histogram, Segments, Targets, replace
from selectlab.selection.store import UnitStore
from selectlab.selection.upsample import upsampled_take

# Refinement rounds before giving up: 64-bit keys and positions at 4+ bits a round fit easily.
MAX_ROUNDS = 40


@dataclass(frozen=True)
class Limits:
    """How much of the pool a take may hold at once."""

    solve_units: int  # documents the final in-memory take may hold
    bits: int = 16  # histogram bins per segment and pass = 2^bits
    max_bins: int = 1 << 22  # all segments' bins together in one pass


@dataclass
class Taken:
    chosen: np.ndarray  # pool positions in merged order (repeats when up-sampled)
    n_tokens: np.ndarray  # int64, of each chosen entry
    stratum: np.ndarray  # int64, of each chosen entry
    passes: dict[int, int]  # up-sampled stratum -> passes over it
    walks: int  # passes over the pool's stored columns
    collected: int  # documents held by the final in-memory take
    eligible_tokens: np.ndarray | None = None  # int64 per stratum: tokens of finite priority


@dataclass
class Cut:
    """Per stratum, the end (key, position) of the prefix to collect; -1 collects nothing."""

    end_key: np.ndarray
    end_position: np.ndarray
    collects: np.ndarray  # bool per stratum
    documents: int
    uncertain: Segments  # taken segments that may hold both chosen and unchosen documents


def plan_cut(segments: Segments, quotas: np.ndarray, budget: int,
             whole: np.ndarray) -> Cut:
    """The prefix per stratum that surely holds the chosen documents (see the module notes);
    strata flagged in `whole` are collected entirely."""
    n_strata = len(quotas)
    low, high = segments.progress_bounds(quotas)
    if segments.tokens.sum() < budget:
        level, surely_before = np.inf, np.inf
    else:
        level = first_level(high, segments.tokens, budget)
        # Below the lowest level at which the segments that may lie under it hold the budget,
        # every document is chosen: the cut is at or past it.
        surely_before = first_level(low, segments.tokens, budget)
    taken = (low <= level) | whole[segments.stratum]
    end_key = np.zeros(n_strata, np.uint64)
    end_position = np.zeros(n_strata, np.uint64)
    collects = np.zeros(n_strata, dtype=bool)
    index = np.flatnonzero(taken)
    # Segments are in walk order per stratum, so the last taken one of a stratum ends its prefix.
    last = index[np.r_[np.diff(segments.stratum[index]) != 0, True]] if len(index) else index
    end_key[segments.stratum[last]] = segments.h1[last]
    end_position[segments.stratum[last]] = segments.p1[last]
    collects[segments.stratum[last]] = True
    uncertain = taken & (high >= surely_before) & (segments.count > 1) \
        & ~whole[segments.stratum]
    return Cut(end_key, end_position, collects, int(segments.count[taken].sum()),
               segments.select(uncertain))


def first_level(levels: np.ndarray, tokens: np.ndarray, budget: int) -> float:
    """The lowest of `levels` at which the tokens of segments at or under it reach the budget."""
    order = np.argsort(levels, kind="stable")
    reached = np.searchsorted(np.cumsum(tokens[order]), budget, side="left")
    return float(levels[order[reached]])


def largest_per_stratum(segments: Segments) -> Segments:
    """The segment with the most documents in each stratum that has any."""
    order = np.lexsort((-segments.count, segments.stratum))
    first = order[np.r_[True, np.diff(segments.stratum[order]) != 0]] if len(order) else order
    return segments.select(np.sort(first))


class KeyedWalk:
    """Walks the store yielding each chunk's eligible documents with their order keys."""

    def __init__(self, store: UnitStore, strata: str, tiebreak: bool):
        self.store, self.strata = store, strata
        self.names = ["priority", "n_tokens", strata] + (["tiebreak"] if tiebreak else [])
        self.tiebreak = tiebreak
        self.offsets = np.r_[0, np.cumsum(store.chunk_rows)].astype(np.int64)
        self.size = int(self.offsets[-1])
        self.walks = 0

    def __iter__(self):
        self.walks += 1
        return prefetched(self.read())

    def read(self):
        for index, columns in self.store.walk(self.names):
            priority = columns["priority"]
            eligible = np.flatnonzero(np.isfinite(priority))
            tiebreak = columns["tiebreak"][eligible] if self.tiebreak else None
            yield (eligible + self.offsets[index], priority[eligible], tiebreak,
                   columns["n_tokens"][eligible].astype(np.int64),
                   columns[self.strata][eligible].astype(np.int64))


def histogram_pass(walk: KeyedWalk, targets: Targets, positions: bool) -> Segments:
    """Bins of every target segment; `positions` also narrows one-key bins to their positions
    (the first pass skips it: its one-key bins keep the whole pool's position range)."""
    found = Histogram.empty(targets.bins, walk.tiebreak, positions)
    for position, priority, tiebreak, n_tokens, stratum in walk:
        targets.histogram(priority, tiebreak, position, stratum, n_tokens, found)
    return targets.split(found)


def inside_cut(cut: Cut, position: np.ndarray, priority: np.ndarray,
               tiebreak: np.ndarray | None, stratum: np.ndarray) -> np.ndarray:
    """Which documents lie in their stratum's prefix: by the priority key alone, except for
    documents whose priority is the prefix's last one."""
    high = priority_key(priority)
    end = (cut.end_key >> np.uint64(32)).astype(np.uint32)[stratum]
    collects = cut.collects[stratum]
    inside = collects & (high < end)
    tie = np.flatnonzero(collects & (high == end))
    if len(tie):
        key = order_key(priority[tie], None if tiebreak is None else tiebreak[tie])
        end_key, s = cut.end_key[stratum[tie]], stratum[tie]
        inside[tie] = (key < end_key) | ((key == end_key) & (
            position[tie].astype(np.uint64) <= cut.end_position[s]))
    return inside


def collect(walk: KeyedWalk, cut: Cut | None) -> dict[str, np.ndarray]:
    """Every eligible document inside the cut's prefixes (all of them without a cut)."""
    parts: dict[str, list] = {name: [] for name in ("position", "priority", "tiebreak",
                                                     "n_tokens", "stratum")}
    for position, priority, tiebreak, n_tokens, stratum in walk:
        if cut is not None:
            inside = np.flatnonzero(inside_cut(cut, position, priority, tiebreak, stratum))
            position, priority, n_tokens, stratum = (position[inside], priority[inside],
                                                      n_tokens[inside], stratum[inside])
            tiebreak = tiebreak[inside] if tiebreak is not None else None
        for name, values in (("position", position), ("priority", priority),
                             ("tiebreak", tiebreak), ("n_tokens", n_tokens),
                             ("stratum", stratum)):
            if values is not None:
                parts[name].append(values)
    held = {}
    for name in list(parts):  # one column at a time: the parts of only one are held twice
        values = parts.pop(name)
        held[name] = np.concatenate(values) if values else None
        del values
    return held


def streaming_take(store: UnitStore, strata: str, quotas: np.ndarray, budget: int,
                   limits: Limits, tiebreak: bool, upsample: bool = False) -> Taken:
    """The budgeted take of the store's `priority` (and `tiebreak`) columns over `strata`.

    With `upsample`, strata whose eligible tokens fall short of their quota are collected whole
    and repeated as `upsampled_take` does. Raises MemoryError when the chosen documents alone
    exceed `limits.solve_units`.
    """
    if budget <= 0:
        raise ValueError(f"budget must be positive, got {budget}")
    n_strata = len(quotas)
    walk = KeyedWalk(store, strata, tiebreak)
    roots = Segments.roots(n_strata, walk.size)
    segments = histogram_pass(walk, Targets.of(roots, n_strata, pass_bits(limits, n_strata)),
                              positions=False)
    eligible = np.zeros(n_strata, np.int64)
    np.add.at(eligible, segments.stratum, segments.tokens)
    if len(segments.stratum) == 0:
        return solve({}, quotas, budget, None, walk.walks, eligible)
    short = np.flatnonzero((eligible < quotas) & (eligible > 0)) if upsample else None
    whole = np.zeros(n_strata, dtype=bool)
    if short is not None:
        whole[short] = True
    cut = plan_cut(segments, quotas, budget, whole)
    rounds = 0
    while cut.documents > limits.solve_units:
        chosen = largest_per_stratum(cut.uncertain)
        rounds += 1
        if len(chosen.stratum) == 0 or rounds > MAX_ROUNDS:
            raise MemoryError(
                f"the selection needs about {cut.documents:,} documents in memory, more than "
                f"the {limits.solve_units:,} the memory ceiling allows: raise "
                "selection.memory_mb")
        targets = Targets.of(chosen, n_strata, pass_bits(limits, len(chosen.stratum)))
        segments = replace(segments, histogram_pass(walk, targets, positions=True), targets)
        cut = plan_cut(segments, quotas, budget, whole)
    return solve(collect(walk, cut), quotas, budget, short, walk.walks, eligible)


def pass_bits(limits: Limits, targets: int) -> int:
    """Bits per segment so that one pass's bins stay within `limits.max_bins`."""
    return max(1, min(limits.bits, (limits.max_bins // max(targets, 1)).bit_length() - 1))


def solve(held: dict[str, np.ndarray], quotas: np.ndarray, budget: int,
          short: np.ndarray | None, walks: int, eligible: np.ndarray) -> Taken:
    """`budgeted_take` (or `upsampled_take`) on the collected documents."""
    positions = held.get("position")
    if positions is None or len(positions) == 0:
        empty = np.zeros(0, np.int64)
        return Taken(empty, empty, empty, {}, walks, 0, eligible)
    stratum, n_tokens = held["stratum"], held["n_tokens"]
    if short is not None:
        local, passes = upsampled_take(stratum, n_tokens, held["priority"], budget, quotas,
                                       held["tiebreak"], short)
    else:
        local, passes = budgeted_take(stratum, n_tokens, held["priority"], budget, quotas,
                                      held["tiebreak"]), {}
    return Taken(positions[local], n_tokens[local], stratum[local], passes, walks,
                 len(positions), eligible)
