"""The 11 RedPajama-V2 natural-language quality signals that Meta-rater rates documents with.

Definitions (our implementation; the RedPajama-V2 name of each signal is given in brackets):

Text views
    raw words         `text.split()`: maximal runs of non-whitespace.
    normalised text   the text with ASCII punctuation (`string.punctuation`) deleted, lower-cased,
                      whitespace runs collapsed to one space, stripped, then Unicode NFD.
    normalised words  the normalised text split on whitespace.
    lines             `text.splitlines()`, keeping only lines with a non-whitespace character
                      (a blank line carries no signal and would only dilute the line means).

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
        fraction of raw words that contain no alphabetic character (any Unicode letter).
    doc_frac_chars_top_2gram / _3gram [rps_doc_frac_chars_top_2gram / _3gram]
        over the normalised words: occurrences of the most frequent word n-gram times the
        characters of its words, divided by the characters of all normalised words. Ties go to
        the n-gram that occurs first; a document with fewer than n words scores 0.

Line signals (RedPajama-V2 gives one value per line; a document gets their mean over its lines)
    lines_uppercase_letter_fraction [rps_lines_uppercase_letter_fraction]
        uppercase characters / characters of the raw line.
    lines_numerical_chars_fraction [rps_lines_numerical_chars_fraction]
        numeric characters (`str.isnumeric`) / characters of the normalised line (0 when the
        normalised line is empty, e.g. a line of punctuation).
    lines_ending_with_terminal_punctuation_mark
    [rps_lines_ending_with_terminal_punctution_mark, sic]
        1 when the raw line, right-stripped, ends with one of . ! ? " and 0 otherwise; the mean
        is the fraction of lines that do.

Missing values: a document without normalised words (empty, whitespace or punctuation only) has
word count 0 and null word statistics (`missing_reason` "no_words"); without raw words its
non-alphabetic fraction is null too; without a non-blank line its line signals are null
("no_lines"). Every other value is a finite number for any string, including lone surrogates
left by undecodable bytes.
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

from selectlab.annotate.base import MISSING_REASON, Annotator, join_reasons
from selectlab.shards import Document

PUNCTUATION = str.maketrans("", "", string.punctuation)
WHITESPACE_RUN = re.compile(r"\s+")
SENTENCE = re.compile(r"\b[^.!?]+[.!?]*")
LETTER = re.compile(r"[^\W\d_]")  # a word character that is neither a digit nor "_"
TERMINAL_MARKS = (".", "!", "?", '"')

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
    return unicodedata.normalize("NFD", WHITESPACE_RUN.sub(" ", lowered).strip())


def normalized_words(text: str) -> list[str]:
    # Splitting makes the whitespace collapse and strip of `normalize` unnecessary.
    return unicodedata.normalize("NFD", text.translate(PUNCTUATION).lower()).split()


def frac_chars_top_ngram(words: Sequence[str], n: int, total_chars: int) -> float:
    if len(words) < n:
        return 0.0
    counts = Counter(zip(*(words[i:] for i in range(n)), strict=False))
    # max() keeps the first of equal counts, and a Counter iterates in first-occurrence order.
    gram, count = max(counts.items(), key=itemgetter(1))
    return count * sum(map(len, gram)) / total_chars


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


def line_signals(lines: list[str]) -> dict[str, float]:
    uppercase = numeric = terminal = 0.0
    for line in lines:
        uppercase += sum(map(str.isupper, line)) / len(line)
        normalized = normalize(line)
        if normalized:
            numeric += sum(map(str.isnumeric, normalized)) / len(normalized)
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
    raw_words = text.split()
    if raw_words:
        without_letter = sum(1 for match in map(LETTER.search, raw_words) if match is None)
        values["doc_frac_no_alph_words"] = without_letter / len(raw_words)
    lines = [line for line in text.splitlines() if line.strip()]
    if lines:
        values.update(line_signals(lines))
    else:
        reasons.append("no_lines")
    values[MISSING_REASON] = join_reasons(reasons)
    return values


class SignalsAnnotator(Annotator):
    kind = "signals"

    @property
    def schema(self) -> pa.Schema:
        return SIGNALS_SCHEMA

    def annotate_batch(self, docs: Sequence[Document]) -> dict[str, list]:
        rows = [compute_signals(doc.text) for doc in docs]
        return {name: [row[name] for row in rows] for name in SIGNALS_SCHEMA.names}
