"""Key-range segments of the strata's walks and the histograms that split them (selection.take).

A segment holds the documents of one stratum whose order key (selection.keys) lies in [h0, h1]
and whose pool position lies in [p0, p1], with their count and tokens. A pass over the pool
histograms at most one target segment per stratum into bins of the next bits of the key (or of
the position, for a segment of one key), and narrows every bin to the keys it actually holds,
so the next pass bins only what is there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from selectlab.selection.keys import KEY_MAX, order_key, priority_key


@dataclass
class Segments:
    """Key ranges of the strata's walks (in walk order within each stratum), with their
    documents and tokens. A segment holds the documents whose order key lies in [h0, h1] and
    whose position lies in [p0, p1]; p0/p1 narrow only segments of a single key."""

    stratum: np.ndarray
    h0: np.ndarray
    h1: np.ndarray
    p0: np.ndarray
    p1: np.ndarray
    count: np.ndarray
    tokens: np.ndarray

    @classmethod
    def roots(cls, n_strata: int, pool_size: int) -> Segments:
        """Every key and every position of each stratum."""
        full = np.ones(n_strata, dtype=np.uint64)
        return cls(np.arange(n_strata), 0 * full, full * KEY_MAX, 0 * full,
                   full * np.uint64(max(pool_size - 1, 0)), np.zeros(n_strata, np.int64),
                   np.zeros(n_strata, np.int64))

    def progress_bounds(self, quotas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lowest and highest progress any document of each segment can have."""
        running = np.cumsum(self.tokens)
        first = np.r_[0, np.flatnonzero(np.diff(self.stratum)) + 1]
        sizes = np.diff(np.r_[first, len(self.stratum)])
        before = running - self.tokens - np.repeat(running[first] - self.tokens[first], sizes)
        denominator = np.maximum(2 * quotas[self.stratum], 1e-9)
        return ((2 * before).astype(np.float64) / denominator,
                (2 * (before + self.tokens)).astype(np.float64) / denominator)

    def select(self, keep: np.ndarray) -> Segments:
        return Segments(*(getattr(self, name)[keep] for name in FIELDS))


FIELDS = ("stratum", "h0", "h1", "p0", "p1", "count", "tokens")


