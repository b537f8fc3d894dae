"""An independent, deliberately literal implementation of the 11 RedPajama-V2 signals, written
from upstream's definitions (togethercomputer/RedPajama-Data, app/src/core): nltk's
WordPunctTokenizer for raw words, the `([^\\n]*\\n|[^\\n]+$)` line split, per-line values
averaged over lines, `Counter.most_common` for the top n-gram. No shared code with
`selectlab.annotate.signals`; tests compare the two per signal.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter

from nltk.tokenize import WordPunctTokenizer

_TOKENIZER = WordPunctTokenizer()
_DROP_PUNCTUATION = str.maketrans("", "", string.punctuation)


def reference_normalize(text: str) -> str:
    text = text.translate(_DROP_PUNCTUATION).lower().strip()
    text = re.sub(r"\s+", " ", text)
    return unicodedata.normalize("NFD", text)


def reference_lines(text: str) -> list[str]:
    return [m.group(0) for m in re.finditer(r"([^\n]*\n|[^\n]+$)", text)]


def _top_ngram_fraction(words: list[str], n: int) -> float:
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    top = Counter(grams).most_common(1)
    if not top or top[0][1] <= 1:
        return 0.0
    gram, count = top[0]
    return sum(len(w) for w in gram) * count / sum(len(w) for w in words)


def reference_signals(text: str) -> dict[str, float | None]:
    normalized = reference_normalize(text)
    words = normalized.split()
    raw_words = _TOKENIZER.tokenize(text)
    lines = reference_lines(text)
    out: dict[str, float | None] = {
        "doc_word_count": float(len(words)),
        "doc_num_sentences": float(len(re.findall(r"\b[^.!?]+[.!?]*", text))),
    }
    if words:
        counts = Counter(words)
        total = sum(counts.values())
        out["doc_mean_word_length"] = sum(len(w) for w in words) / len(words)
        out["doc_frac_unique_words"] = len(set(words)) / len(words)
        out["doc_unigram_entropy"] = sum(-c / total * math.log(c / total)
                                         for c in counts.values())
        out["doc_frac_chars_top_2gram"] = _top_ngram_fraction(words, 2)
        out["doc_frac_chars_top_3gram"] = _top_ngram_fraction(words, 3)
    else:
        for name in ("doc_mean_word_length", "doc_frac_unique_words", "doc_unigram_entropy",
                     "doc_frac_chars_top_2gram", "doc_frac_chars_top_3gram"):
            out[name] = None
    out["doc_frac_no_alph_words"] = (
        1.0 - sum(re.search(r"[a-zA-Z]", w) is not None for w in raw_words) / len(raw_words)
        if raw_words else None)
    if lines:
        upper = [sum(c.isupper() for c in line) / len(line) for line in lines]
        numeric = []
        for line in lines:
            norm = reference_normalize(line)
            numeric.append(sum(c.isnumeric() for c in norm) / len(norm) if norm else 0.0)
        terminal = [float(line.rstrip().endswith((".", "!", "?", "\u201d"))) for line in lines]
        out["lines_uppercase_letter_fraction"] = sum(upper) / len(lines)
        out["lines_numerical_chars_fraction"] = sum(numeric) / len(lines)
        out["lines_ending_with_terminal_punctuation_mark"] = sum(terminal) / len(lines)
    else:
        for name in ("lines_uppercase_letter_fraction", "lines_numerical_chars_fraction",
                     "lines_ending_with_terminal_punctuation_mark"):
            out[name] = None
    return out
