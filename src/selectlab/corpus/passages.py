"""Pieces every corpus reader shares: the `RawText` record, passage splitting, sampling, mixing.

Readers cut long texts into passages at the coarsest boundary that fits: blank-line paragraphs
first (top-level defs in code are separated by blank lines too), then lines, then sentences, then
words. A single word longer than `max_chars` (a base64 blob, a long URL) is the only thing ever
cut in the middle, since there is no boundary to cut it at.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

SOURCE_KEYS = ("wikipedia", "book", "code", "docs", "web")

# Separators at each level keep themselves at the end of the piece before them, so joining the
# pieces again gives back the text exactly (code indentation included).
_LEVELS = (
    re.compile(r"\n(?:[ \t]*\n)+"),  # blank line(s): paragraphs, def/class blocks
    re.compile(r"\n"),  # lines
    re.compile(r"(?<=[.!?;:])\s+"),  # sentences (and clauses, for very long sentences)
    re.compile(r"\s+"),  # words
)


class MissingResourceError(RuntimeError):
    """An offline resource a reader needs is not installed on this machine."""


@dataclass(frozen=True)
class RawText:
    source: str  # one of SOURCE_KEYS
    detail: str  # where exactly it came from, e.g. "kjv:Genesis 1:1-20"
    text: str


def reader_limits(params: Mapping) -> tuple[int, int, int]:
    """Return (max_docs, min_chars, max_chars) from reader params, checking they make sense."""
    try:
        max_docs, min_chars, max_chars = (int(params[k]) for k in ("max_docs", "min_chars",
                                                                    "max_chars"))
    except KeyError as missing:
        raise ValueError(f"reader params need max_docs, min_chars and max_chars; "
                         f"missing {missing}") from None
    if max_docs < 0 or min_chars < 1 or max_chars < min_chars:
        raise ValueError(f"bad reader limits: max_docs={max_docs}, min_chars={min_chars}, "
                         f"max_chars={max_chars} (need max_docs >= 0, 1 <= min_chars <= max_chars)")
    return max_docs, min_chars, max_chars


def split_keep(text: str, pattern: re.Pattern) -> list[str]:
    """Split after every match of `pattern`, each separator staying on the piece before it."""
    pieces, start = [], 0
    for match in pattern.finditer(text):
        if match.end() > start and match.start() > start:
            pieces.append(text[start:match.end()])
            start = match.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def _pack(text: str, max_chars: int, level: int = 0) -> list[str]:
    if len(text.rstrip()) <= max_chars:
        return [text]
    if level == len(_LEVELS):
        return [text[i:i + max_chars] for i in range(0, len(text), max_chars)]
    pieces = split_keep(text, _LEVELS[level])
    if len(pieces) == 1:
        return _pack(text, max_chars, level + 1)
    packed: list[str] = []
    current = ""
    for piece in pieces:
        if len((current + piece).rstrip()) <= max_chars:
            current += piece
            continue
        if current:
            packed.append(current)
        current = ""
        if len(piece.rstrip()) <= max_chars:
            current = piece
        else:  # the tail of an oversized piece may still share a passage with what follows
            *full, current = _pack(piece, max_chars, level + 1)
            packed.extend(full)
    if current:
        packed.append(current)
    return packed


def split_passages(text: str, min_chars: int, max_chars: int) -> list[str]:
    """Cut `text` into passages of at most `max_chars`, dropping those under `min_chars`."""
    text = text.replace("\r\n", "\n").strip("\n")
    passages = []
    for piece in _pack(text, max_chars):
        piece = piece.strip("\n").rstrip()
        if len(piece.strip()) >= min_chars:
            passages.append(piece)
    return passages


def part_detail(detail: str, index: int, count: int) -> str:
    """Name passage `index` of `count` cut from one text; a text kept whole keeps its name."""
    return detail if count == 1 else f"{detail}[{index + 1}/{count}]"


def sample_passages(passages: Sequence[object], cap: int | None, rng: random.Random,
                    keep_first: bool = False) -> list[int]:
    """Indices (in text order) of at most `cap` passages, drawn at random.

    `keep_first` always keeps passage 0, e.g. the part of a web page carrying its header.
    """
    indices = list(range(len(passages)))
    if cap is None or len(indices) <= cap:
        return indices
    if cap <= 0:
        return []
    if keep_first:
        return [0] + sorted(rng.sample(indices[1:], cap - 1))
    return sorted(rng.sample(indices, cap))


def child_rng(rng: random.Random) -> random.Random:
    """A new generator seeded from `rng`, so sub-streams do not disturb each other's draws."""
    return random.Random(rng.getrandbits(64))


def mix_quotas(weights: Mapping[str, float], total: int) -> dict[str, int]:
    """Split `total` documents between streams in proportion to `weights` (largest remainder)."""
    if not weights or any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise ValueError(f"mix weights must be non-negative with a positive sum, got {weights}")
    scale = total / sum(weights.values())
    exact = {name: w * scale for name, w in weights.items()}
    quotas = {name: int(value) for name, value in exact.items()}
    leftover = total - sum(quotas.values())
    by_remainder = sorted(exact, key=lambda name: (-(exact[name] - quotas[name]), name))
    for name in by_remainder[:leftover]:
        quotas[name] += 1
    return quotas


def take_mixed(streams: Mapping[str, Iterable[RawText]], weights: Mapping[str, float],
               total: int, rng: random.Random) -> list[RawText]:
    """Draw `total` texts from lazy streams in proportion to `weights`, shuffled together.

    Texts repeated within or across streams are skipped (see `distinct`). A stream that runs
    dry leaves its shortfall to the others (in name order), so a small sub-source cannot make
    the reader return fewer documents than asked for. Streams with zero weight are never
    started, so their data need not be installed.
    """
    unknown = set(weights) - set(streams)
    if unknown:
        raise ValueError(f"unknown mix components {sorted(unknown)}; known: {sorted(streams)}")
    quotas = mix_quotas(weights, total)
    seen: set[str] = set()
    active = {name: distinct(streams[name], seen) for name in sorted(weights) if weights[name] > 0}
    chosen: list[RawText] = []
    for name, stream in active.items():
        chosen.extend(itertools.islice(stream, quotas[name]))
    while len(chosen) < total and active:
        for name in list(active):
            item = next(active[name], None)
            if item is None:
                del active[name]
                continue
            chosen.append(item)
            if len(chosen) == total:
                break
    rng.shuffle(chosen)
    return chosen


def distinct(texts: Iterable[RawText], seen: set[str] | None = None) -> Iterator[RawText]:
    """Skip texts equal (up to whitespace) to one already yielded.

    Shared boilerplate (codec classes in every `encodings` module, identical changelogs of
    sibling packages, bare page footers) would otherwise let one text be both a training and a
    held-out document.
    """
    seen = set() if seen is None else seen
    for text in texts:
        key = " ".join(text.text.split())
        if key not in seen:
            seen.add(key)
            yield text


def first_n(texts: Iterable[RawText], max_docs: int) -> Iterator[RawText]:
    """The first `max_docs` distinct texts."""
    return itertools.islice(distinct(texts), max_docs)