@dataclass
class Targets:
    """One segment per stratum being histogrammed in a pass, as per-stratum lookup tables."""

    active: np.ndarray  # bool per stratum
    h0: np.ndarray
    h1: np.ndarray
    p0: np.ndarray
    p1: np.ndarray
    by_key: np.ndarray  # bool: bins over the key (else over the position)
    shift: np.ndarray  # uint64
    offset: np.ndarray  # int64, first bin of the stratum's segment
    bins: int
    whole: bool = False  # every stratum's whole key range (the first pass): no range checks

    @classmethod
    def of(cls, segments: Segments, n_strata: int, bits: int) -> Targets:
        """Histogram targets for segments (at most one per stratum)."""
        active = np.zeros(n_strata, dtype=bool)
        h0, h1 = np.zeros(n_strata, np.uint64), np.zeros(n_strata, np.uint64)
        p0, p1 = np.zeros(n_strata, np.uint64), np.zeros(n_strata, np.uint64)
        by_key = np.zeros(n_strata, dtype=bool)
        shift = np.zeros(n_strata, np.uint64)
        offset = np.zeros(n_strata, np.int64)
        bins = 0
        for i in range(len(segments.stratum)):
            s = int(segments.stratum[i])
            active[s] = True
            h0[s], h1[s] = segments.h0[i], segments.h1[i]
            p0[s], p1[s] = segments.p0[i], segments.p1[i]
            by_key[s] = h0[s] < h1[s]
            width = int(h1[s] - h0[s]) if by_key[s] else int(p1[s] - p0[s])
            shift[s] = max(0, width.bit_length() - bits)
            offset[s] = bins
            bins += (width >> int(shift[s])) + 1
        whole = bool(active.all() and (h0 == 0).all() and (h1 == KEY_MAX).all())
        return cls(active, h0, h1, p0, p1, by_key, shift, offset, bins, whole)

    def histogram(self, priority: np.ndarray, tiebreak: np.ndarray | None,
                  position: np.ndarray, stratum: np.ndarray, n_tokens: np.ndarray,
                  into: Histogram) -> None:
        """Add one chunk of eligible documents to the bins. Only the priority's 32-bit key is
        computed for every document; full keys only for those whose priority falls in a
        target."""
        high = priority_key(priority)
        if self.whole:
            index = self.offset[stratum] + (high >> (self.shift[0] - np.uint64(32))) \
                .astype(np.int64)
            into.counts += np.bincount(index, minlength=self.bins)
            into.tokens += np.bincount(index, weights=n_tokens,
                                       minlength=self.bins).astype(np.int64)
            np.minimum.at(into.priority_low, index, high)
            np.maximum.at(into.priority_high, index, high)
            return
        s = stratum
        near = np.flatnonzero(self.active[s] & (high >= (self.h0 >> np.uint64(32))[s])
                              & (high <= (self.h1 >> np.uint64(32))[s]))
        s, position = s[near], position[near].astype(np.uint64)
        key = order_key(priority[near], None if tiebreak is None else tiebreak[near])
        inside = ((key >= self.h0[s]) & (key <= self.h1[s]) & (position >= self.p0[s])
                  & (position <= self.p1[s]))
        s, key, position = s[inside], key[inside], position[inside]
        distance = np.where(self.by_key[s], key - self.h0[s], position - self.p0[s])
        index = self.offset[s] + (distance >> self.shift[s]).astype(np.int64)
        into.counts += np.bincount(index, minlength=self.bins)
        into.tokens += np.bincount(index, weights=n_tokens[near][inside],
                                   minlength=self.bins).astype(np.int64)
        # Each bin's actual key (and position) range: the next pass bins only what is there.
        np.minimum.at(into.key_low, index, key)
        np.maximum.at(into.key_high, index, key)
        if into.positions:
            np.minimum.at(into.position_low, index, position)
            np.maximum.at(into.position_high, index, position)

    def split(self, found: Histogram) -> Segments:
        """The non-empty bins as segments narrowed to what they hold, in walk order."""
        owner = np.repeat(np.flatnonzero(self.active),
                          np.diff(np.r_[self.offset[self.active], self.bins]))
        nonempty = np.flatnonzero(found.counts > 0)
        s = owner[nonempty]
        if self.whole:  # first pass: priority ranges, any tiebreak (none: low bits are 0)
            found.key_low = found.priority_low.astype(np.uint64) << np.uint64(32)
            found.key_high = (found.priority_high.astype(np.uint64) << np.uint64(32)) \
                | np.uint64(0xFFFFFFFF if found.tiebreak else 0)
        low, high = found.key_low[nonempty], found.key_high[nonempty]
        # A bin of one key holds every document of that key: its positions order them.
        if found.positions:
            one_key = low == high
            p0 = np.where(one_key, found.position_low[nonempty], self.p0[s])
            p1 = np.where(one_key, found.position_high[nonempty], self.p1[s])
        else:
            p0, p1 = self.p0[s], self.p1[s]
        return Segments(s.astype(np.int64), low, high, p0, p1,
                        found.counts[nonempty], found.tokens[nonempty])


@dataclass
class Histogram:
    """Documents, tokens and the key (and position) range of every bin of one pass."""

    counts: np.ndarray
    tokens: np.ndarray
    key_low: np.ndarray
    key_high: np.ndarray
    priority_low: np.ndarray  # uint32 priority keys, the first pass's ranges
    priority_high: np.ndarray
    tiebreak: bool
    positions: bool
    position_low: np.ndarray | None = None
    position_high: np.ndarray | None = None

    @classmethod
    def empty(cls, bins: int, tiebreak: bool, positions: bool) -> Histogram:
        low, high = np.full(bins, KEY_MAX, np.uint64), np.zeros(bins, np.uint64)
        return cls(np.zeros(bins, np.int64), np.zeros(bins, np.int64), low, high.copy(),
                   np.full(bins, 0xFFFFFFFF, np.uint32), np.zeros(bins, np.uint32), tiebreak,
                   positions, low.copy() if positions else None,
                   high.copy() if positions else None)


def replace(segments: Segments, refined: Segments, targets: Targets) -> Segments:
    """Segments with every histogrammed one replaced by its bins, kept in walk order."""
    was_target = targets.active[segments.stratum] & (segments.h0 == targets.h0[segments.stratum]) \
        & (segments.h1 == targets.h1[segments.stratum]) \
        & (segments.p0 == targets.p0[segments.stratum]) \
        & (segments.p1 == targets.p1[segments.stratum])
    kept = segments.select(~was_target)
    merged = Segments(*(np.concatenate([getattr(kept, name), getattr(refined, name)])
                        for name in FIELDS))
    order = np.lexsort((merged.p0, merged.h0, merged.stratum))
    return merged.select(order)
