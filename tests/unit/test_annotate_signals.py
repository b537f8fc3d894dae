"""The 11 RedPajama natural-language signals on hand-made documents with hand-computed values."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from selectlab.annotate.signals import (
    SIGNAL_COLUMNS,
    SIGNALS_SCHEMA,
    SignalsAnnotator,
    compute_signals,
    normalize,
)
from selectlab.shards import Document

THREE_LINES = "The cat sat.\nThe cat ran!\nA dog, 2 dogs."


def test_every_signal_of_a_small_document_matches_the_hand_computation():
    values = compute_signals(THREE_LINES)
    # normalised words: the cat sat the cat ran a dog 2 dogs -> 10 words, 27 characters
    assert values["doc_word_count"] == 10
    assert values["doc_num_sentences"] == 3
    assert values["doc_mean_word_length"] == pytest.approx(27 / 10)
    assert values["doc_frac_unique_words"] == pytest.approx(8 / 10)
    # counts: the 2, cat 2, six words once
    entropy = -(2 * 0.2 * math.log(0.2) + 6 * 0.1 * math.log(0.1))
    assert values["doc_unigram_entropy"] == pytest.approx(entropy)
    assert values["doc_frac_no_alph_words"] == pytest.approx(1 / 10)  # the raw word "2"
    assert values["doc_frac_chars_top_2gram"] == pytest.approx(2 * 6 / 27)  # "the cat" twice
    assert values["doc_frac_chars_top_3gram"] == pytest.approx(9 / 27)  # all once: the first
    assert values["lines_uppercase_letter_fraction"] == pytest.approx((1 / 12 + 1 / 12 + 1 / 14)
                                                                      / 3)
    # normalised third line "a dog 2 dogs": 12 characters, one digit
    assert values["lines_numerical_chars_fraction"] == pytest.approx((1 / 12) / 3)
    assert values["lines_ending_with_terminal_punctuation_mark"] == 1.0
    assert values["missing_reason"] is None


def test_line_signals_skip_blank_lines_and_count_quotes_as_terminal():
    values = compute_signals('Line one.\n\n   \nLINE TWO\nHe said "yes"')
    assert values["lines_uppercase_letter_fraction"] == pytest.approx((1 / 9 + 7 / 8 + 1 / 13)
                                                                      / 3)
    assert values["lines_ending_with_terminal_punctuation_mark"] == pytest.approx(2 / 3)


def test_normalisation_drops_punctuation_lowercases_and_decomposes_accents():
    assert normalize("  Hello,   WORLD!\n(ok)  ") == "hello world ok"
    # NFD turns "é" into "e" + a combining accent: five characters
    assert compute_signals("café")["doc_mean_word_length"] == 5.0


def test_top_ngram_ties_go_to_the_first_ngram():
    # "a b", "b cc" and "cc dd" all occur twice; "a b" (2 characters) comes first and wins
    values = compute_signals("a b cc dd a b cc dd xxxxxxxxxx")
    total = 12 + 10
    assert values["doc_frac_chars_top_2gram"] == pytest.approx(2 * 2 / total)


def test_repetitive_text_scores_high_on_repetition_and_low_on_entropy():
    varied = compute_signals("Every word in this sentence differs from all of the others here.")
    repeated = compute_signals("buy now " * 50)
    assert repeated["doc_frac_chars_top_2gram"] > 0.9 > varied["doc_frac_chars_top_2gram"]
    assert repeated["doc_unigram_entropy"] == pytest.approx(math.log(2))
    assert repeated["doc_frac_unique_words"] < varied["doc_frac_unique_words"]


@pytest.mark.parametrize("text, reason", [
    ("", "no_words;no_lines"),
    ("  \n\t \n", "no_words;no_lines"),
    ("... !!!", "no_words"),
])
def test_documents_without_words_get_nulls_and_a_reason(text, reason):
    values = compute_signals(text)
    assert values["missing_reason"] == reason
    assert values["doc_word_count"] == 0
    for name in ("doc_mean_word_length", "doc_frac_unique_words", "doc_unigram_entropy",
                 "doc_frac_chars_top_2gram", "doc_frac_chars_top_3gram"):
        assert values[name] is None
    if reason == "no_words":  # punctuation only: raw words and a line exist
        assert values["doc_frac_no_alph_words"] == 1.0
        assert values["lines_ending_with_terminal_punctuation_mark"] == 1.0
        assert values["lines_numerical_chars_fraction"] == 0.0


def test_one_word_document_has_defined_values():
    values = compute_signals("word")
    assert values["doc_word_count"] == 1 and values["doc_num_sentences"] == 1
    assert values["doc_unigram_entropy"] == 0.0 and values["doc_frac_unique_words"] == 1.0
    assert values["doc_frac_chars_top_2gram"] == 0.0 == values["doc_frac_chars_top_3gram"]
    assert values["missing_reason"] is None


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
    assert values["missing_reason"] is None
    assert values["doc_word_count"] > 150_000
    assert values["lines_ending_with_terminal_punctuation_mark"] in (0.0, 1.0)


def test_annotator_writes_one_row_per_document_in_order_with_the_declared_types():
    docs = [Document(id=str(i), text=text, set_name="S")
            for i, text in enumerate([THREE_LINES, "...", "word"])]
    columns = SignalsAnnotator().annotate_batch(docs)
    table = pa.table(columns, schema=SIGNALS_SCHEMA)
    assert table.num_rows == 3
    assert table.column("doc_word_count").to_pylist() == [10, 0, 1]
    assert table.column("missing_reason").to_pylist() == [None, "no_words", None]
    assert SIGNALS_SCHEMA.names[:11] == list(SIGNAL_COLUMNS)
