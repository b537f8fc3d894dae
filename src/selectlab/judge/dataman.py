"""DataMan's pointwise protocol: 14 ratings from 1 to 5 and one of 15 domains, in one answer.

One prompt per document asks for a step-by-step analysis first and a fixed block at the end:
a `RATINGS` line, one `Name: score` line per criterion and a `Domain: <letter>` line. The parser
accepts a document only when every criterion has exactly one integer score in 1-5 and exactly
one domain is named; anything less is a parse failure that the runner re-queries up to
`max_attempts` times. The criteria and domains are the paper's; the wording is ours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from selectlab.judge.backends import Completion
from selectlab.judge.parse import OK, parse_rating_block
from selectlab.judge.protocol import (
    SYSTEM_PROMPT,
    Judged,
    Query,
    pointwise_queries,
    template_hash,
)

NAME = "dataman"
CRITERION = "all"  # one query rates every criterion at once
MARKER = "RATINGS"
DOMAIN_LABEL = "Domain"

# key -> (name in the prompt and answer, what a high score says of the text), paper's order.
CRITERIA: dict[str, tuple[str, str]] = {
    "accuracy": ("Accuracy",
                 "has few grammar, spelling or reference mistakes and is worded precisely"),
    "coherence": ("Coherence", "reads fluently and its ideas hang together logically"),
    "language_consistency": ("Language Consistency",
                             "stays in one language instead of switching between languages"),
    "semantic_density": ("Semantic Density",
                         "carries mostly useful information, with little filler or "
                         "redundancy"),
    "knowledge_novelty": ("Knowledge Novelty",
                          "offers new, current or insightful knowledge about its subject"),
    "topic_focus": ("Topic Focus", "keeps to its subject without drifting off it"),
    "creativity": ("Creativity", "shows creative, inventive expression"),
    "professionalism": ("Professionalism",
                        "uses the terminology of a field, correctly and with expert precision"),
    "style_consistency": ("Style Consistency",
                          "keeps a consistent style; any change of style is deliberate"),
    "grammatical_diversity": ("Grammatical Diversity",
                              "uses varied and correct sentence structures"),
    "structural_standardization": ("Structural Standardization",
                                   "follows a clear structure in a standard format"),
    "originality": ("Originality", "does not repeat itself or restate the same content"),
    "sensitivity": ("Sensitivity",
                    "treats sensitive subjects appropriately, with little "
                    "inappropriate content"),
    "overall_score": ("Overall Score", "is good when all of the above is taken together"),
}
DOMAINS: dict[str, str] = {
    "A": "Medicine", "B": "Finance", "C": "Law", "D": "Education", "E": "Technology",
    "F": "Entertainment", "G": "Mathematics", "H": "Coding", "I": "Government", "J": "Culture",
    "K": "Transportation", "L": "Retail E-commerce", "M": "Telecommunication",
    "N": "Agriculture", "O": "Other",
}
QUALITY_COLUMNS = sorted(key for key in CRITERIA if key != "overall_score")
LABEL_COLUMNS = ["doc_id", "text", "set_name", *QUALITY_COLUMNS, "overall_score", "domain"]


def _template() -> str:
    domains = "\n".join(f"[{letter}] {name}" for letter, name in DOMAINS.items())
    criteria = "\n".join(f"{i}. {name}: a high score means the text {meaning}."
                         for i, (name, meaning) in enumerate(CRITERIA.values(), start=1))
    answer_lines = "\n".join(f"{name}: <1-5>" for name, _ in CRITERIA.values())
    return (
        "Read the text below carefully and assess it. Score it on each of the fourteen "
        "criteria listed, with a whole number from 1 to 5 where a higher score is always "
        "better, and assign it to the one domain from the list that best fits its content. "
        "Think it through step by step before you score.\n\n"
        'Text:\n"""\n{text}\n"""\n\n'
        f"Domains:\n{domains}\n\n"
        f"Criteria (1 = worst, 5 = best):\n{criteria}\n\n"
        "Write your step-by-step analysis first. Then end your answer with the line "
        f"{MARKER}, followed by exactly one line per criterion and one line for the domain, "
        "in this form, and write nothing after them:\n"
        f"{MARKER}\n{answer_lines}\n{DOMAIN_LABEL}: <one letter from A to O>"
    )


TEMPLATE = _template()
TEMPLATE_HASH = template_hash(SYSTEM_PROMPT, TEMPLATE)


@dataclass(frozen=True)
class Settings:
    max_tokens: int = 1024
    temperature: float = 0.0


def build_queries(sample: pd.DataFrame, settings: Settings) -> list[Query]:
    return pointwise_queries(NAME, {CRITERION: TEMPLATE}, sample, settings.max_tokens,
                             settings.temperature)


def interpret(query: Query, completion: Completion) -> Judged:
    names = {name: key for key, (name, _) in CRITERIA.items()}
    parsed = parse_rating_block(completion.text, MARKER, names, 1, 5, DOMAIN_LABEL, DOMAINS)
    if not parsed.ok:
        return Judged.from_parsed(parsed)
    return Judged.from_parsed(parsed, value=float(parsed.value["overall_score"]))


def labels(judgments: pd.DataFrame, sample: pd.DataFrame) -> pd.DataFrame:
    """One row per fully parsed document; documents that failed stay only in the judgments."""
    ok = judgments[judgments["status"] == OK]
    rows = [{"doc_id": row.doc_id} | _answer(row.parsed) for row in ok.itertuples(index=False)]
    table = pd.DataFrame(rows, columns=["doc_id", *QUALITY_COLUMNS, "overall_score", "domain"])
    table = table.merge(sample[["doc_id", "text", "set_name"]], on="doc_id", how="left",
                        validate="one_to_one")
    for column in [*QUALITY_COLUMNS, "overall_score"]:
        table[column] = table[column].astype("int64")
    table["domain"] = table["domain"].astype("object")
    return table[LABEL_COLUMNS].sort_values("doc_id", ignore_index=True)


def _answer(parsed_json: str) -> dict:
    answer = json.loads(parsed_json)
    answer["domain"] = answer.pop(DOMAIN_LABEL.lower())
    return answer


def render_answer(scores: dict[str, int], domain: str, analysis: str) -> str:
    """An answer in exactly the requested format (used by the simulated judge)."""
    lines = [analysis.strip(), MARKER]
    lines += [f"{CRITERIA[key][0]}: {scores[key]}" for key in CRITERIA]
    lines.append(f"{DOMAIN_LABEL}: {domain}")
    return "\n".join(lines)
