"""Corruption operators that give the embedded corpus a known quality gradient.

Each operator takes `(text, severity, rng, context)` and returns a damaged copy of `text`. The
damage imitates the low-quality text that DataMan's quality criteria are meant to catch; the
builder records operator and severity per document as ground truth for the raters.

Severity is a number in (0, 1]; it sets how much of the text is affected, never the kind of
damage. Every operator draws the same random numbers for a text whatever the severity and
compares them with a severity-dependent threshold, so for a fixed seed the damaged parts at a
lower severity are a subset of those at a higher one: damage grows monotonically with severity,
per document and not just on average. Every operator changes the text at least once.

ocr_noise
    Character garbling as from bad OCR or broken encodings: letters swapped for look-alikes
    (l/1/I, O/0, rn/m, e/c, S/5 ...), spaces dropped (merged words) or doubled, spaces pushed
    into words, stray symbols. Severity s garbles each character with probability 0.015 + 0.135 s.
line_repetition
    Repeated lines (or sentences, for text with fewer than three lines), each repeated one to
    three extra times right after itself, like scraped pages that print a menu or a boilerplate
    line over and over. Each unit is repeated with probability 0.05 + 0.45 s.
ngram_repetition
    Word n-grams (n = 1..3) repeated inside sentences ("the model the model the model"), the
    stutter of broken templates and degenerate generated text. A repetition starts after each
    word with probability 0.02 + 0.13 s; never across a sentence end.
language_mixing
    Sentences replaced by consecutive sentences of a foreign-language donor passage (from
    `CorruptionContext.donor_texts`), so the document switches language mid-stream. Each
    sentence is replaced with probability 0.1 + 0.6 s; if that would replace all of them, the
    one with the highest draw stays, so some original text always remains.
spam_insertion
    Advertising, SEO and site boilerplate lines inserted between sentences and lines: cookie
    banners, "click here" offers, share bars, login bars, keyword stuffing built from the
    document's own frequent words. A spam block (one to four lines, more at higher severity)
    goes into each gap between lines (between sentences, for text with fewer than three
    lines), before the first and after the last, with probability 0.15 + 0.6 s.
truncation
    The text cut after a word in the middle of a sentence: the kept share of characters is
    0.7 - 0.65 s (so 30 % is lost at the mildest and 95 % at severity 1), jittered by +-5 % of
    itself, and never less than three words.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from selectlab.corpus.spam import spam_line


@dataclass(frozen=True)
class CorruptionContext:
    """What operators need besides the text: foreign-language passages for language mixing."""

    donor_texts: tuple[str, ...] = ()


Operator = Callable[[str, float, random.Random, CorruptionContext], str]

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
_LINE_BREAK = re.compile(r"\n")
_TOKEN = re.compile(r"\S+|\s+")
_WORD_CHARS = re.compile(r"[A-Za-zÀ-ÿ]{5,}")


def _threshold(severity: float, at_zero: float, at_one: float) -> float:
    return at_zero + (at_one - at_zero) * severity


def _split_units(text: str, pattern: re.Pattern) -> list[str]:
    """Pieces of `text`, each keeping its trailing separator, that join back to `text`."""
    units, start = [], 0
    for match in pattern.finditer(text):
        if match.start() > start:
            units.append(text[start:match.end()])
            start = match.end()
    if start < len(text):
        units.append(text[start:])
    return units


def _sentences_or_lines(text: str) -> tuple[list[str], str]:
    """Lines when the text has several (code, lists, verse), else its sentences; and the
    separator that ends a unit of that kind."""
    lines = _split_units(text, _LINE_BREAK)
    if sum(1 for line in lines if line.strip()) >= 3:
        return lines, "\n"
    return [sentence for line in lines for sentence in _split_units(line, _SENTENCE_BREAK)], " "


def _sentences(text: str) -> list[str]:
    lines = _split_units(text, _LINE_BREAK)
    return [sentence for line in lines for sentence in _split_units(line, _SENTENCE_BREAK)]


def _first_to_fall(draws: list[float], eligible: list[bool]) -> int | None:
    """The eligible unit with the lowest draw: the first one any severity damages."""
    candidates = [i for i, ok in enumerate(eligible) if ok]
    return min(candidates, key=lambda i: draws[i]) if candidates else None


# -- ocr_noise ---------------------------------------------------------------------------------
_LOOK_ALIKES = {
    "l": ("1", "I", "|"), "I": ("l", "1", "|"), "1": ("l", "I"), "i": ("l", "!", "í"),
    "O": ("0", "Q"), "o": ("0", "c", "e"), "0": ("O", "o"), "e": ("c", "é", "o"),
    "c": ("e", "("), "a": ("o", "@", "e"), "m": ("rn", "nn"), "n": ("ri", "h"),
    "h": ("b", "li"), "b": ("h", "6"), "S": ("5", "$"), "s": ("5", "$"), "B": ("8", "ß"),
    "g": ("9", "q"), "q": ("g", "9"), "t": ("f", "+"), "f": ("t", "ſ"), "u": ("v", "ii"),
    "v": ("u", "y"), "w": ("vv", "uu"), "d": ("cl", "ol"), "r": ("n", "t"), "E": ("F", "€"),
    "Z": ("2",), "z": ("2",), "G": ("6", "C"), "D": ("0", "O"),
}
_STRAY_SYMBOLS = "~^|¦•«»¬°§¤*#_"


def _garble(char: str, pick: float) -> str:
    if char == " ":
        return "" if pick < 0.7 else "  "  # merged words, or a torn gap
    if char in _LOOK_ALIKES:
        options = _LOOK_ALIKES[char]
        return options[int(pick * len(options))]
    if char.isalnum():
        symbol = _STRAY_SYMBOLS[int(pick * len(_STRAY_SYMBOLS))]
        return char + " " if pick < 0.4 else char + symbol
    return _STRAY_SYMBOLS[int(pick * len(_STRAY_SYMBOLS))]


def ocr_noise(text: str, severity: float, rng: random.Random, context: CorruptionContext) -> str:
    rate = _threshold(severity, 0.015, 0.15)
    draws = [(rng.random(), rng.random()) for _ in text]
    out = [_garble(c, pick) if c != "\n" and u < rate else c
           for c, (u, pick) in zip(text, draws, strict=True)]
    if "".join(out) == text:  # a very short text may escape every draw
        eligible = [c != "\n" and _garble(c, pick) != c for c, (_, pick) in zip(text, draws,
                                                                                 strict=True)]
        i = _first_to_fall([u for u, _ in draws], eligible)
        if i is not None:
            out[i] = _garble(text[i], draws[i][1])
    return "".join(out)


# -- line_repetition ---------------------------------------------------------------------------
def _with_break(unit: str, separator: str) -> str:
    """`unit` ending in whitespace, so a copy of it can follow it."""
    return unit if unit[-1].isspace() else unit + separator


def line_repetition(text: str, severity: float, rng: random.Random,
                    context: CorruptionContext) -> str:
    units, separator = _sentences_or_lines(text)
    draws = [(rng.random(), rng.random()) for _ in units]
    rate = _threshold(severity, 0.05, 0.50)
    forced = _first_to_fall([u for u, _ in draws], [bool(unit.strip()) for unit in units])
    out = []
    for i, (unit, (u, pick)) in enumerate(zip(units, draws, strict=True)):
        if unit.strip() and (u < rate or i == forced):
            copy = _with_break(unit, separator)
            out.append(copy * (2 + int(pick * 3)))  # the unit and 1-3 copies of it
        else:
            out.append(unit)
    return "".join(out)


# -- ngram_repetition --------------------------------------------------------------------------
def ngram_repetition(text: str, severity: float, rng: random.Random,
                     context: CorruptionContext) -> str:
    tokens = _TOKEN.findall(text)
    word_positions = [i for i, t in enumerate(tokens) if not t.isspace()]
    draws = [(rng.random(), rng.random(), rng.random()) for _ in word_positions]
    rate = _threshold(severity, 0.02, 0.15)
    # Eligible: a word that does not end its sentence (repeating across "." would not be
    # *inside* a sentence).
    eligible = [not tokens[i].endswith((".", "!", "?")) for i in word_positions]
    forced = _first_to_fall([u for u, _, _ in draws], eligible)
    inserted: dict[int, str] = {}
    sentence_words: list[str] = []
    for k, i in enumerate(word_positions):
        sentence_words.append(tokens[i])
        u, pick_n, pick_times = draws[k]
        if eligible[k] and (u < rate or k == forced):
            n = min(1 + int(pick_n * 3), len(sentence_words))
            gram = " ".join(sentence_words[-n:])
            inserted[i] = (" " + gram) * (1 + int(pick_times * 3))
        if not eligible[k]:
            sentence_words = []
    return "".join(t + inserted.get(i, "") for i, t in enumerate(tokens))


# -- language_mixing ---------------------------------------------------------------------------
def language_mixing(text: str, severity: float, rng: random.Random,
                    context: CorruptionContext) -> str:
    if not context.donor_texts:
        raise ValueError("language_mixing needs CorruptionContext.donor_texts "
                         "(foreign-language passages)")
    donor = context.donor_texts[rng.randrange(len(context.donor_texts))]
    donor_sentences = [s.strip() for s in _sentences(donor) if s.strip()]
    if not donor_sentences:
        raise ValueError("language_mixing donor text has no sentences")
    cursor = rng.randrange(len(donor_sentences))
    units = _sentences(text)
    draws = [rng.random() for _ in units]
    rate = _threshold(severity, 0.10, 0.70)
    content = [bool(u.strip()) for u in units]
    chosen = [ok and d < rate for ok, d in zip(content, draws, strict=True)]
    if sum(content) <= 1:  # nothing to interleave with: append foreign sentences instead
        extra = [donor_sentences[(cursor + j) % len(donor_sentences)]
                 for j in range(1 + int(3 * severity))]
        return _with_break(text, " ") + " ".join(extra)
    forced = _first_to_fall(draws, content)
    chosen[forced] = True
    if all(c for c, ok in zip(chosen, content, strict=True) if ok):
        keep = _first_to_fall([-d for d in draws], content)  # the last any severity would take
        chosen[keep] = False
    out = []
    for unit, replace in zip(units, chosen, strict=True):
        if replace:
            body = unit.rstrip()
            out.append(donor_sentences[cursor % len(donor_sentences)] + unit[len(body):])
            cursor += 1
        else:
            out.append(unit)
    return "".join(out)


# -- spam_insertion ----------------------------------------------------------------------------
def document_keywords(text: str, count: int = 4) -> list[str]:
    """The document's most frequent long words, for keyword stuffing."""
    words = Counter(w.lower() for w in _WORD_CHARS.findall(text))
    ranked = [w for w, _ in sorted(words.items(), key=lambda item: (-item[1], item[0]))]
    return (ranked + ["deals", "online", "free", "best"])[:count]


