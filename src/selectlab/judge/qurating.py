"""QuRating's pairwise protocol: which of two excerpts shows more of a quality?

Each criterion is asked separately (the paper found joint questions worse), and every pair is
shown in both orders to cancel the judge's position bias. The probability that the second
excerpt wins comes from the log-probabilities of the label tokens "A" and "B" when the backend
reports them, else from the share of `samples_without_logprobs` sampled answers. Each judgment
row stores P(doc_b better) already undone for the order it was shown in, so a pair's label is
the plain mean over its orders; with both orders present, swapping doc_a and doc_b gives
exactly 1 - p. Confidence is the paper's margin |2p - 1|.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from selectlab.judge.backends import Completion, CompletionRequest, label_logprobs
from selectlab.judge.parse import (
    OK,
    parse_choice,
    probability_from_logprobs,
    probability_from_samples,
)
from selectlab.judge.protocol import (
    SYSTEM_PROMPT,
    Judged,
    Query,
    chat,
    request_meta,
    template_hash,
)

NAME = "qurating"
LABELS = ("A", "B")

# criterion -> (the question, what to look for); our wording of the paper's four criteria.
CRITERIA: dict[str, tuple[str, str]] = {
    "writing_style": (
        "is written in a more polished and pleasing style",
        "Look at word choice, sentence construction, rhythm and clarity: how well the prose is "
        "written, not what it is about.",
    ),
    "facts_and_trivia": (
        "contains more facts and trivia",
        "Prefer the excerpt with more specific, concrete information (names, dates, numbers, "
        "places, little-known details) over one that stays general or vague.",
    ),
    "educational_value": (
        "has more educational value",
        "Prefer the excerpt a student could learn more from: one that explains ideas clearly, "
        "reasons through a problem step by step, or asks and answers questions, over one that "
        "only mentions a subject.",
    ),
    "required_expertise": (
        "requires more expertise to understand",
        "Prefer the excerpt that assumes more specialised knowledge: technical vocabulary, "
        "advanced concepts or background that a general reader would not have.",
    ),
}

TEMPLATE = """\
Below are two excerpts, A and B, cut from longer texts; either one may start or stop in the \
middle of a sentence. Decide which excerpt {question}.

{description}

Judge this quality and nothing else. Do not let the length of the excerpts, the language they \
are written in or the order in which they are shown sway you. If the two seem close, still \
choose the one more likely to come out ahead.

Excerpt A:
\"\"\"
{text_a}
\"\"\"

Excerpt B:
\"\"\"
{text_b}
\"\"\"

Which excerpt {question}? Reply with one letter: A or B."""


@dataclass(frozen=True)
class Settings:
    criteria: tuple[str, ...]
    use_logprobs: bool  # the backend reports top log-probabilities
    top_logprobs: int = 20
    samples_without_logprobs: int = 5
    sample_temperature: float = 1.0

    def __post_init__(self) -> None:
        unknown = sorted(set(self.criteria) - set(CRITERIA))
        if unknown:
            raise ValueError(f"unknown QuRating criteria {unknown}; known: {sorted(CRITERIA)}")


def criterion_template(criterion: str) -> str:
    question, description = CRITERIA[criterion]
    return TEMPLATE.replace("{question}", question).replace("{description}", description)


def criterion_hash(criterion: str) -> str:
    return template_hash(SYSTEM_PROMPT, criterion_template(criterion))


def build_queries(sample: pd.DataFrame, settings: Settings) -> list[Query]:
    """Two queries (both orders) per pair and criterion, from `sample.parquet` rows."""
    queries = []
    for criterion in settings.criteria:
        template, digest = criterion_template(criterion), criterion_hash(criterion)
        for row in sample.itertuples(index=False):
            shown = ((row.text_a, row.text_b), (row.text_b, row.text_a))
            for order, (first, second) in enumerate(shown):
                user = template.format(text_a=first, text_b=second)
                meta = request_meta(NAME, criterion, doc_a=row.doc_a, doc_b=row.doc_b,
                                    order=order)
                if settings.use_logprobs:
                    request = CompletionRequest(chat(user), max_tokens=1, temperature=0.0,
                                                top_logprobs=settings.top_logprobs, meta=meta)
                else:
                    request = CompletionRequest(chat(user), max_tokens=4,
                                                temperature=settings.sample_temperature,
                                                n=settings.samples_without_logprobs, meta=meta)
                queries.append(Query(NAME, criterion, digest, request, doc_a=row.doc_a,
                                     doc_b=row.doc_b, order=order))
    return queries


def interpret(query: Query, completion: Completion) -> Judged:
    """P(doc_b better) as this order's answer implies it."""
    if query.request.top_logprobs > 0:
        parsed = probability_from_logprobs(label_logprobs(completion.top_logprobs, LABELS))
        source = "logprobs"
    else:
        parsed = probability_from_samples(completion.texts)
        source = "samples"
    if not parsed.ok:
        return Judged.from_parsed(parsed)
    p_second_shown = float(parsed.value)
    p_b_better = p_second_shown if query.order == 0 else 1.0 - p_second_shown
    choice = parse_choice(completion.text)
    answer = {"p_second_shown": p_second_shown, "p_b_better": p_b_better, "from": source,
              "choice": choice.value if choice.ok else None}
    return Judged(OK, answer, p_b_better, abs(2.0 * p_b_better - 1.0))


def pair_probability(p_b_better_by_order: list[float]) -> float:
    """A pair's label: the mean over the orders it was judged in."""
    if not p_b_better_by_order:
        raise ValueError("a pair needs at least one judged order")
    return sum(p_b_better_by_order) / len(p_b_better_by_order)


LABEL_COLUMNS = ["criterion", "doc_a", "doc_b", "text_a", "text_b", "p_b_better", "n_orders"]


def labels(judgments: pd.DataFrame, sample: pd.DataFrame) -> pd.DataFrame:
    """One row per (criterion, pair) with at least one successfully judged order."""
    ok = judgments[judgments["status"] == OK]
    if ok.empty:
        return pd.DataFrame({c: pd.Series(dtype=_dtype(c)) for c in LABEL_COLUMNS})
    grouped = ok.groupby(["criterion", "doc_a", "doc_b"], sort=False)["value"]
    table = grouped.agg(p_b_better=lambda v: pair_probability(list(v)), n_orders="count")
    table = table.reset_index().merge(sample[["doc_a", "doc_b", "text_a", "text_b"]],
                                      on=["doc_a", "doc_b"], how="left", validate="many_to_one")
    table["n_orders"] = table["n_orders"].astype("int64")
    return table[LABEL_COLUMNS].sort_values(["criterion", "doc_a", "doc_b"], ignore_index=True)


def _dtype(column: str) -> str:
    return {"p_b_better": "float64", "n_orders": "int64"}.get(column, "object")


def render_choice(p_second_shown: float) -> str:
    """The answer text a greedy judge gives for this probability (used by the simulated judge)."""
    return LABELS[1] if p_second_shown > 0.5 else LABELS[0]
