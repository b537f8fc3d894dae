"""The 11 RedPajama-V2 natural-language quality signals that Meta-rater rates documents with.

Each signal follows the definition of RedPajama-V2's quality-signal pipeline
(togethercomputer/RedPajama-Data, `app/src/core/quality_signals/`, the `rps_*` signals; Meta-rater
Table 5 lists the 11 and quotes their descriptions). Our implementation; the upstream name of
each signal is given in brackets.

Text views (upstream's `Document`)
    raw words         word and punctuation runs of the raw text, `\\w+|[^\\w\\s]+` (the
                      WordPunct tokenisation upstream uses).
    normalised text   ASCII punctuation (`string.punctuation`) deleted, lower-cased, stripped,
                      whitespace runs collapsed to one space, then Unicode NFD.
    normalised words  the normalised text split on whitespace.
    lines             the text cut after every "\\n" (a line keeps its "\\n"; a last line
                      without one counts when it is not empty). Blank lines are lines.
    normalised line   a line's normalised text.

Document signals
    doc_word_count [rps_doc_word_count]
        number of normalised words.
    doc_num_sentences [rps_doc_num_sentences]
        number of matches of the regular expression `\\b[^.!?]+[.!?]*` in the raw text.
    doc_mean_word_length [rps_doc_mean_word_length]
        mean length in characters of the normalised words.
    doc_frac_unique_words [rps_doc_frac_unique_words]
        distinct normalised words / normalised words.
    doc_unigram_entropy [rps_doc_unigram_entropy]
        -sum(c/N * ln(c/N)) over the counts c of the distinct normalised words, N their total.
    doc_frac_no_alph_words [rps_doc_frac_no_alph_words]
        fraction of raw words without an ASCII letter (a-z, A-Z).
    doc_frac_chars_top_2gram / _3gram [rps_doc_frac_chars_top_2gram / _3gram]
        over the normalised words: occurrences of the most frequent word n-gram times the
        characters of its words, divided by the characters of all normalised words; 0 when no
        n-gram occurs twice (or there are fewer than n words). Ties go to the n-gram that occurs
        first.

Line signals (upstream gives one value per line; a document gets their mean over its lines,
blank lines included: Meta-rater rates documents and does not say how it reduced the lines, so
the mean is our choice)
    lines_uppercase_letter_fraction [rps_lines_uppercase_letter_fraction]
        uppercase characters / characters of the line (its "\\n" counted).
    lines_numerical_chars_fraction [rps_lines_numerical_chars_fraction]
        numeric characters (`str.isnumeric`) / characters of the normalised line; 0 when the
        normalised line is empty (a blank line, a line of punctuation).
    lines_ending_with_terminal_punctuation_mark
    [rps_lines_ending_with_terminal_punctution_mark, sic]
        1 when the line, right-stripped, ends with one of . ! ? and the right double quotation
        mark U+201D, else 0; the mean is the fraction of lines that do.

Missing values: without normalised words the word statistics are null (`missing_reason`
"no_words", word count 0), without raw words the non-alphabetic fraction is null too, and an
empty text has no line ("no_lines"). Upstream rounds to 8 decimals; we keep full precision.
Every other value is a finite number for any string, including lone surrogates left by
undecodable bytes.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence
from operator import itemgetter

import pyarrow as pa

from selectlab.annotate.base import MISSING_REASON, join_reasons
from selectlab.plugins.families import score_family

PUNCTUATION = str.maketrans("", "", string.punctuation)
WHITESPACE_RUN = re.compile(r"\s+")
SENTENCE = re.compile(r"\b[^.!?]+[.!?]*")
RAW_WORD = re.compile(r"\w+|[^\w\s]+")
ASCII_LETTER = re.compile(r"[a-zA-Z]")
TERMINAL_MARKS = (".", "!", "?", "\u201d")

COUNT_COLUMNS = ("doc_word_count", "doc_num_sentences")
LINE_COLUMNS = ("lines_uppercase_letter_fraction", "lines_numerical_chars_fraction",
                "lines_ending_with_terminal_punctuation_mark")
SIGNAL_COLUMNS = ("doc_word_count", "doc_num_sentences", "doc_mean_word_length",
                  "doc_frac_unique_words", "doc_unigram_entropy", "doc_frac_no_alph_words",
                  "doc_frac_chars_top_2gram", "doc_frac_chars_top_3gram", *LINE_COLUMNS)
SIGNALS_SCHEMA = pa.schema(
    [(name, pa.int64() if name in COUNT_COLUMNS else pa.float64()) for name in SIGNAL_COLUMNS]
    + [(MISSING_REASON, pa.string())]
)


def normalize(text: str) -> str:
    """The normalised view of a text (see the module docstring)."""
    lowered = text.translate(PUNCTUATION).lower()
    return unicodedata.normalize("NFD", WHITESPACE_RUN.sub(" ", lowered.strip()))


def normalized_words(text: str) -> list[str]:
    # NFD neither makes nor removes whitespace, so splitting replaces the strip and collapse.
    return unicodedata.normalize("NFD", text.translate(PUNCTUATION).lower()).split()


def split_lines(text: str) -> list[str]:
    """Lines as upstream cuts them: each keeps its "\\n"; a non-empty tail is a line too."""
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def frac_chars_top_ngram(words: Sequence[str], n: int, total_chars: int) -> float:
    if len(words) < n:
        return 0.0
    counts = Counter(zip(*(words[i:] for i in range(n)), strict=False))
    # max() keeps the first of equal counts, and a Counter iterates in first-occurrence order.
    gram, count = max(counts.items(), key=itemgetter(1))
    if count < 2:
        return 0.0
    return count * sum(map(len, gram)) / total_chars


def frac_no_alph_words(text: str) -> float | None:
    words = RAW_WORD.findall(text)
    if not words:
        return None
    with_letter = sum(1 for word in words if ASCII_LETTER.search(word))
    return 1.0 - with_letter / len(words)


def unigram_entropy(counts: Counter) -> float:
    total = sum(counts.values())
    spread = sum(c * math.log(c) for c in counts.values()) / total
    return max(math.log(total) - spread, 0.0)


def word_signals(words: list[str]) -> dict[str, float]:
    counts = Counter(words)
    total_chars = sum(map(len, words))
    return {
        "doc_mean_word_length": total_chars / len(words),
        "doc_frac_unique_words": len(counts) / len(words),
        "doc_unigram_entropy": unigram_entropy(counts),
        "doc_frac_chars_top_2gram": frac_chars_top_ngram(words, 2, total_chars),
        "doc_frac_chars_top_3gram": frac_chars_top_ngram(words, 3, total_chars),
    }


def numeric_fraction_of_normalized(line: str) -> float:
    """Numeric characters over the length of the line's normalised text (0 when empty)."""
    decomposed = unicodedata.normalize("NFD", line.translate(PUNCTUATION).lower())
    words = decomposed.split()
    if not words:
        return 0.0
    # The normalised line is the words joined by single spaces; spaces are never numeric.
    length = sum(map(len, words)) + len(words) - 1
    return sum(map(str.isnumeric, decomposed)) / length


