"""A WanjuanCC-style protocol: does a text carry advertising, and does it read fluently?

WanjuanCC filters web text with two BERT classifiers, one for advertisement and one for
fluency; Meta-rater takes both as quality scores. At full scale the workflow points at those
classifiers' local directories; at small scale two binary heads learn from this protocol. Each
question is asked separately, per document, and answered with a short reason and the fixed last
line `Final answer: yes` or `Final answer: no`; the label is 1 for yes. The questions are our
wording. A question that still fails to parse after the retries is null in the labels, without
dropping the document's other answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from selectlab.judge.backends import Completion
from selectlab.judge.parse import OK, Parsed, failure
from selectlab.judge.protocol import (
    Judged,
    Query,
    integer_labels,
    judged_number,
    pointwise_queries,
)

NAME = "wanjuan"
ANSWER_LINE = "Final answer"

# question -> (what is asked, what counts as yes, what does not)
QUESTIONS: dict[str, tuple[str, str, str]] = {
    "advertisement": (
        "Does the text contain advertising or promotional material?",
        "sales pitches, special offers, calls to buy, subscribe, click or download, sponsored "
        "content, lists of product keywords stuffed in for search engines, or site banners "
        "asking for sign-ups",
        "a neutral mention of a product or company as part of the subject matter",
    ),
    "fluency": (
        "Does the text read fluently?",
        "sentences that are complete and grammatical, words spelled correctly, and ideas that "
        "follow one another naturally, in one language, so that a reader can go through it "
        "without stumbling",
        "garbled characters, broken or run-together words, stuttering repetitions, sentences "
        "that stop in the middle, or switches into another language",
    ),
}
CRITERIA = tuple(QUESTIONS)
LABEL_COLUMNS = ["doc_id", "text", "set_name", *CRITERIA]

_ANSWER = re.compile(r"^\s*[*_#>\s]*final\s+answer[*_\s]*[:=]\s*[*_\s]*(?P<value>[A-Za-z]+)"
                     r"[*_.!\s]*$", re.IGNORECASE)


def question_template(criterion: str) -> str:
    question, yes, no = QUESTIONS[criterion]
    return (
        f"{question} Answer yes if it shows {yes}. This does not include {no}.\n\n"
        'Text:\n"""\n{text}\n"""\n\n'
        "Give your reason in at most 60 words. Then, as the very last line, write exactly "
        f"one of:\n{ANSWER_LINE}: yes\n{ANSWER_LINE}: no"
    )


def parse_yes_no(text: str) -> Parsed:
    """1 for `Final answer: yes`, 0 for `... no`, read from the last non-empty line only."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return failure("empty answer")
    match = _ANSWER.match(lines[-1])
    if match is None:
        return failure(f"last line is not '{ANSWER_LINE}: yes|no': {lines[-1].strip()[:80]!r}")
    word = match.group("value").lower()
    if word not in ("yes", "no"):
        return failure(f"{ANSWER_LINE}: {word!r} is neither yes nor no")
    return Parsed(int(word == "yes"), OK)


@dataclass(frozen=True)
class Settings:
    criteria: tuple[str, ...] = CRITERIA
    max_tokens: int = 160
    temperature: float = 0.0

    def __post_init__(self) -> None:
        unknown = sorted(set(self.criteria) - set(QUESTIONS))
        if unknown:
            raise ValueError(f"unknown WanjuanCC criteria {unknown}; known: {list(QUESTIONS)}")


def build_queries(sample: pd.DataFrame, settings: Settings) -> list[Query]:
    templates = {criterion: question_template(criterion) for criterion in settings.criteria}
    return pointwise_queries(NAME, templates, sample, settings.max_tokens, settings.temperature)


def interpret(query: Query, completion: Completion) -> Judged:
    return judged_number(parse_yes_no(completion.text))


def labels(judgments: pd.DataFrame, sample: pd.DataFrame) -> pd.DataFrame:
    """One row per document with at least one answer parsed; null where one failed."""
    return integer_labels(judgments, sample, CRITERIA)


def render_answer(criterion: str, yes: bool) -> str:
    """An answer in exactly the requested format (used by the simulated judge)."""
    question, shows, _ = QUESTIONS[criterion]
    reason = f"it shows {shows}" if yes else "it shows none of that"
    verdict = "yes" if yes else "no"
    return f"{question} {verdict.capitalize()}: {reason}.\n{ANSWER_LINE}: {verdict}"
