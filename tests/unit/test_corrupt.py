"""Corruption operators: each one damages text, deterministically, more at higher severity."""

from __future__ import annotations

import difflib
import random
import re
import statistics
from itertools import pairwise

import pytest

from selectlab.corpus.corrupt import OPERATORS, CorruptionContext, corrupt, document_keywords
from selectlab.corpus.spam import SPAM_TEMPLATES, spam_line

PROSE = (
    "Lighthouses\n"
    "A lighthouse is a tower that carries a lamp to guide ships at night. Most of them stand on "
    "rocky headlands or small islands where the sea is dangerous. The keeper trimmed the wick, "
    "wound the clockwork and wrote the weather into a logbook every evening. Modern lights run "
    "on their own, so very few keepers remain today. Some towers have become museums, and "
    "visitors climb the spiral stairs to look at the lens. The lens gathers the light of a "
    "small lamp into a narrow beam that can be seen from far away. Each light flashes in its "
    "own pattern, which lets sailors tell one coast from another."
)
CODE = '''def merge_counts(left, right):
    """Add the counts of two dictionaries."""
    merged = dict(left)
    for key, value in right.items():
        merged[key] = merged.get(key, 0) + value
    return merged


class Tally:
    """Count things one at a time."""

    def __init__(self):
        self.counts = {}

    def add(self, item):
        self.counts[item] = self.counts.get(item, 0) + 1
        return self.counts[item]
'''
DONORS = (
    "Le phare se dresse au bout de la jetée. Sa lumière tourne toute la nuit. Les marins la "
    "cherchent quand la brume tombe sur le port.",
    "El faro está en una roca alta. Su luz gira durante la noche. Los pescadores vuelven a casa "
    "cuando la ven desde el mar.",
)
CONTEXT = CorruptionContext(donor_texts=DONORS)
REQUIRED = ("ocr_noise", "line_repetition", "ngram_repetition", "language_mixing",
            "spam_insertion", "truncation")


def damage(original: str, corrupted: str) -> float:
    """Share of the word sequence that is not common to both texts."""
    a, b = original.split(), corrupted.split()
    return 1 - difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def test_all_required_operators_are_registered():
    assert set(REQUIRED) <= set(OPERATORS)


@pytest.mark.parametrize("operator", REQUIRED)
@pytest.mark.parametrize("text", [PROSE, CODE, "Short note about ships."], ids=["prose", "code",
                                                                               "short"])
def test_operator_changes_text(operator, text):
    for seed in range(5):
        for severity in (0.05, 0.5, 1.0):
            out = corrupt(text, operator, severity, random.Random(seed), CONTEXT)
            assert out != text, (operator, seed, severity)
            assert out.strip()


@pytest.mark.parametrize("operator", REQUIRED)
def test_operator_is_deterministic_for_a_seed(operator):
    first = corrupt(PROSE, operator, 0.6, random.Random(11), CONTEXT)
    again = corrupt(PROSE, operator, 0.6, random.Random(11), CONTEXT)
    assert first == again
    outputs = {corrupt(PROSE, operator, 0.6, random.Random(seed), CONTEXT) for seed in range(8)}
    assert len(outputs) >= 2  # the seed matters


@pytest.mark.parametrize("operator", REQUIRED)
@pytest.mark.parametrize("text", [PROSE, CODE], ids=["prose", "code"])
def test_mean_damage_grows_with_severity(operator, text):
    severities = (0.1, 0.4, 0.7, 1.0)
    means = [statistics.mean(damage(text, corrupt(text, operator, s, random.Random(seed),
                                                  CONTEXT)) for seed in range(8))
             for s in severities]
    assert all(a < b for a, b in pairwise(means)), (operator, means)
    assert means[0] > 0


@pytest.mark.parametrize("operator,grows", [("truncation", False), ("line_repetition", True),
                                            ("ngram_repetition", True),
                                            ("spam_insertion", True)])
def test_damage_is_monotone_per_seed(operator, grows):
    # Same draws at every severity: the damaged parts at low severity are a subset of those at
    # high severity, so the length moves one way only.
    for seed in range(10):
        lengths = [len(corrupt(PROSE, operator, s, random.Random(seed), CONTEXT))
                   for s in (0.1, 0.3, 0.5, 0.7, 0.9, 1.0)]
        ordered = sorted(lengths) if grows else sorted(lengths, reverse=True)
        assert lengths == ordered, (operator, seed, lengths)


