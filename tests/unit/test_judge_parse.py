"""Protocol parsers against well-formed and adversarial judge answers."""

from __future__ import annotations

import math

import pytest

from selectlab.judge import dataman, prrc
from selectlab.judge.backends import label_logprobs
from selectlab.judge.parse import (
    OK,
    PARSE_ERROR,
    parse_choice,
    parse_final_score,
    probability_from_logprobs,
    probability_from_samples,
)
from selectlab.judge.protocol import Query

NAMES = {name: key for key, (name, _) in dataman.CRITERIA.items()}
GOOD_SCORES = {key: 1 + i % 5 for i, key in enumerate(dataman.CRITERIA)}


def read_dataman(text: str):
    from selectlab.judge.parse import parse_rating_block

    return parse_rating_block(text, dataman.MARKER, NAMES, 1, 5, dataman.DOMAIN_LABEL,
                              dataman.DOMAINS)


def good_dataman(domain: str = "H") -> str:
    return dataman.render_answer(GOOD_SCORES, domain, "Step 1: it is code. Accuracy: 2 so far.")


@pytest.mark.parametrize("text, label", [
    ("A", "A"), ("B", "B"), (" B.", "B"), ("**A**", "A"), ("Answer: B", "B"),
    ("Excerpt A is better written.", "A"), ("(B)", "B"), ("B\nbecause it explains more", "B"),
])
def test_choice_accepts_a_leading_label(text, label):
    assert parse_choice(text).value == label
    assert parse_choice(text).status == OK


@pytest.mark.parametrize("text", ["", "   ", "A good question; both are fine.", "Both.",
                                  "C", "I think the second one", "Bravo"])
def test_choice_rejects_anything_else(text):
    parsed = parse_choice(text)
    assert parsed.status == PARSE_ERROR and parsed.value is None and parsed.error


def test_probability_from_logprobs_renormalises_over_the_two_labels():
    parsed = probability_from_logprobs({"A": math.log(0.2), "B": math.log(0.6)})
    assert parsed.value == pytest.approx(0.75)
    assert probability_from_logprobs({"A": -0.1}).value == 0.0
    assert probability_from_logprobs({"B": -3.0}).value == 1.0
    failed = probability_from_logprobs({"The": -0.1, "Both": -1.0})
    assert failed.status == PARSE_ERROR and "neither" in failed.error


def test_label_logprobs_adds_spellings_of_one_label():
    found = label_logprobs({" A": math.log(0.3), "A": math.log(0.1), "\u0120B": math.log(0.2),
                            "Ab": -0.1, "B": float("nan")}, ("A", "B"))
    assert math.exp(found["A"]) == pytest.approx(0.4)
    assert math.exp(found["B"]) == pytest.approx(0.2)
    assert label_logprobs(None, ("A", "B")) == {}


def test_probability_from_samples_counts_parseable_answers_only():
    assert probability_from_samples(["B", "A", "B", "maybe", "B."]).value == pytest.approx(0.75)
    failed = probability_from_samples(["hmm", ""])
    assert failed.status == PARSE_ERROR and "none of 2" in failed.error


def test_dataman_reads_every_criterion_and_the_domain():
    parsed = read_dataman(good_dataman("L"))
    assert parsed.status == OK
    assert {k: parsed.value[k] for k in dataman.CRITERIA} == GOOD_SCORES
    assert parsed.value["domain"] == "L"  # "Retail E-commerce" must not count as a second "E"


@pytest.mark.parametrize("domain_line, letter", [
    ("Domain: [G] Mathematics", "G"), ("Domain: Coding", "H"), ("**Domain**: M", "M"),
    ("Domain: L (Retail E-commerce)", "L"),
])
def test_dataman_domain_spellings(domain_line, letter):
    text = good_dataman().replace("Domain: H", domain_line)
    assert read_dataman(text).value["domain"] == letter


def test_dataman_tolerates_a_closing_remark_and_markdown():
    text = good_dataman().replace("Accuracy:", "- **Accuracy**:") + "\nHope this helps!"
    assert read_dataman(text).status == OK


@pytest.mark.parametrize("mutate, reason", [
    (lambda t: t.replace("Coherence: 2\n", ""), "missing: Coherence"),
    (lambda t: t.replace("Domain: H", "Domain: H, E"), "2 domains"),
    (lambda t: t + "\nDomain: E", "2 Domain lines"),
    (lambda t: t.replace("Domain: H\n", "").replace("\nDomain: H", ""), "no Domain line"),
    (lambda t: t.replace("Domain: H", "Domain: Z"), "no recognised domain"),
    (lambda t: t.replace("Accuracy: 1", "Accuracy: 7"), "outside 1-5"),
    (lambda t: t.replace("Accuracy: 1", "Accuracy: 0"), "outside 1-5"),
    (lambda t: t.replace("Accuracy: 1", "Accuracy: 3.5"), "not an integer"),
    (lambda t: t.replace("Accuracy: 1", "Accuracy: high"), "not an integer"),
    (lambda t: t + "\nTopic Focus: 4", "Topic Focus given twice"),
    (lambda t: t.replace("RATINGS", "Here are my scores"), "no 'RATINGS' line"),
    (lambda t: "", "empty answer"),
])
def test_dataman_failures_say_what_is_wrong(mutate, reason):
    parsed = read_dataman(mutate(good_dataman()))
    assert parsed.status == PARSE_ERROR and parsed.value is None
    assert reason in parsed.error


def test_dataman_lists_every_problem_at_once():
    text = good_dataman().replace("Coherence: 2\n", "").replace("Accuracy: 1", "Accuracy: 9")
    error = read_dataman(text).error
    assert "missing: Coherence" in error and "outside 1-5" in error


@pytest.mark.parametrize("text, value", [
    ("It meets two conditions.\nFinal score: 2", 2),
    ("Reasoning...\n\n**Final score: 5**\n", 5),
    ("final score: 0", 0),
    ("Final Score: 3/5", 3),
])
def test_final_score_line(text, value):
    parsed = parse_final_score(text, 0, 5)
    assert parsed.status == OK and parsed.value == value


@pytest.mark.parametrize("text, reason", [
    ("", "empty answer"),
    ("The text is clean.", "no score line"),
    ("Final score: 4\nI hope this helps.", "not last"),
    ("Final score: 6", "outside 0-5"),
    ("Final score: -1", "outside 0-5"),
    ("Final score: four", "not an integer"),
    ("Final score: 2.5", "not an integer"),
])
def test_final_score_failures(text, reason):
    parsed = parse_final_score(text, 0, 5)
    assert parsed.status == PARSE_ERROR and reason in parsed.error


def test_protocol_interpreters_turn_failures_into_records():
    from selectlab.judge.backends import Completion, CompletionRequest

    query = Query("prrc", "readability", "h", CompletionRequest((), 8), doc_id="d1")
    judged = prrc.interpret(query, Completion(["no score here"]))
    assert judged.status == PARSE_ERROR and judged.value is None and judged.parsed_json() is None
    judged = prrc.interpret(query, Completion(["ok\nFinal score: 3"]))
    assert judged.status == OK and judged.value == 3.0 and judged.parsed_json() == "3"
    query = Query("dataman", "all", "h", CompletionRequest((), 8), doc_id="d1")
    assert dataman.interpret(query, Completion([""])).status == PARSE_ERROR
    assert dataman.interpret(query, Completion([good_dataman()])).value == float(
        GOOD_SCORES["overall_score"])