def line_signals(lines: list[str]) -> dict[str, float]:
    uppercase = numeric = terminal = 0.0
    for line in lines:
        uppercase += sum(map(str.isupper, line)) / len(line)
        if not line.isspace():
            numeric += numeric_fraction_of_normalized(line)
            terminal += line.rstrip().endswith(TERMINAL_MARKS)
    return {
        "lines_uppercase_letter_fraction": uppercase / len(lines),
        "lines_numerical_chars_fraction": numeric / len(lines),
        "lines_ending_with_terminal_punctuation_mark": terminal / len(lines),
    }


def compute_signals(text: str) -> dict[str, float | int | str | None]:
    """All 11 signals of one document, plus its `missing_reason` (None when nothing is missing)."""
    values: dict[str, float | int | str | None] = dict.fromkeys(SIGNAL_COLUMNS)
    reasons = []
    words = normalized_words(text)
    values["doc_word_count"] = len(words)
    values["doc_num_sentences"] = len(SENTENCE.findall(text))
    if words:
        values.update(word_signals(words))
    else:
        reasons.append("no_words")
    values["doc_frac_no_alph_words"] = frac_no_alph_words(text)
    lines = split_lines(text)
    if lines:
        values.update(line_signals(lines))
    else:
        reasons.append("no_lines")
    values[MISSING_REASON] = join_reasons(reasons)
    return values


@score_family({name: "int64" if name in COUNT_COLUMNS else "float64" for name in SIGNAL_COLUMNS})
def redpajama_signals(texts: list[str]) -> dict[str, list]:
    """The family on the plugin contract (selectlab.plugins), as a user's family is written:
    the 11 signals of each text and its `missing_reason`."""
    rows = [compute_signals(text) for text in texts]
    return {name: [row[name] for row in rows] for name in SIGNALS_SCHEMA.names}