def spam_insertion(text: str, severity: float, rng: random.Random,
                   context: CorruptionContext) -> str:
    keywords = document_keywords(text)
    units, _ = _sentences_or_lines(text)
    gaps = len(units) + 1  # before the first unit, between units, after the last
    draws = [(rng.random(), rng.random(), rng.random()) for _ in range(gaps)]
    rate = _threshold(severity, 0.15, 0.75)
    forced = _first_to_fall([u for u, _, _ in draws], [True] * gaps)
    out = []
    for gap in range(gaps):
        u, pick_count, pick_line = draws[gap]
        if u < rate or gap == forced:
            lines = 1 + int(pick_count * (1 + 3 * severity))
            block = [spam_line((pick_line + j * 0.618) % 1.0, keywords) for j in range(lines)]
            if out and not out[-1].endswith("\n"):
                out[-1] = out[-1].rstrip(" ") + "\n"
            out.append("\n".join(block) + "\n")
        if gap < len(units):
            out.append(units[gap])
    return "".join(out).rstrip("\n") + ("\n" if text.endswith("\n") else "")


# -- truncation --------------------------------------------------------------------------------
def truncation(text: str, severity: float, rng: random.Random,
               context: CorruptionContext) -> str:
    jitter = 1 + 0.1 * (rng.random() - 0.5)
    target = len(text) * (0.70 - 0.65 * severity) * jitter
    word_ends = [m.end() for m in re.finditer(r"\S+", text)]
    if len(word_ends) < 2:
        return text[:max(1, len(text) // 2)]
    # Cut after a word; if that word ends a sentence, cut one word earlier, so the text stops
    # mid-sentence. Keep at least three words (or all but one, for tiny texts).
    floor = min(3, len(word_ends) - 1)
    candidates = [e for e in word_ends[floor - 1:-1] if e <= target] or [word_ends[floor - 1]]
    k = word_ends.index(candidates[-1])
    if text[word_ends[k] - 1] in ".!?" and k >= floor:
        k -= 1
    return text[:word_ends[k]]


OPERATORS: dict[str, Operator] = {
    "ocr_noise": ocr_noise,
    "line_repetition": line_repetition,
    "ngram_repetition": ngram_repetition,
    "language_mixing": language_mixing,
    "spam_insertion": spam_insertion,
    "truncation": truncation,
}


def corrupt(text: str, operator: str, severity: float, rng: random.Random,
            context: CorruptionContext | None = None) -> str:
    """Apply one named operator at `severity` in (0, 1]; see the module docstring."""
    if operator not in OPERATORS:
        raise ValueError(f"unknown corruption operator {operator!r}; "
                         f"known: {', '.join(sorted(OPERATORS))}")
    if isinstance(severity, bool) or not isinstance(severity, (int, float)) \
            or math.isnan(severity) or not 0 < severity <= 1:
        raise ValueError(f"severity must be a number in (0, 1], got {severity!r}")
    if not text.strip():
        raise ValueError("cannot corrupt an empty text")
    return OPERATORS[operator](text, float(severity), rng, context or CorruptionContext())