def test_truncation_cuts_mid_sentence_and_drops_most_text():
    out = corrupt(PROSE, "truncation", 1.0, random.Random(3), CONTEXT)
    assert PROSE.startswith(out)
    assert len(out) < 0.15 * len(out + PROSE)
    assert not out.rstrip().endswith((".", "!", "?"))
    assert len(corrupt(PROSE, "truncation", 0.2, random.Random(3), CONTEXT)) < 0.6 * len(PROSE)
    assert len(out.split()) >= 3


def test_line_repetition_repeats_lines_of_code():
    out = corrupt(CODE, "line_repetition", 0.8, random.Random(2), CONTEXT)
    lines = out.splitlines()
    repeats = sum(1 for a, b in pairwise(lines) if a == b and a.strip())
    assert repeats >= 3
    assert set(lines) == set(CODE.splitlines())  # nothing but original lines


def test_ngram_repetition_repeats_word_runs():
    out = corrupt(PROSE, "ngram_repetition", 1.0, random.Random(5), CONTEXT)
    assert re.search(r"\b(\w+(?: \w+){0,2}) \1\b", out)
    assert len(out.split()) > len(PROSE.split())
    assert set(out.split()) == set(PROSE.split())


def test_ocr_noise_garbles_characters_without_adding_words():
    out = corrupt(PROSE, "ocr_noise", 1.0, random.Random(1), CONTEXT)
    changed = 1 - difflib.SequenceMatcher(None, PROSE, out, autojunk=False).ratio()
    assert changed > 0.05
    assert abs(len(out) - len(PROSE)) < 0.2 * len(PROSE)
    low = corrupt(PROSE, "ocr_noise", 0.1, random.Random(1), CONTEXT)
    assert damage(PROSE, low) < damage(PROSE, out)


def test_language_mixing_interleaves_donor_sentences():
    out = corrupt(PROSE, "language_mixing", 0.6, random.Random(4), CONTEXT)
    donor_sentences = {s for d in DONORS for s in re.split(r"(?<=\.) ", d)}
    own_sentences = set(re.split(r"(?<=\.) |\n", PROSE))
    kept = [s for s in re.split(r"(?<=\.) |\n", out) if s in own_sentences]
    foreign = [s for s in re.split(r"(?<=\.) |\n", out) if s in donor_sentences]
    assert kept and foreign
    full = corrupt(PROSE, "language_mixing", 1.0, random.Random(4), CONTEXT)
    assert any(s in own_sentences for s in re.split(r"(?<=\.) |\n", full))  # never all replaced


def test_language_mixing_needs_donors():
    with pytest.raises(ValueError, match="donor"):
        corrupt(PROSE, "language_mixing", 0.5, random.Random(0), CorruptionContext())


def test_spam_insertion_adds_spam_lines_with_document_keywords():
    out = corrupt(PROSE, "spam_insertion", 1.0, random.Random(8), CONTEXT)
    keywords = document_keywords(PROSE)
    spam = {spam_line(i / 1000, keywords) for i in range(1000)}
    inserted = [line for line in out.splitlines() if line in spam]
    assert len(inserted) >= 3
    assert all(sentence in out for sentence in PROSE.split(". ")[1:-1])
    assert keywords[0] in ("lighthouse", "light", "keeper", "keepers", "lens")


def test_spam_templates_all_fill():
    keywords = ["alpha", "beta", "gamma", "delta"]
    lines = {spam_line((i + 0.5) / len(SPAM_TEMPLATES), keywords)
             for i in range(len(SPAM_TEMPLATES))}
    assert len(lines) == len(SPAM_TEMPLATES)
    assert not any("{" in line for line in lines)


@pytest.mark.parametrize("severity", [0, -0.1, 1.5, float("nan"), True, "0.5", None])
def test_bad_severity_raises(severity):
    with pytest.raises(ValueError, match="severity"):
        corrupt(PROSE, "ocr_noise", severity, random.Random(0), CONTEXT)


def test_unknown_operator_raises():
    with pytest.raises(ValueError, match="unknown corruption operator 'shuffle_words'"):
        corrupt(PROSE, "shuffle_words", 0.5, random.Random(0), CONTEXT)


def test_empty_text_raises():
    with pytest.raises(ValueError, match="empty"):
        corrupt("  \n", "truncation", 0.5, random.Random(0), CONTEXT)
