"""Meta-rater's PRRC protocol: professionalism, readability, reasoning, cleanliness.

One prompt per dimension and document. Each prompt is an additive rubric: five conditions, one
point each, so a score runs from 0 (none met) to 5; the judge explains briefly and must end with
the fixed line `Final score: N`. The four dimensions follow the Meta-rater paper's definitions;
the conditions are our wording of them. A dimension that still fails to parse after the retries
is null in the labels, without dropping the document's other dimensions.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from selectlab.judge.backends import Completion
from selectlab.judge.parse import parse_final_score
from selectlab.judge.protocol import (
    Judged,
    Query,
    integer_labels,
    judged_number,
    pointwise_queries,
)

NAME = "prrc"
SCORE_LINE = "Final score"
MAX_POINTS = 5

# dimension -> (what it measures, the five conditions that each earn one point)
RUBRICS: dict[str, tuple[str, tuple[str, ...]]] = {
    "professionalism": (
        "how much professional or specialist knowledge the text contains and demands",
        (
            "it carries some subject-specific information beyond everyday small talk",
            "it uses the vocabulary of a field correctly, at least at the level of a popular "
            "article or a hobbyist's guide",
            "following it takes background comparable to an introductory course or to "
            "hands-on practice in the field",
            "it is written at the level of professional material such as a textbook, a "
            "technical manual or reference documentation",
            "it reaches expert depth: research-level or advanced specialist content that only "
            "practitioners would fully follow",
        ),
    ),
    "readability": (
        "how easily a reader can understand the text",
        (
            "a reader can make out what the text is about at all",
            "most sentences are complete and understandable, with only occasional confusing "
            "passages",
            "sentence length and vocabulary suit the intended readers and the text flows "
            "without much effort",
            "it is well organised, with clear paragraphs, transitions and consistent terms, "
            "and easy to follow from start to end",
            "it is exceptionally clear: precise, concise and pleasant to read, with no "
            "needless complexity",
        ),
    ),
    "reasoning": (
        "how much logical reasoning and analysis the text contains",
        (
            "it makes at least one claim backed by a reason or an explanation",
            "it links several ideas through cause and effect, comparison or consequence",
            "it develops an argument or explanation over several connected steps",
            "it weighs evidence or alternatives, or deals with objections and special cases",
            "it shows deep multi-step reasoning that brings diverse information together into "
            "well-supported conclusions",
        ),
    ),
    "cleanliness": (
        "how clean and well-formed the text is as written text",
        (
            "it is mostly natural language (or code) rather than noise",
            "it is free of garbled characters, broken encoding and stray symbols",
            "it is free of boilerplate such as navigation menus, advertisements, links, "
            "cookie notices and share buttons",
            "it has no repeated lines or phrases and does not break off mid-sentence",
            "it is correctly formatted throughout, of a sensible length, with nothing "
            "irrelevant left in",
        ),
    ),
}
DIMENSIONS = tuple(RUBRICS)
LABEL_COLUMNS = ["doc_id", "text", "set_name", *DIMENSIONS]


def dimension_template(dimension: str) -> str:
    measure, conditions = RUBRICS[dimension]
    points = "\n".join(f"- Add 1 point if {condition}." for condition in conditions)
    return (
        f"Rate the text below for {dimension}: {measure}. Use this additive scale, starting "
        "from 0 points and adding one point for each condition the text meets:\n"
        f"{points}\n\n"
        'Text:\n"""\n{text}\n"""\n\n'
        "Explain briefly (at most 100 words) which conditions the text meets. Then, as the "
        f"very last line, write the total as a whole number from 0 to {MAX_POINTS} in "
        f"exactly this form:\n{SCORE_LINE}: <points>"
    )


@dataclass(frozen=True)
class Settings:
    dimensions: tuple[str, ...] = DIMENSIONS
    max_tokens: int = 256
    temperature: float = 0.0

    def __post_init__(self) -> None:
        unknown = sorted(set(self.dimensions) - set(RUBRICS))
        if unknown:
            raise ValueError(f"unknown PRRC dimensions {unknown}; known: {list(RUBRICS)}")


def build_queries(sample: pd.DataFrame, settings: Settings) -> list[Query]:
    templates = {dimension: dimension_template(dimension) for dimension in settings.dimensions}
    return pointwise_queries(NAME, templates, sample, settings.max_tokens, settings.temperature)


def interpret(query: Query, completion: Completion) -> Judged:
    return judged_number(parse_final_score(completion.text, 0, MAX_POINTS, SCORE_LINE))


def labels(judgments: pd.DataFrame, sample: pd.DataFrame) -> pd.DataFrame:
    """One row per sampled document with at least one dimension scored; null where one failed."""
    return integer_labels(judgments, sample, DIMENSIONS)


def render_answer(points: int, met: list[str]) -> str:
    """An answer in exactly the requested format (used by the simulated judge)."""
    reasons = "; ".join(met) if met else "none of the conditions is met"
    return f"The text meets these conditions: {reasons}.\n{SCORE_LINE}: {points}"
