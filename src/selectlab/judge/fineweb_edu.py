"""A FineWeb-Edu-style protocol: how useful is a web page for teaching, on an additive 0-5 scale.

Meta-rater uses FineWeb-Edu's public educational-value classifier as one of its 25 scores. At
full scale the workflow points at that classifier's local directory; at small scale a rater of
the same head type (one regression output, 0-5) learns from this protocol's judgments. One
prompt per document: five conditions worth one point each, a short justification, and the fixed
last line `Final score: N`. The conditions are our wording of the idea behind FineWeb-Edu's
annotation (school-level educational usefulness, coherence, little irrelevant content). A
document whose answer still fails to parse after the retries stays only in the judgments.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from selectlab.judge.backends import Completion
from selectlab.judge.parse import OK, parse_final_score
from selectlab.judge.protocol import (
    SYSTEM_PROMPT,
    Judged,
    Query,
    judged_number,
    pointwise_queries,
    template_hash,
)

NAME = "fineweb_edu"
CRITERION = "edu_score"
SCORE_LINE = "Final score"
MAX_POINTS = 5
LABEL_COLUMNS = ["doc_id", "text", "set_name", CRITERION]

# Each condition earns one point; together they run from "mentions something a pupil could
# learn" to "a lesson a teacher would hand out as it is".
CONDITIONS: tuple[str, ...] = (
    "it offers at least some information that could matter in a school or introductory "
    "course, even if it is buried among advertising, navigation text or unrelated material",
    "it deals with a subject taught at school or university, although it may be superficial, "
    "disorganised or mixed with content that teaches nothing",
    "it presents ideas of such a subject coherently enough that a learner could use it, much "
    "like an introductory passage of a textbook or a good tutorial",
    "it is clearly written for learning: focused, well organised, with explanations or "
    "examples a pupil could follow, and with little irrelevant content",
    "it is excellent teaching material: it explains its subject in depth and step by step, at "
    "a level suited to school pupils or beginners, with nothing that distracts from it",
)


def template() -> str:
    points = "\n".join(f"- Add 1 point if {condition}." for condition in CONDITIONS)
    return (
        "Judge how useful the web text below would be for teaching, from primary school up to "
        "an introductory university course. Start from 0 points and add one point for each of "
        "these conditions that the text meets:\n"
        f"{points}\n\n"
        'Text:\n"""\n{text}\n"""\n\n'
        "Explain in at most 100 words which conditions the text meets. Then, as the very last "
        f"line, write the total as a whole number from 0 to {MAX_POINTS} in exactly this "
        f"form:\n{SCORE_LINE}: <points>"
    )


TEMPLATE = template()
TEMPLATE_HASH = template_hash(SYSTEM_PROMPT, TEMPLATE)


@dataclass(frozen=True)
class Settings:
    max_tokens: int = 256
    temperature: float = 0.0


def build_queries(sample: pd.DataFrame, settings: Settings) -> list[Query]:
    return pointwise_queries(NAME, {CRITERION: TEMPLATE}, sample, settings.max_tokens,
                             settings.temperature)


def interpret(query: Query, completion: Completion) -> Judged:
    return judged_number(parse_final_score(completion.text, 0, MAX_POINTS, SCORE_LINE))


def labels(judgments: pd.DataFrame, sample: pd.DataFrame) -> pd.DataFrame:
    """One row per document whose answer parsed; the others stay only in the judgments."""
    ok = judgments[judgments["status"] == OK][["doc_id", "value"]]
    table = ok.rename(columns={"value": CRITERION}).merge(
        sample[["doc_id", "text", "set_name"]], on="doc_id", how="left", validate="one_to_one")
    table[CRITERION] = table[CRITERION].round().astype("int64")
    return table[LABEL_COLUMNS].sort_values("doc_id", ignore_index=True)


def render_answer(points: int) -> str:
    """An answer in exactly the requested format (used by the simulated judge)."""
    met = "; ".join(CONDITIONS[:points]) if points else "none of the conditions is met"
    return f"The text meets these conditions: {met}.\n{SCORE_LINE}: {points}"
